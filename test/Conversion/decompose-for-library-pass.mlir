// RUN: dsc-opt %s --dsc-decompose-for-library --split-input-file | FileCheck %s

// A mean cross-entropy becomes per-token losses, their sum and a division
// by the counted targets; its i32 targets are widened to the library's i64.
// CHECK-LABEL: func.func @loss
// CHECK: %[[T:.*]] = dsc.convert %{{.*}} : tensor<4xi32> to tensor<4xi64>
// CHECK: %[[PER:.*]] = dsc.cross_entropy %{{.*}}, %[[T]] reduction = none
// CHECK: %[[SUM:.*]] = dsc.reduce_sum %[[PER]], dims = [0]
// CHECK: dsc.div %[[SUM]]
// CHECK-NOT: reduction = mean
func.func @loss(%l: tensor<4x8xf32> {dsc.input = "l"}, %t: tensor<4xi32> {dsc.input = "t"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %c = dsc.cross_entropy %l, %t : tensor<4x8xf32>, tensor<4xi32>
  return %c : tensor<f32>
}

// -----

// Gradient accumulation: what does not read the boundary (the load of @w,
// the micro-step count and its store) moves before it, in its order; the
// update that reads it stays after it.
dsc.state parameter @w : tensor<4xf32>
dsc.state optimizer @count : tensor<f32>
// CHECK-LABEL: func.func @accumulate
// CHECK: dsc.load @w
// CHECK-NEXT: dsc.load @count
// CHECK-NEXT: dsc.add
// CHECK-NEXT: dsc.store %{{.*}} to @count
// CHECK-NEXT: dsc.optimizer_boundary
// CHECK-NEXT: dsc.sub
// CHECK-NEXT: dsc.store %{{.*}} to @w
// CHECK-NEXT: return
func.func @accumulate(%g: tensor<4xf32> {dsc.input = "g"}) -> (tensor<4xf32> {dsc.output = "w"}) {
  %b:1 = dsc.optimizer_boundary %g : (tensor<4xf32>) -> (tensor<4xf32>)
  %w = dsc.load @w : tensor<4xf32>
  %new = dsc.sub %w, %b#0 : tensor<4xf32>, tensor<4xf32>
  %c = dsc.load @count : tensor<f32>
  %n = dsc.add %c, %c : tensor<f32>, tensor<f32>
  dsc.store %new to @w : tensor<4xf32>
  dsc.store %n to @count : tensor<f32>
  return %new : tensor<4xf32>
}
