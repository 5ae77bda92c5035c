// Experts inside pipeline stages: Inputs/two-mlp-blocks.mlir's three
// blocks rewritten into 4 experts each and cut into 2 stages (blocks h.0
// and h.1 on stage 0, h.2 on stage 1). On 4 ranks with ep-size 2 each
// stage's 2 data-parallel ranks are its expert group: a stage holds 2 of
// each of its layers' 4 experts, and its all-to-alls run over the expert
// group inside each micro-batch. Stage 0's l_aux (the sum of its two
// layers') reaches the loss on stage 1 as a scalar crossing the cut, and
// l_aux is averaged over the data group, not the world, whose ranks on the
// other stage hold other layers.
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=4 pipeline-parallel=2" --dsc-moe="experts=4 ep-size=2" --dsc-pipeline-parallel="stage=0 micro-batches=2" | FileCheck %s --check-prefix=STAGE0
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=4 pipeline-parallel=2" --dsc-moe="experts=4 ep-size=2" --dsc-pipeline-parallel="stage=1 micro-batches=2" | FileCheck %s --check-prefix=STAGE1
// The report of 8 ranks (4 per stage, expert groups of 2, expert-data
// groups of 2) under ZeRO-2: ZeRO partitions the experts' states over the
// expert-data group and the others' over the stage's data group.
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --world-size=8 --pipeline-parallel=2 --pipeline-stage=1 --moe-experts=4 --moe-ep-size=2 --grad-accum=2 --optimizer=adamw --zero-stage=2 --dsc-report=memory -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// The expert groups are made of one stage's data-parallel ranks.
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --world-size=4 --pipeline-parallel=2 --moe-experts=4 --moe-ep-size=4 2>&1 | FileCheck %s --check-prefix=WIDE

// STAGE0: module attributes {dsc.expert_parallel_size = 2 : i64, {{.*}}dsc.pipeline_stage = 0
// STAGE0: dsc.state parameter @h.0.mlp.experts.c_fc.weight {{{.*}}partition_group = 1 : i32, partition_of = array<i64: 4, 16, 4>} : tensor<2x16x4xf32>
// STAGE0-NOT: h.2.mlp
// STAGE0-LABEL: func.func @forward
// STAGE0: dsc.all_to_all %{{.*}} over expert {dsc.micro_batch = 0 : i64}
// STAGE0: %[[AUX:.*]] = dsc.add %{{.*}}, %{{.*}} {dsc.micro_batch = 0 : i64} : tensor<f32>, tensor<f32>
// STAGE0: dsc.pipeline_send %[[AUX]] to next micro_batch 0 : tensor<f32>
// STAGE0: dsc.all_to_all %{{.*}} over expert {dsc.micro_batch = 1 : i64}
// STAGE0-NOT: over world
// STAGE0: return

// STAGE1: dsc.state parameter @h.2.mlp.experts.gate_proj.weight {{{.*}}partition_group = 1 : i32, partition_of = array<i64: 4, 16, 4>} : tensor<2x16x4xf32>
// STAGE1-LABEL: func.func @forward
// STAGE1: %[[AUX0:.*]] = dsc.pipeline_recv from previous micro_batch 0 : tensor<f32>
// STAGE1: dsc.all_to_all %{{.*}} over expert {dsc.micro_batch = 0 : i64}
// STAGE1: %[[AUX:.*]] = dsc.add %[[AUX0]], %{{.*}} {dsc.micro_batch = 0 : i64} : tensor<f32>, tensor<f32>
// STAGE1: %[[SUM:.*]] = dsc.all_reduce %[[AUX]] over data {dsc.micro_batch = 0 : i64}
// STAGE1: %[[MEAN:.*]] = dsc.div %[[SUM]], %{{.*}} {dsc.micro_batch = 0 : i64}
// STAGE1: %[[TERM:.*]] = dsc.mul %{{.*}}, %[[MEAN]] {dsc.micro_batch = 0 : i64}
// STAGE1: dsc.add %{{.*}}, %[[TERM]] {dsc.micro_batch = 0 : i64}
// STAGE1-NOT: over world
// STAGE1: return

// REPORT: dsc report: world size 8 (mesh: tensor 1 x data 4 x pipeline 2, tensor innermost, then data: rank r at data r % 4, stage r / 4), experts split over groups of 2 data-parallel ranks of a stage (expert index: data index % 2), pipeline stage 1 of 2
// REPORT: of experts {{.*}} (this rank's experts: split over its expert group)
// REPORT-NEXT: partitioned {{.*}} (by ZeRO, over the expert_data group of 2 rank(s))
// REPORT-NEXT: of the others
// REPORT-NEXT: partitioned {{.*}} (by ZeRO, over data groups of 4 ranks)

// WIDE: error: --dsc-moe: ep-size 4 times tensor-parallel 1 times pipeline-parallel 2 must divide the world size 4 (expert groups are made of data-parallel replicas of one pipeline stage)
