// RUN: dsc-opt %s --dsc-optimizer="optimizer=adamw lr=0.1 grad-clip=1.0" --dsc-lower-to-runtime --dscrt-select-library | FileCheck %s
// RUN: dsc-opt %s --dsc-optimizer="optimizer=adamw lr=0.1" --dsc-zero=stage=1 --dsc-lower-to-runtime --dscrt-select-library | FileCheck %s --check-prefix=ZERO

// The optimizer step of every parameter is one library kernel, and the
// global norm of clipping another, whatever the number of parameters.

module attributes {dsc.world_size = 2 : i64} {
dsc.state parameter @w : tensor<4x3xf32>
dsc.state parameter @b : tensor<3xf32>
func.func @forward(%x: tensor<4x3xf32> {dsc.input = "x"}, %y: tensor<3xf32> {dsc.input = "y"})
    -> (tensor<f32> {dsc.output = "loss"},
        tensor<4x3xf32> {dsc.output = "grad.w", dsc.gradient_of = @w},
        tensor<3xf32> {dsc.output = "grad.b", dsc.gradient_of = @b}) {
  %l = dsc.reduce_sum %y, dims = [0] : tensor<3xf32>
  %gw = dsc.all_reduce %x : tensor<4x3xf32>
  %gb = dsc.all_reduce %y : tensor<3xf32>
  return %l, %gw, %gb : tensor<f32>, tensor<4x3xf32>, tensor<3xf32>
}
}

// Parameters and moments are updated in place: each output is the state
// its input was read from.
// CHECK-LABEL: func.func @step
// CHECK: dscrt.kernel "sum_squares" on %{{.*}} ins(%[[GW:.*]], %[[GB:.*]] : memref<4x3xf32>, memref<3xf32>) outs(%{{.*}} : memref<f32>)
// CHECK: %[[W:.*]] = dscrt.state 0 "w" : memref<4x3xf32>
// CHECK: %[[M:.*]] = dscrt.state 1 "w.exp_avg" : memref<4x3xf32>
// CHECK: %[[V:.*]] = dscrt.state 2 "w.exp_avg_sq" : memref<4x3xf32>
// CHECK: %[[B:.*]] = dscrt.state 3 "b" : memref<3xf32>
// CHECK: %[[W2:.*]] = dscrt.state 0 "w" : memref<4x3xf32>
// CHECK-NEXT: %[[B2:.*]] = dscrt.state 3 "b" : memref<3xf32>
// CHECK-NEXT: %[[M2:.*]] = dscrt.state 1 "w.exp_avg" : memref<4x3xf32>
// CHECK: dscrt.kernel "adam_update" on %{{.*}} ins(%[[W]], %[[B]], %[[GW]], %[[GB]], %[[M]], {{.*}}) outs(%[[W2]], %[[B2]], %[[M2]], {{.*}})
// CHECK: dsc.adam_update
// CHECK-NOT: dscrt.kernel "adam_update"
// CHECK-NOT: dscrt.kernel "copy" {{.*}} outs(%{{.*}} : memref<4x3xf32>)
// CHECK: return

// ZeRO stage 1: the parameter shards (copied for the update alone) are
// updated in place and gathered from there; the moment shards are states.
// ZERO-LABEL: func.func @step
// ZERO: dscrt.state 0 "w" : memref<4x3xf32>
// ZERO: dscrt.copy_shard %{{.*}} to %[[WS:.*]] on %{{.*}} : memref<12xf32> to memref<6xf32>
// ZERO: dscrt.state 3 "b" : memref<3xf32>
// ZERO: dscrt.copy_shard %{{.*}} to %[[BS:.*]] on %{{.*}} : memref<4xf32> to memref<2xf32>
// ZERO: dscrt.kernel "adam_update" on %{{.*}} ins(%[[WS]], %[[BS]], {{.*}}) outs(%[[WS]], %[[BS]], {{.*}})
// ZERO-NOT: dscrt.kernel "adam_update"
// ZERO: dscrt.all_gather %[[WS]] to
// ZERO: dscrt.all_gather %[[BS]] to
