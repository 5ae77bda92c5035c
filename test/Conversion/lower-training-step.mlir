// RUN: dsc-opt %s --dsc-lower-to-runtime --split-input-file | FileCheck %s
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory --split-input-file | dsc-translate --dscrt-to-cpp --split-input-file | FileCheck %s --check-prefix=CPP

// A training step (it stores state): the loss is written as soon as it is
// computed and the step may end there (dscrt.eval_exit, for dsc-run
// --eval); the update follows, written straight into the state's memory
// (every read of the old value comes first).
dsc.state parameter @w : tensor<4xf32>
dsc.state optimizer @optimizer.step : tensor<f32>
func.func @train(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<4xf32>
  %p = dsc.mul %w, %x : tensor<4xf32>, tensor<4xf32>
  %l = dsc.reduce_sum %p, dims = [0] : tensor<4xf32>
  %lr = dsc.constant dense<0.1> : tensor<f32>
  %u = dsc.mul %x, %lr : tensor<4xf32>, tensor<f32>
  %w2 = dsc.load @w : tensor<4xf32>
  %n = dsc.sub %w2, %u : tensor<4xf32>, tensor<4xf32>
  dsc.store %n to @w : tensor<4xf32>
  return %l : tensor<f32>
}
// CHECK-LABEL: func.func @step
// CHECK: %[[C:.*]] = dscrt.stream "compute"
// CHECK: %[[W:.*]] = dscrt.state 0 "w" : memref<4xf32>
// CHECK: dscrt.kernel on %[[C]] ins(%[[W]], %{{.*}} : memref<4xf32>, memref<4xf32>) outs(%[[P:.*]] : memref<4xf32>)
// CHECK: dscrt.kernel on %[[C]] ins(%[[P]] : memref<4xf32>) outs(%[[L:.*]] : memref<f32>)
// CHECK: dsc.reduce_sum
// CHECK-NEXT: dscrt.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[O:.*]] = dscrt.output 0 "loss" : memref<f32, #dscrt.host>
// CHECK-NEXT: dscrt.copy %[[L]] to %[[O]] on %[[C]] : memref<f32> to memref<f32, #dscrt.host>
// CHECK-NEXT: dscrt.eval_exit
// CHECK: %[[OLD:.*]] = dscrt.state 0 "w" : memref<4xf32>
// CHECK-NEXT: %[[TARGET:.*]] = dscrt.state 0 "w" : memref<4xf32>
// CHECK-NEXT: dscrt.kernel on %[[C]] ins(%{{.*}}, %{{.*}}, %[[OLD]] : {{.*}}) outs(%[[TARGET]] : memref<4xf32>)
// CHECK: dsc.sub
// CHECK-NOT: dscrt.kernel
// CHECK-NOT: dscrt.output
// CHECK: dscrt.synchronize %[[C]]
// CHECK-NEXT: return

// The evaluation exit drains the streams after the loss's copy is enqueued,
// then fails the step if a kernel found an index outside its table.
// CPP: dsc::rt::StateRole::Parameter
// CPP: dsc::rt::StateRole::Optimizer
// CPP: "device to host copy");
// CPP-NEXT: if (!ctx->training()) {
// CPP-NEXT: .synchronize();
// CPP-NEXT: dsc_raise_index_error();
// CPP-NEXT: return;
// CPP-NEXT: }

// -----

// An evaluation graph has no dscrt.eval_exit; its outputs come last.
// CHECK-LABEL: func.func @step
// CHECK-NOT: dscrt.eval_exit
// CHECK: dscrt.output 0 "loss"
// CHECK-NEXT: dscrt.copy
// CHECK-NEXT: dscrt.synchronize
// CHECK-NEXT: return
func.func @eval(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %l = dsc.reduce_sum %x, dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}
