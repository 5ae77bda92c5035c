// Interleaved 1F1B: a four-block model (tied embedding and head) cut into
// 2 x 2 model chunks of one block each, rank r holding chunks r and r + 2,
// four micro-batches. The cut keeps each rank's chunks, marks the ops and
// transfers of its second chunk with dsc.pipeline_chunk, and sends every
// chunk's output to the next rank (rank 1's chunk 1 to rank 0's chunk 2);
// the schedule pass orders each rank's program as the interleaved list
// (unittests/PipelineScheduleTest.cpp pins the lists), so the transfers of
// the two ranks meet send for receive.
// RUN: dsc-opt %S/Inputs/four-blocks.mlir --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="stage=0 micro-batches=4 chunks=2 print" 2>&1 | FileCheck %s --check-prefixes=REPORT,CUT0
// RUN: dsc-opt %S/Inputs/four-blocks.mlir --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="stage=1 micro-batches=4 chunks=2" | FileCheck %s --check-prefix=CUT1
// RUN: dsc-opt %S/Inputs/four-blocks.mlir --world-size=2 --pipeline-parallel=2 --pipeline-stage=0 --grad-accum=4 --pipeline-schedule=interleaved --pipeline-chunks=2 --optimizer=sgd --lr=0.1 | FileCheck %s --check-prefix=ORDER0
// RUN: dsc-opt %S/Inputs/four-blocks.mlir --world-size=2 --pipeline-parallel=2 --pipeline-stage=1 --grad-accum=4 --pipeline-schedule=interleaved --pipeline-chunks=2 --optimizer=sgd --lr=0.1 | FileCheck %s --check-prefix=ORDER1
// RUN: dsc-opt %S/Inputs/four-blocks.mlir --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="stage=0 micro-batches=4 chunks=2" --dsc-autodiff --dsc-pipeline-schedule="print schedule=interleaved" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PRINT0
// RUN: dsc-opt %S/Inputs/four-blocks.mlir --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="stage=1 micro-batches=4 chunks=2" --dsc-autodiff --dsc-pipeline-schedule="print schedule=interleaved" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PRINT1
// RUN: dsc-opt %S/Inputs/four-blocks.mlir --world-size=2 --pipeline-parallel=2 --pipeline-stage=1 --grad-accum=4 --pipeline-schedule=interleaved --pipeline-chunks=2 --optimizer=sgd --lr=0.1 --dsc-report=comm -o /dev/null 2>&1 | FileCheck %s --check-prefix=STEPREPORT

// Errors, each at the module.
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="micro-batches=4 chunks=2" 2>&1 | FileCheck %s --check-prefix=BLOCKS
// RUN: not dsc-opt %S/Inputs/four-blocks.mlir --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="micro-batches=3 chunks=2" 2>&1 | FileCheck %s --check-prefix=MULTIPLE
// RUN: not dsc-opt %S/Inputs/four-blocks.mlir --world-size=2 --pipeline-parallel=2 --grad-accum=4 --pipeline-schedule=interleaved 2>&1 | FileCheck %s --check-prefix=ONE
// RUN: not dsc-opt %S/Inputs/four-blocks.mlir --world-size=2 --pipeline-parallel=2 --grad-accum=4 --pipeline-chunks=2 2>&1 | FileCheck %s --check-prefix=NOTINTERLEAVED

// Every block costs the same; the head's FLOPs fall on the last chunk.
// REPORT: dsc-pipeline-parallel: @forward: 4 blocks in 2 x 2 chunks, balanced by matrix-product FLOPs per micro-batch
// REPORT: chunk 0 (rank 0): blocks h.0..h.0 4096 FLOPs {{.*}} sends 256 B per micro-batch
// REPORT: chunk 1 (rank 1): blocks h.1..h.1 4096 FLOPs {{.*}} sends 256 B per micro-batch
// REPORT: chunk 2 (rank 0): blocks h.2..h.2 4096 FLOPs {{.*}} sends 256 B per micro-batch
// REPORT: chunk 3 (rank 1): blocks h.3..h.3 6144 FLOPs {{.*}} sends 0 B per micro-batch
// Both ranks hold the tied embedding (256 B) and their own blocks.
// REPORT: rank 0: 928 B parameters
// REPORT: rank 1: 816 B parameters

