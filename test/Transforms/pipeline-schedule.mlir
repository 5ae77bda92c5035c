// Each stage's transfers in its schedule's order, after autodiff built the
// backward (gradients received from the next stage, sent to the previous)
// and the optimizer: three micro-batches over two stages. 1F1B's stage 0
// runs two warm-up forwards, then one backward and one forward in turn;
// stage 1 alternates from the start; GPipe runs every forward first. The
// two stages' sequences match send for receive, and the collectives over
// the pipeline group (the loss, then the tied embedding's gradient) come
// after every transfer on both. A fourth run adds a data group of 2 ranks
// per stage: its sums come after the transfers too.
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --world-size=2 --pipeline-parallel=2 --pipeline-stage=0 --grad-accum=3 --optimizer=sgd --lr=0.1 | FileCheck %s --check-prefix=S0-1F1B
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --world-size=2 --pipeline-parallel=2 --pipeline-stage=1 --grad-accum=3 --optimizer=sgd --lr=0.1 | FileCheck %s --check-prefix=S1-1F1B
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --world-size=2 --pipeline-parallel=2 --pipeline-stage=0 --grad-accum=3 --optimizer=sgd --lr=0.1 --pipeline-schedule=gpipe | FileCheck %s --check-prefix=S0-GPIPE
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --world-size=2 --pipeline-parallel=2 --pipeline-stage=1 --grad-accum=3 --optimizer=sgd --lr=0.1 --pipeline-schedule=gpipe | FileCheck %s --check-prefix=S1-GPIPE
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --world-size=4 --pipeline-parallel=2 --pipeline-stage=1 --grad-accum=2 --optimizer=sgd --lr=0.1 | FileCheck %s --check-prefix=D2
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="stage=0 micro-batches=4" --dsc-autodiff --dsc-pipeline-schedule=print -o /dev/null 2>&1 | FileCheck %s --check-prefix=PRINT-1F1B
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="stage=1 micro-batches=4" --dsc-autodiff --dsc-pipeline-schedule="print schedule=gpipe" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PRINT-GPIPE
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --world-size=2 --pipeline-parallel=2 --pipeline-stage=1 --grad-accum=2 --optimizer=sgd --lr=0.1 --pipeline-schedule=zb-h1 | FileCheck %s --check-prefix=S1-ZB
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --world-size=2 --pipeline-parallel=2 --pipeline-stage=1 --grad-accum=2 --optimizer=sgd --lr=0.1 --pipeline-schedule=1f1b | FileCheck %s --check-prefix=S1-1F1B-W
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="stage=0 micro-batches=4" --dsc-autodiff --dsc-pipeline-schedule="print schedule=zb-h1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PRINT-ZB0
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="stage=1 micro-batches=4" --dsc-autodiff --dsc-pipeline-schedule="print schedule=zb-h1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PRINT-ZB1
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel --dsc-pipeline-schedule=schedule=zb-h2 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel --dsc-pipeline-schedule=schedule=interleaved 2>&1 | FileCheck %s --check-prefix=INTERLEAVED

// S0-1F1B: dsc.pipeline_send %{{.*}} to next micro_batch 0
// S0-1F1B-NOT: dsc.pipeline_
// S0-1F1B: dsc.pipeline_send %{{.*}} to next micro_batch 1
// S0-1F1B-NOT: dsc.pipeline_
// S0-1F1B: dsc.pipeline_recv from next micro_batch 0 : tensor<2x8x4xf32>
// S0-1F1B-NOT: dsc.pipeline_
// S0-1F1B: dsc.pipeline_send %{{.*}} to next micro_batch 2
// S0-1F1B-NOT: dsc.pipeline_
// S0-1F1B: dsc.pipeline_recv from next micro_batch 1
// S0-1F1B-NOT: dsc.pipeline_
// S0-1F1B: dsc.pipeline_recv from next micro_batch 2
// S0-1F1B-NOT: dsc.pipeline_
// S0-1F1B: %[[LOSS:.*]] = dsc.all_reduce %{{.*}} over pipeline : tensor<f32>
// S0-1F1B: dsc.all_reduce %{{.*}} over pipeline : tensor<16x4xf32>
// S0-1F1B: dsc.store %{{.*}} to @wte
// S0-1F1B: return %[[LOSS]]

// S1-1F1B: dsc.pipeline_recv from previous micro_batch 0
// S1-1F1B-NOT: dsc.pipeline_
// S1-1F1B: dsc.pipeline_send %{{.*}} to previous micro_batch 0 : tensor<2x8x4xf32>
// S1-1F1B-NOT: dsc.pipeline_
// S1-1F1B: dsc.pipeline_recv from previous micro_batch 1
// S1-1F1B-NOT: dsc.pipeline_
// S1-1F1B: dsc.pipeline_send %{{.*}} to previous micro_batch 1
// S1-1F1B-NOT: dsc.pipeline_
// S1-1F1B: dsc.pipeline_recv from previous micro_batch 2
// S1-1F1B-NOT: dsc.pipeline_
// S1-1F1B: dsc.pipeline_send %{{.*}} to previous micro_batch 2
// S1-1F1B-NOT: dsc.pipeline_
// S1-1F1B: dsc.all_reduce %{{.*}} over pipeline : tensor<f32>
// S1-1F1B: dsc.all_reduce %{{.*}} over pipeline : tensor<16x4xf32>

