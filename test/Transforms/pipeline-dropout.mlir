// Random ops inside pipeline stages: three blocks with a dropout each, the
// last also drawing uniform noise from the key alone, cut into 2 stages
// (stage 0: h.0 and h.1, stage 1: h.2 and the loss), 3 micro-batches of 2
// samples. dsc.step_key names the call's first sample; each micro-batch
// gets its own key, 2 samples on from the previous one's (sample_offset 0,
// 2, 4), so that its random ops draw what gradient accumulation's call of
// that micro-batch draws. The noise reads no micro-batch's data, yet is
// drawn once per micro-batch from that micro-batch's key.
// RUN: dsc-opt %s --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="stage=0 micro-batches=3" | FileCheck %s --check-prefix=STAGE0
// RUN: dsc-opt %s --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel="stage=1 micro-batches=3" | FileCheck %s --check-prefix=STAGE1
// The backward's dropouts (the gradients) redraw the forward's masks from
// the same micro-batch's key, in 1F1B's order, in ZB-H1's (the backward
// split in two) and with activation checkpointing (the recomputed
// dropouts).
// RUN: dsc-opt %s --world-size=2 --pipeline-parallel=2 --pipeline-stage=0 --grad-accum=3 --optimizer=sgd --lr=0.1 | FileCheck %s --check-prefix=BACKWARD
// RUN: dsc-opt %s --world-size=2 --pipeline-parallel=2 --pipeline-stage=0 --grad-accum=3 --optimizer=sgd --lr=0.1 --pipeline-schedule=zb-h1 | FileCheck %s --check-prefix=BACKWARD
// RUN: dsc-opt %s --world-size=2 --pipeline-parallel=2 --pipeline-stage=0 --grad-accum=3 --optimizer=sgd --lr=0.1 --checkpoint-activations | FileCheck %s --check-prefixes=BACKWARD,RECOMPUTED

dsc.state parameter @"h.0.w" : tensor<4x4xf32>
dsc.state parameter @"h.1.w" : tensor<4x4xf32>
dsc.state parameter @"h.2.w" : tensor<4x4xf32>
func.func @forward(%x: tensor<2x4xf32> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %key = dsc.step_key : tensor<4xi64>
  %w0 = dsc.load @"h.0.w" : tensor<4x4xf32>
  %h0 = dsc.linear %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %d0 = dsc.dropout %h0, %key, p = 0.1, seed = 0, samples = 2 : tensor<2x4xf32>
  %w1 = dsc.load @"h.1.w" : tensor<4x4xf32>
  %h1 = dsc.linear %d0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
  %d1 = dsc.dropout %h1, %key, p = 0.1, seed = 1, samples = 2 : tensor<2x4xf32>
  %w2 = dsc.load @"h.2.w" : tensor<4x4xf32>
  %h2 = dsc.linear %d1, %w2 : tensor<2x4xf32>, tensor<4x4xf32>
  %d2 = dsc.dropout %h2, %key, p = 0.1, seed = 2, samples = 2 : tensor<2x4xf32>
  %u = dsc.random_uniform %key, low = 0.5, high = 1.5, seed = 3, samples = 2 : tensor<2x4xf32>
  %n = dsc.mul %d2, %u : tensor<2x4xf32>, tensor<2x4xf32>
  %loss = dsc.reduce_sum %n, dims = [0, 1] : tensor<2x4xf32>
  return %loss : tensor<f32>
}

// STAGE0-LABEL: func.func @forward
// STAGE0-SAME: tensor<6x4xf32>
// The keys come before the micro-batches, unmarked.
// STAGE0: %[[K0:.*]] = dsc.step_key : tensor<4xi64>
// STAGE0-NEXT: %[[K1:.*]] = dsc.step_key sample_offset = 2 : tensor<4xi64>
// STAGE0-NEXT: %[[K2:.*]] = dsc.step_key sample_offset = 4 : tensor<4xi64>
// STAGE0: dsc.slice %{{.*}}, dim = 0, start = 0, end = 2, step = 1 {dsc.micro_batch = 0 : i64}
// STAGE0: dsc.dropout %{{.*}}, %[[K0]], p = {{.*}}, seed = 0, samples = 2 {dsc.micro_batch = 0 : i64}
// STAGE0: dsc.dropout %{{.*}}, %[[K0]], p = {{.*}}, seed = 1, samples = 2 {dsc.micro_batch = 0 : i64}
// STAGE0: dsc.pipeline_send %{{.*}} to next micro_batch 0
// STAGE0: dsc.slice %{{.*}}, dim = 0, start = 2, end = 4, step = 1 {dsc.micro_batch = 1 : i64}
// STAGE0: dsc.dropout %{{.*}}, %[[K1]], p = {{.*}}, seed = 0, samples = 2 {dsc.micro_batch = 1 : i64}
// STAGE0: dsc.dropout %{{.*}}, %[[K1]], p = {{.*}}, seed = 1, samples = 2 {dsc.micro_batch = 1 : i64}
// STAGE0: dsc.pipeline_send %{{.*}} to next micro_batch 1
// STAGE0: dsc.dropout %{{.*}}, %[[K2]], p = {{.*}}, seed = 0, samples = 2 {dsc.micro_batch = 2 : i64}
// STAGE0: dsc.dropout %{{.*}}, %[[K2]], p = {{.*}}, seed = 1, samples = 2 {dsc.micro_batch = 2 : i64}
// STAGE0: dsc.pipeline_send %{{.*}} to next micro_batch 2

