// The stage cut of a three-block model (tied embedding and head) into two
// pipeline stages, two micro-batches: each stage keeps its own blocks and
// states, repeats its ops per micro-batch, and the residual stream crosses
// the cut as a send and a receive.
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="stage=0 micro-batches=2 print" 2>&1 | FileCheck %s --check-prefixes=REPORT,STAGE0
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="stage=1 micro-batches=2" | FileCheck %s --check-prefix=STAGE1
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=3 pipeline-parallel=3" --dsc-pipeline-parallel="stage=1" | FileCheck %s --check-prefix=MIDDLE
// The middle stage holds one block: the module records the model's block
// prefixes, so that activation checkpointing still finds h.1 as a block.
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=3 pipeline-parallel=3" --dsc-pipeline-parallel="stage=1" --dsc-autodiff --dsc-checkpoint-activations="print" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MIDDLE-CKPT
// MIDDLE-CKPT: dsc-checkpoint-activations: @forward micro-batch 0: recomputing 1 of 1 blocks h.1;
// A buffer the graph never reads (GPT-2's registered attention mask) stays
// on stage 0 alone, so that the stages' states together are the model's.
// RUN: sed '/^dsc.state parameter @wpe/i dsc.state buffer @"h.0.attn.bias" : tensor<8x8xf32>' %S/Inputs/three-blocks.mlir | dsc-opt --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="stage=0 micro-batches=2" | FileCheck %s --check-prefix=UNREAD0
// RUN: sed '/^dsc.state parameter @wpe/i dsc.state buffer @"h.0.attn.bias" : tensor<8x8xf32>' %S/Inputs/three-blocks.mlir | dsc-opt --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="stage=1 micro-batches=2" | FileCheck %s --check-prefix=UNREAD1

// Every block costs the same FLOPs; the head's 2048 make the last stage's
// 6144 the largest when it takes one block (the cut 2 + 1: 8192 + 6144).
// REPORT: dsc-pipeline-parallel: @forward: 3 blocks in 2 stages, balanced by matrix-product FLOPs per micro-batch
// REPORT: h.0 4096 FLOPs 272 B parameters 4608 B activations
// REPORT: (after the blocks) 2048 FLOPs
// REPORT: stage 0: blocks h.0..h.1 8192 FLOPs {{.*}} sends 256 B per micro-batch
// The last stage holds the tied embedding too (256 B).
// REPORT: stage 1: blocks h.2..h.2 6144 FLOPs 544 B parameters

// STAGE0: module attributes {dsc.pipeline_micro_batches = 2 : i64, dsc.pipeline_parallel_size = 2 : i64, dsc.pipeline_stage = 0 : i64, dsc.repeated_blocks = ["h"], dsc.world_size = 2 : i64}
// STAGE0: dsc.state parameter @wte {dsc.pipeline_tied}
// STAGE0: dsc.state parameter @h.1.mlp.weight
// STAGE0-NOT: h.2
// STAGE0-NOT: ln_f
// STAGE0: func.func @forward(%[[TOKENS:.*]]: tensor<4x8xi64> {dsc.input = "tokens"}, %{{.*}}: tensor<4x8xi64> {dsc.input = "targets"})
// The position embeddings depend on no micro-batch: computed once.
// STAGE0: %[[POS:.*]] = dsc.embedding %{{.*}}, %{{.*}} : tensor<8x4xf32>, tensor<8xi64>
// STAGE0: %[[T0:.*]] = dsc.slice %[[TOKENS]], dim = 0, start = 0, end = 2, step = 1 {dsc.micro_batch = 0 : i64}
// STAGE0: dsc.add %{{.*}}, %[[POS]] {dsc.micro_batch = 0 : i64}
// STAGE0: %[[Z0:.*]] = dsc.pipeline_send %{{.*}} to next micro_batch 0 : tensor<2x8x4xf32>
// STAGE0: dsc.slice %[[TOKENS]], dim = 0, start = 2, end = 4, step = 1 {dsc.micro_batch = 1 : i64}
// STAGE0: dsc.add %{{.*}}, %[[POS]] {dsc.micro_batch = 1 : i64}
// STAGE0: %[[Z1:.*]] = dsc.pipeline_send %{{.*}} to next micro_batch 1 : tensor<2x8x4xf32>
// STAGE0: %[[LOCAL:.*]] = dsc.add %[[Z0]], %[[Z1]] : tensor<f32>, tensor<f32>
// STAGE0: %[[TOTAL:.*]] = dsc.all_reduce %[[LOCAL]] over pipeline : tensor<f32>
// STAGE0: return %[[TOTAL]]

// STAGE1: dsc.state parameter @wte {dsc.pipeline_tied}
// STAGE1-NOT: h.0
// STAGE1-NOT: h.1
// STAGE1: dsc.state parameter @h.2.ln.weight
// STAGE1: dsc.state parameter @ln_f.weight
// STAGE1: func.func @forward(%{{.*}}: tensor<4x8xi64> {dsc.input = "tokens"}, %[[TARGETS:.*]]: tensor<4x8xi64> {dsc.input = "targets"})
// STAGE1: %[[WTE:.*]] = dsc.load @wte
// STAGE1: %[[Y0:.*]] = dsc.slice %[[TARGETS]], dim = 0, start = 0, end = 2, step = 1 {dsc.micro_batch = 0 : i64}
// STAGE1: %[[X0:.*]] = dsc.pipeline_recv from previous micro_batch 0 : tensor<2x8x4xf32>
// STAGE1: dsc.layer_norm %[[X0]]
// STAGE1: dsc.linear %{{.*}}, %[[WTE]] {dsc.micro_batch = 0 : i64}
// STAGE1: %[[L0:.*]] = dsc.cross_entropy %{{.*}}, %[[Y0]] {dsc.micro_batch = 0 : i64}
// STAGE1: dsc.pipeline_recv from previous micro_batch 1
// STAGE1: %[[L1:.*]] = dsc.cross_entropy {{.*}} {dsc.micro_batch = 1 : i64}
// The mean of the micro-batches' losses, summed with the other stages' zeros.
// STAGE1: %[[SUM:.*]] = dsc.add %[[L0]], %[[L1]]
// STAGE1: %[[HALF:.*]] = dsc.constant dense<5.000000e-01>
// STAGE1: %[[MEAN:.*]] = dsc.mul %[[SUM]], %[[HALF]]
// STAGE1: dsc.all_reduce %[[MEAN]] over pipeline

// A middle stage (three stages of three blocks) holds its block's states,
// reads no input, receives and sends; its loss is its send's zero.
// MIDDLE: dsc.pipeline_stage = 1 : i64, dsc.repeated_blocks = ["h"]
// MIDDLE-NOT: h.0
// MIDDLE-NOT: h.2
// MIDDLE: %[[X:.*]] = dsc.pipeline_recv from previous micro_batch 0 : tensor<8x4xf32>
// MIDDLE-NOT: %arg0
// MIDDLE: dsc.linear %[[X]]
// MIDDLE: %[[Z:.*]] = dsc.pipeline_send %{{.*}} to next micro_batch 0 : tensor<8x4xf32>
// MIDDLE: dsc.all_reduce %[[Z]] over pipeline

// UNREAD0: dsc.state buffer @h.0.attn.bias : tensor<8x8xf32>
// UNREAD0: func.func @forward
// UNREAD1-NOT: h.0.attn.bias
