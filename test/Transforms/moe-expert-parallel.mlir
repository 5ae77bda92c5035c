// Expert parallelism in --dsc-moe (ep-size = P): each block's experts split
// over the P ranks of an expert group, two all-to-alls per layer forward
// (and, after autodiff, two backward), the experts' gradients summed over
// their expert-data group, norms and overflow checks over the expert group.
// Inputs/two-mlp-blocks.mlir: 8 tokens of width 4 per rank; 4 experts give
// capacity 4 (min-capacity), so each rank dispatches [4, 4, 4] and computes
// its 2 experts on [2, 2 * 4, 4].
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=4" --dsc-moe="experts=4 ep-size=2" | FileCheck %s --check-prefix=EP
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=4" --dsc-moe="experts=4 ep-size=2" --dsc-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=2" --dsc-moe="experts=4 ep-size=2" --dsc-autodiff | FileCheck %s --check-prefix=ALLEP
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --world-size=4 --moe-experts=4 --moe-ep-size=2 --grad-clip=1.0 --loss-scaling | FileCheck %s --check-prefix=CLIP
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --world-size=4 --moe-experts=4 --moe-ep-size=2 --optimizer=adamw --dsc-report=memory,comm -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --world-size=4 --moe-experts=4 --moe-ep-size=2 --optimizer=adamw --zero-stage=3 --zero-persistence-threshold=0 | FileCheck %s --check-prefix=ZERO3
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --world-size=4 --moe-experts=4 --moe-ep-size=2 --optimizer=adamw --zero-stage=3 --zero-persistence-threshold=0 --dsc-report=memory,comm -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT3

// EP: module attributes {dsc.expert_parallel_size = 2 : i64, dsc.world_size = 4 : i64}
// The gate is replicated; the experts hold 2 of 4 each.
// EP: dsc.state parameter @h.0.mlp.gate.weight {{.*}} : tensor<4x4xf32>
// EP-NOT: partition
// EP: dsc.state parameter @h.0.mlp.experts.c_fc.weight {init_from = "h.0.mlp.c_fc.weight", partition_group = 1 : i32, partition_of = array<i64: 4, 16, 4>} : tensor<2x16x4xf32>
// EP: dsc.state parameter @h.0.mlp.experts.c_fc.bias {{.*}}partition_of = array<i64: 4, 16>} : tensor<2x16xf32>
// EP-LABEL: func.func
// EP: %[[D:.*]] = dsc.moe_dispatch {{.*}} -> tensor<4x4x4xf32>
// EP: %[[IN:.*]] = dsc.all_to_all %[[D]] over expert : tensor<4x4x4xf32>
// EP: %[[BLOCKS:.*]] = dsc.reshape %[[IN]] : tensor<4x4x4xf32> -> tensor<2x2x4x4xf32>
// EP: %[[BYEXPERT:.*]] = dsc.permute %[[BLOCKS]], [1, 0, 2, 3] : tensor<2x2x4x4xf32>
// EP: %[[LOCAL:.*]] = dsc.reshape %[[BYEXPERT]] : tensor<2x2x4x4xf32> -> tensor<2x8x4xf32>
// EP: dsc.matmul %[[LOCAL]], %{{.*}} transpose_rhs : tensor<2x8x4xf32>, tensor<2x16x4xf32>
// EP: dsc.gelu tanh %{{.*}} : tensor<2x8x16xf32>
// EP: %[[Y:.*]] = dsc.matmul %{{.*}}, %{{.*}} transpose_rhs : tensor<2x8x16xf32>, tensor<2x4x16xf32>
// EP: dsc.permute %{{.*}}, [1, 0, 2, 3] : tensor<2x2x4x4xf32>
// EP: %[[BACK:.*]] = dsc.reshape %{{.*}} : tensor<2x2x4x4xf32> -> tensor<4x4x4xf32>
// EP: %[[OUT:.*]] = dsc.all_to_all %[[BACK]] over expert : tensor<4x4x4xf32>
// EP: dsc.moe_combine %[[OUT]]
// Three replaced blocks, two exchanges each in the forward.
// EP-COUNT-4: dsc.all_to_all
// EP-NOT: dsc.all_to_all

// Forward 2 and backward 2 exchanges per block, but for the first block's
// dispatch, whose input (the graph's) needs no cotangent: 11. The gate's
// gradient summed over the world, the experts' over their expert-data
// group (2 replicas).
// GRAD-COUNT-11: dsc.all_to_all
// GRAD-NOT: dsc.all_to_all
// GRAD: dsc.all_reduce %{{.*}} : tensor<4x4xf32>
// GRAD: dsc.all_reduce %{{.*}} over expert_data : tensor<2x16x4xf32>
// GRAD: dsc.all_reduce %{{.*}} over expert_data : tensor<2x16xf32>