// STAGE1-LABEL: func.func @forward
// STAGE1: %[[K0:.*]] = dsc.step_key : tensor<4xi64>
// STAGE1-NEXT: %[[K1:.*]] = dsc.step_key sample_offset = 2 : tensor<4xi64>
// STAGE1-NEXT: %[[K2:.*]] = dsc.step_key sample_offset = 4 : tensor<4xi64>
// STAGE1-NOT: dsc.random_uniform
// STAGE1: dsc.pipeline_recv from previous micro_batch 0
// STAGE1: dsc.dropout %{{.*}}, %[[K0]], p = {{.*}}, seed = 2, samples = 2 {dsc.micro_batch = 0 : i64}
// STAGE1: dsc.random_uniform %[[K0]], {{.*}} seed = 3, samples = 2 {dsc.micro_batch = 0 : i64}
// STAGE1: dsc.pipeline_recv from previous micro_batch 1
// STAGE1: dsc.dropout %{{.*}}, %[[K1]], p = {{.*}}, seed = 2, samples = 2 {dsc.micro_batch = 1 : i64}
// STAGE1: dsc.random_uniform %[[K1]], {{.*}} seed = 3, samples = 2 {dsc.micro_batch = 1 : i64}
// STAGE1: dsc.pipeline_recv from previous micro_batch 2
// STAGE1: dsc.dropout %{{.*}}, %[[K2]], p = {{.*}}, seed = 2, samples = 2 {dsc.micro_batch = 2 : i64}
// STAGE1: dsc.random_uniform %[[K2]], {{.*}} seed = 3, samples = 2 {dsc.micro_batch = 2 : i64}

// Stage 0 after autodiff and the schedule: each micro-batch's gradient
// dropouts (after its gradient arrives from stage 1) read its key, as the
// recomputed forward dropout does (only h.0's is recomputed: h.1's output
// is what the stage sends, kept for the backward).
// BACKWARD-LABEL: func.func @forward
// BACKWARD: %[[K0:.*]] = dsc.step_key : tensor<4xi64>
// BACKWARD: %[[K1:.*]] = dsc.step_key sample_offset = 2 : tensor<4xi64>
// BACKWARD: %[[K2:.*]] = dsc.step_key sample_offset = 4 : tensor<4xi64>
// BACKWARD: dsc.pipeline_recv from next micro_batch 0
// BACKWARD: dsc.dropout %{{.*}}, %[[K0]], p = {{.*}}, seed = 1, samples = 2 :
// RECOMPUTED: dsc.dropout %{{.*}}, %[[K0]], p = {{.*}}, seed = 0, samples = 2 {dsc.micro_batch = 0 : i64, dsc.recomputed}
// BACKWARD: dsc.dropout %{{.*}}, %[[K0]], p = {{.*}}, seed = 0, samples = 2 :
// BACKWARD: dsc.pipeline_recv from next micro_batch 1
// BACKWARD: dsc.dropout %{{.*}}, %[[K1]], p = {{.*}}, seed = 1, samples = 2 :
// RECOMPUTED: dsc.dropout %{{.*}}, %[[K1]], p = {{.*}}, seed = 0, samples = 2 {dsc.micro_batch = 1 : i64, dsc.recomputed}
// BACKWARD: dsc.dropout %{{.*}}, %[[K1]], p = {{.*}}, seed = 0, samples = 2 :
// BACKWARD: dsc.pipeline_recv from next micro_batch 2
// BACKWARD: dsc.dropout %{{.*}}, %[[K2]], p = {{.*}}, seed = 1, samples = 2 :
// RECOMPUTED: dsc.dropout %{{.*}}, %[[K2]], p = {{.*}}, seed = 0, samples = 2 {dsc.micro_batch = 2 : i64, dsc.recomputed}
// BACKWARD: dsc.dropout %{{.*}}, %[[K2]], p = {{.*}}, seed = 0, samples = 2 :