// S0-GPIPE: dsc.pipeline_send %{{.*}} to next micro_batch 0
// S0-GPIPE-NOT: dsc.pipeline_
// S0-GPIPE: dsc.pipeline_send %{{.*}} to next micro_batch 1
// S0-GPIPE-NOT: dsc.pipeline_
// S0-GPIPE: dsc.pipeline_send %{{.*}} to next micro_batch 2
// S0-GPIPE-NOT: dsc.pipeline_
// S0-GPIPE: dsc.pipeline_recv from next micro_batch 0
// S0-GPIPE-NOT: dsc.pipeline_
// S0-GPIPE: dsc.pipeline_recv from next micro_batch 1
// S0-GPIPE-NOT: dsc.pipeline_
// S0-GPIPE: dsc.pipeline_recv from next micro_batch 2
// S0-GPIPE: over pipeline

// S1-GPIPE: dsc.pipeline_recv from previous micro_batch 0
// S1-GPIPE-NOT: dsc.pipeline_
// S1-GPIPE: dsc.pipeline_recv from previous micro_batch 1
// S1-GPIPE-NOT: dsc.pipeline_
// S1-GPIPE: dsc.pipeline_recv from previous micro_batch 2
// S1-GPIPE-NOT: dsc.pipeline_
// S1-GPIPE: dsc.pipeline_send %{{.*}} to previous micro_batch 0
// S1-GPIPE-NOT: dsc.pipeline_
// S1-GPIPE: dsc.pipeline_send %{{.*}} to previous micro_batch 1
// S1-GPIPE-NOT: dsc.pipeline_
// S1-GPIPE: dsc.pipeline_send %{{.*}} to previous micro_batch 2
// S1-GPIPE: over pipeline

// D2: dsc.pipeline_recv from previous micro_batch 0
// D2: dsc.all_reduce %{{.*}} over data {dsc.micro_batch = 0 : i64} : tensor<f32>
// D2: dsc.pipeline_send %{{.*}} to previous micro_batch 0
// D2: dsc.pipeline_recv from previous micro_batch 1
// D2: dsc.pipeline_send %{{.*}} to previous micro_batch 1
// D2-NOT: dsc.pipeline_
// D2: dsc.all_reduce %{{.*}} over pipeline : tensor<f32>
// D2: dsc.all_reduce %{{.*}} over data : tensor<16x4xf32>
// D2: dsc.all_reduce %{{.*}} over pipeline : tensor<16x4xf32>

// Both bubbles are (P - 1) / M; 1F1B holds at most P - s micro-batches
// (their activations) on stage s, GPipe all M.
// PRINT-1F1B: dsc-pipeline-schedule: 1f1b, 2 stages x 4 micro-batches; stage 0 runs F0 F1 B0 F2 B1 F3 B2 B3
// PRINT-1F1B-NEXT: bubble 0.250 of the ideal time ((P-1)/M = 0.250); micro-batches in flight at most: 2 1
// PRINT-GPIPE: dsc-pipeline-schedule: gpipe, 2 stages x 4 micro-batches; stage 1 runs F0 F1 F2 F3 B0 B1 B2 B3
// PRINT-GPIPE-NEXT: bubble 0.250 of the ideal time ((P-1)/M = 0.250); micro-batches in flight at most: 4 4

// KIND: error: unknown pipeline schedule 'zb-h2' (expected gpipe, 1f1b, zb-h1 or interleaved)
// INTERLEAVED: error: the interleaved pipeline schedule runs several model chunks per rank, but this stage was cut into one (set pipeline-chunks to 2 or more, or use 1f1b)

// ZB-H1 on the last of two stages, two micro-batches: F0 B0 F1 B1 W0 W1.
// B is what the previous stage waits for (the gradient it is sent), W the
// rest of the backward: the weight gradients, such as the tied head's
// (logits' gradient [16x16] times the activations [16x4]). 1F1B computes
// micro-batch 0's before its send; ZB-H1 after micro-batch 1's send, both
// micro-batches' then.
// S1-ZB: dsc.pipeline_recv from previous micro_batch 0
// S1-ZB-NOT: transpose_lhs : tensor<16x16xf32>, tensor<16x4xf32>
// S1-ZB: dsc.pipeline_send %{{.*}} to previous micro_batch 0
// S1-ZB-NOT: transpose_lhs : tensor<16x16xf32>, tensor<16x4xf32>
// S1-ZB: dsc.pipeline_send %{{.*}} to previous micro_batch 1
// S1-ZB-COUNT-2: transpose_lhs : tensor<16x16xf32>, tensor<16x4xf32>
// S1-ZB: dsc.all_reduce %{{.*}} over pipeline : tensor<f32>
// S1-1F1B-W: dsc.pipeline_recv from previous micro_batch 0
// S1-1F1B-W: transpose_lhs : tensor<16x16xf32>, tensor<16x4xf32>
// S1-1F1B-W: dsc.pipeline_send %{{.*}} to previous micro_batch 0
// PRINT-ZB0: dsc-pipeline-schedule: zb-h1, 2 stages x 4 micro-batches; stage 0 runs F0 F1 B0 W0 F2 B1 W1 F3 B2 W2 B3 W3
// PRINT-ZB0-NEXT: bubble 0.083 of the ideal time ((P-1)(F+B-W)/(M(F+B+W)), F=B=W = 0.083); micro-batches in flight at most: 2 2
// PRINT-ZB1: stage 1 runs F0 B0 F1 B1 W0 F2 B2 W1 F3 B3 W2 W3