// Rank 0 keeps chunks 0 (h.0) and 2 (h.2), the tied embedding marked for
// the pipeline group's gradient sum.
// CUT0: module attributes {dsc.pipeline_chunks = 2 : i64, dsc.pipeline_micro_batches = 4 : i64, dsc.pipeline_parallel_size = 2 : i64, dsc.pipeline_stage = 0 : i64, dsc.repeated_blocks = ["h"], dsc.world_size = 2 : i64}
// CUT0: dsc.state parameter @wte {dsc.pipeline_tied}
// CUT0-NOT: h.1.
// CUT0: dsc.state parameter @h.0.mlp.weight
// CUT0-NOT: h.1.
// CUT0: dsc.state parameter @h.2.ln.weight
// CUT0-NOT: h.3.
// CUT0-NOT: ln_f
// CUT0: func.func @forward(%[[TOKENS:.*]]: tensor<8x8xi64> {dsc.input = "tokens"}
// Micro-batch 0 through chunk 0 (unmarked), then through chunk 2, which
// receives chunk 1's output from rank 1.
// CUT0: dsc.slice %[[TOKENS]], dim = 0, start = 0, end = 2, step = 1 {dsc.micro_batch = 0 : i64}
// CUT0: %[[Z0:.*]] = dsc.pipeline_send %{{.*}} to next micro_batch 0 : tensor<2x8x4xf32>
// CUT0-NEXT: %[[R0:.*]] = dsc.pipeline_recv from previous micro_batch 0 {dsc.pipeline_chunk = 1 : i64}
// CUT0-NEXT: dsc.layer_norm %[[R0]] weight(%{{.*}}) {dsc.micro_batch = 0 : i64, dsc.pipeline_chunk = 1 : i64}
// CUT0: %[[Z1:.*]] = dsc.pipeline_send %{{.*}} to next micro_batch 0 {dsc.pipeline_chunk = 1 : i64}
// CUT0-NEXT: dsc.slice %[[TOKENS]], dim = 0, start = 2, end = 4, step = 1 {dsc.micro_batch = 1 : i64}
// No loss on rank 0: the sum of its sends' zeros.
// CUT0: %[[L:.*]] = dsc.add %[[Z0]], %[[Z1]] : tensor<f32>, tensor<f32>
// CUT0-NOT: dsc.mul
// CUT0: dsc.all_reduce %{{.*}} over pipeline : tensor<f32>

// Rank 1 keeps chunks 1 (h.1) and 3 (h.3, the final norm, the head and the
// loss); chunk 1 sends to rank 0's chunk 2 as its next.
// CUT1: dsc.state parameter @wte {dsc.pipeline_tied}
// CUT1-NOT: h.0.
// CUT1: dsc.state parameter @h.1.ln.weight
// CUT1-NOT: h.2.
// CUT1: dsc.state parameter @h.3.ln.weight
// CUT1: dsc.state parameter @ln_f.weight
// CUT1: %[[R:.*]] = dsc.pipeline_recv from previous micro_batch 0 : tensor<2x8x4xf32>
// CUT1: %[[Z0:.*]] = dsc.pipeline_send %{{.*}} to next micro_batch 0 : tensor<2x8x4xf32>
// CUT1-NEXT: %[[T0:.*]] = dsc.slice %{{.*}}, dim = 0, start = 0, end = 2, step = 1 {dsc.micro_batch = 0 : i64, dsc.pipeline_chunk = 1 : i64}
// CUT1-NEXT: dsc.pipeline_recv from previous micro_batch 0 {dsc.pipeline_chunk = 1 : i64}
// CUT1: %[[L0:.*]] = dsc.cross_entropy %{{.*}}, %[[T0]] {dsc.micro_batch = 0 : i64, dsc.pipeline_chunk = 1 : i64}
// The mean of the last chunk's losses, then the first chunk's sends' zeros.
// CUT1: %[[MEAN:.*]] = dsc.mul %{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>
// CUT1-NEXT: dsc.add %[[MEAN]], %[[Z0]] : tensor<f32>, tensor<f32>
// CUT1: dsc.all_reduce %{{.*}} over pipeline : tensor<f32>

// The two ranks' transfers in the interleaved order: rank 0 runs
// F0:0 F1:0 F0:1 F1:1 F2:0 B0:1 F3:0 B1:1 F2:1 B0:0 F3:1 B1:0 B2:1 B3:1 B2:0 B3:0,
// rank 1 F0:0 F1:0 F0:1 B0:1 F1:1 B1:1 F2:0 B0:0 F3:0 B1:0 F2:1 B2:1 F3:1 B3:1 B2:0 B3:0
// (micro-batch:chunk). Between the two ranks, the messages of one
// micro-batch in each direction are sent and received in one order (rank
// 1 sends micro-batch 0's activation from chunk 1, then the gradients of
// chunks 3 and 1; rank 0 receives them in that order). The loss and the
// tied embedding's gradient are summed after every transfer on both.
// ORDER0: dsc.pipeline_send %{{.*}} to next micro_batch 0 :
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_send %{{.*}} to next micro_batch 1 :
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_recv from previous micro_batch 0 {dsc.pipeline_chunk = 1 : i64}
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_send %{{.*}} to next micro_batch 0 {dsc.pipeline_chunk = 1 : i64}
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_recv from previous micro_batch 1 {dsc.pipeline_chunk = 1 : i64}
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_send %{{.*}} to next micro_batch 1 {dsc.pipeline_chunk = 1 : i64}
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_send %{{.*}} to next micro_batch 2 :
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_recv from next micro_batch 0 {dsc.pipeline_chunk = 1 : i64}
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_send %{{.*}} to previous micro_batch 0 {dsc.pipeline_chunk = 1 : i64}
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_send %{{.*}} to next micro_batch 3 :
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_recv from next micro_batch 1 {dsc.pipeline_chunk = 1 : i64}
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_send %{{.*}} to previous micro_batch 1 {dsc.pipeline_chunk = 1 : i64}
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_recv from previous micro_batch 2 {dsc.pipeline_chunk = 1 : i64}
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_send %{{.*}} to next micro_batch 2 {dsc.pipeline_chunk = 1 : i64}
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_recv from next micro_batch 0 :
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_recv from previous micro_batch 3 {dsc.pipeline_chunk = 1 : i64}
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_send %{{.*}} to next micro_batch 3 {dsc.pipeline_chunk = 1 : i64}
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_recv from next micro_batch 1 :
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_recv from next micro_batch 2 {dsc.pipeline_chunk = 1 : i64}
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_send %{{.*}} to previous micro_batch 2 {dsc.pipeline_chunk = 1 : i64}
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_recv from next micro_batch 3 {dsc.pipeline_chunk = 1 : i64}
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_send %{{.*}} to previous micro_batch 3 {dsc.pipeline_chunk = 1 : i64}
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_recv from next micro_batch 2 :
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.pipeline_recv from next micro_batch 3 :
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.all_reduce %{{.*}} over pipeline : tensor<f32>
// ORDER0-NOT: dsc.pipeline_{{send|recv}}
// ORDER0: dsc.all_reduce %{{.*}} over pipeline : tensor<16x4xf32>