// With P = W every rank holds its experts alone: no expert-data sum.
// ALLEP-NOT: over expert_data
// ALLEP: dsc.all_reduce %{{.*}} : tensor<4x4xf32>
// ALLEP-NOT: over expert_data

// The norm for clipping and the overflow check add the experts' sums of
// squares over the expert group, so every rank clips and skips alike.
// CLIP: %[[FINITE:.*]] = dsc.sum_squares({{.*}} : tensor<2x16x4xf32>, {{.*}}) scale
// CLIP: dsc.all_reduce %[[FINITE]] over expert : tensor<f32>
// CLIP: %[[NORM:.*]] = dsc.sum_squares({{.*}} : tensor<2x16x4xf32>, {{.*}}) scale
// CLIP: %[[SUM:.*]] = dsc.all_reduce %[[NORM]] over expert : tensor<f32>
// CLIP: %[[TOTAL:.*]] = dsc.add %{{.*}}, %[[SUM]]
// CLIP: dsc.sqrt %[[TOTAL]]

// The report: this rank's experts' states apart (976 local expert elements
// of 4 bytes: parameters, gradients and two moments, 4 x 3,904 bytes); the
// exchanges and expert-data sums apart from the world's sums, with bytes
// from their group's size (an all-to-all over 2 ranks sends half its
// buffer: 128 of 256 bytes per call, 11 calls).
// REPORT: model states
// REPORT-NEXT: of experts 15,616 0.00 GB (this rank's experts: split over its expert group)
// REPORT: all_to_all[expert] f32 11 1,408 1,408 1,408
// REPORT: all_reduce f32 3
// REPORT: all_reduce[expert_data] f32 3 3,904 3,904 3,904

// ZeRO stage 3 with expert parallelism: the gate (and every other
// non-expert state) is partitioned over the 4 ranks and gathered for use;
// each rank's experts over its expert-data group of 2 (zero-experts.mlir
// has the details), updated by a multi-tensor update of their own, their
// gradients reduce-scattered over the expert-data group.
// ZERO3: dsc.state parameter @h.0.mlp.gate.weight {{.*}}partition_of = array<i64: 4, 4>} : tensor<4xf32>
// ZERO3: dsc.state parameter @h.0.mlp.experts.c_fc.weight {init_from = "h.0.mlp.c_fc.weight", partition_group = 2 : i32, partition_of = array<i64: 4, 16, 4>} : tensor<64xf32>
// ZERO3: dsc.state optimizer @h.0.mlp.experts.c_fc.weight.exp_avg {partition_group = 2 : i32, partition_of = array<i64: 4, 16, 4>} : tensor<64xf32>
// ZERO3: dsc.all_gather %{{.*}} over expert_data
// ZERO3-NOT: dsc.all_reduce %{{.*}} over expert_data
// ZERO3: dsc.reduce_scatter %{{.*}} over expert_data
// ZERO3: dsc.adam_update params({{.*}} : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
// ZERO3: dsc.adam_update params({{.*}} : tensor<64xf32>, tensor<16xf32>,

// The report of stage 3: the experts' states halved by their expert-data
// group of 2 (488 of the rank's 976 expert elements, 4 bytes, 4 states:
// 7,808 bytes), the others' over the world (all but the 4-byte step); the
// experts' gathers and reduce-scatters over the expert-data group, no
// all-reduce over it.
// REPORT3: model states
// REPORT3-NEXT: of experts 7,808 0.00 GB (this rank's experts: split over its expert group)
// REPORT3-NEXT: partitioned 7,808 0.00 GB (by ZeRO, over the expert_data group of 2 rank(s))
// REPORT3-NEXT: of the others 196 0.00 GB
// REPORT3-NEXT: partitioned 192 0.00 GB (by ZeRO, over the world of 4 ranks)
// REPORT3: stage 3 partitions 3 of 3 trained parameters
// REPORT3-NEXT: and of the 11 experts' parameters (this rank's experts), 11 partitioned over the expert_data group; 0 stay whole (0 under the persistence threshold)
// REPORT3: all_gather[expert_data] f32 5 3,488 3,488 3,488
// REPORT3-NOT: all_reduce[expert_data]
// REPORT3: reduce_scatter[expert_data] f32 3 1,952 1,952 1,952
