// RUN: dsc-opt %s --dsc-autodiff | FileCheck %s

// Dispatch and combine are each other's adjoints for fixed slots; the
// routing weights' cotangents are route dot products; moe_slots, whose
// results are integers, gets no backward at all.
// CHECK-LABEL: func.func @experts
// CHECK: %[[S:.*]], %{{.*}} = dsc.moe_slots
// CHECK: %[[D:.*]] = dsc.moe_dispatch %[[X:.*]], %[[S]] :
// CHECK: %[[E:.*]] = dsc.mul %[[D]], %[[W:.*]] :
// CHECK: %[[Y:.*]] = dsc.moe_combine %[[E]], %[[S]], %[[G:.*]] :
// CHECK-NOT: dsc.moe_slots
// CHECK: %[[DE:.*]] = dsc.moe_dispatch %[[DY:.*]], %[[S]], %[[G]] : tensor<16x32xf32>, tensor<16x2xi64>, tensor<16x2xf32> -> tensor<4x5x32xf32>
// CHECK: %[[DG:.*]] = dsc.moe_route_dot %[[DY]], %[[E]], %[[S]] : tensor<16x32xf32>, tensor<4x5x32xf32>, tensor<16x2xi64> -> tensor<16x2xf32>
// CHECK: %[[DD:.*]] = dsc.mul %[[DE]], %[[W]]
// CHECK: dsc.moe_combine %[[DD]], %[[S]] : tensor<4x5x32xf32>, tensor<16x2xi64> -> tensor<16x32xf32>
// CHECK-NOT: dsc.moe_slots
// CHECK: return
dsc.state parameter @x : tensor<16x32xf32>
dsc.state parameter @w : tensor<4x5x32xf32>
dsc.state parameter @gates : tensor<16x2xf32>
func.func @experts(%experts: tensor<16x2xi64> {dsc.input = "experts"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %x = dsc.load @x : tensor<16x32xf32>
  %w = dsc.load @w : tensor<4x5x32xf32>
  %g = dsc.load @gates : tensor<16x2xf32>
  %slots, %counts = dsc.moe_slots %experts, capacity = 5
      : tensor<16x2xi64> -> tensor<16x2xi64>, tensor<4xi64>
  %d = dsc.moe_dispatch %x, %slots : tensor<16x32xf32>, tensor<16x2xi64> -> tensor<4x5x32xf32>
  %e = dsc.mul %d, %w : tensor<4x5x32xf32>, tensor<4x5x32xf32>
  %y = dsc.moe_combine %e, %slots, %g
      : tensor<4x5x32xf32>, tensor<16x2xi64>, tensor<16x2xf32> -> tensor<16x32xf32>
  %loss = dsc.reduce_sum %y, dims = [0, 1] : tensor<16x32xf32>
  return %loss : tensor<f32>
}