// ORDER1: dsc.pipeline_recv from previous micro_batch 0 :
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_send %{{.*}} to next micro_batch 0 :
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_recv from previous micro_batch 1 :
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_send %{{.*}} to next micro_batch 1 :
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_recv from previous micro_batch 0 {dsc.pipeline_chunk = 1 : i64}
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_send %{{.*}} to previous micro_batch 0 {dsc.pipeline_chunk = 1 : i64}
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_recv from previous micro_batch 1 {dsc.pipeline_chunk = 1 : i64}
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_send %{{.*}} to previous micro_batch 1 {dsc.pipeline_chunk = 1 : i64}
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_recv from previous micro_batch 2 :
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_send %{{.*}} to next micro_batch 2 :
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_recv from next micro_batch 0 :
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_send %{{.*}} to previous micro_batch 0 :
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_recv from previous micro_batch 3 :
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_send %{{.*}} to next micro_batch 3 :
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_recv from next micro_batch 1 :
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_send %{{.*}} to previous micro_batch 1 :
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_recv from previous micro_batch 2 {dsc.pipeline_chunk = 1 : i64}
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_send %{{.*}} to previous micro_batch 2 {dsc.pipeline_chunk = 1 : i64}
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_recv from previous micro_batch 3 {dsc.pipeline_chunk = 1 : i64}
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_send %{{.*}} to previous micro_batch 3 {dsc.pipeline_chunk = 1 : i64}
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_recv from next micro_batch 2 :
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_send %{{.*}} to previous micro_batch 2 :
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_recv from next micro_batch 3 :
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.pipeline_send %{{.*}} to previous micro_batch 3 :
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.all_reduce %{{.*}} over pipeline : tensor<f32>
// ORDER1-NOT: dsc.pipeline_{{send|recv}}
// ORDER1: dsc.all_reduce %{{.*}} over pipeline : tensor<16x4xf32>
// The simulation of the interleaved lists (backward twice the forward):
// the bubble (P-1)/(V·M) = 1/8; the micro-batch chunks in flight per rank.
// PRINT0: dsc-pipeline-schedule: interleaved, 2 stages x 4 micro-batches x 2 chunks; stage 0 (action:chunk) runs F0:0 F1:0 F0:1 F1:1 F2:0 B0:1 F3:0 B1:1 F2:1 B0:0 F3:1 B1:0 B2:1 B3:1 B2:0 B3:0
// PRINT0-NEXT: bubble 0.125 of the ideal time ((P-1)/(V*M) = 0.125); micro-batches in flight at most: 5 3
// PRINT1: stage 1 (action:chunk) runs F0:0 F1:0 F0:1 B0:1 F1:1 B1:1 F2:0 B0:0 F3:0 B1:0 F2:1 B2:1 F3:1 B3:1 B2:0 B3:0

// STEPREPORT: pipeline stage 1 of 2 (2 model chunks, interleaved)
// Rank 1's 3 transfers of each direction per micro-batch: 12 of 256 B.
// STEPREPORT: recv[pipeline] f32 12 3,072 0
// STEPREPORT: send[pipeline] f32 12 3,072 3,072

// BLOCKS: three-blocks.mlir:{{[0-9]+}}:{{[0-9]+}}: error: cannot cut this graph's 3 repeated blocks (states named <prefix>.<i>.*) into 2 x 2 model chunks: pipeline-chunks times pipeline-parallel must not exceed the model's blocks
// MULTIPLE: error: the interleaved schedule's 2 model chunks per rank need the micro-batches (3) to be a multiple of the 2 pipeline stages
// ONE: error: the interleaved pipeline schedule runs several model chunks per rank, but this stage was cut into one (set pipeline-chunks to 2 or more, or use 1f1b)
// NOTINTERLEAVED: error: this stage was cut into 2 model chunks per rank, which only the interleaved pipeline schedule runs, not 1f1b
