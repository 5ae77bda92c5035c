// RUN: dsc-opt %s --split-input-file --dsc-schedule-collectives="prefetch-bucket-size=0" | FileCheck %s

// A weight gradient whose other operand is computed only for it (the
// GELU's output, which activation checkpointing recomputes for the weight
// gradient alone): the tanh, the matmul, the flattening and the
// reduce_scatter only feed one another, and the tanh already follows its
// input. The reduce_scatter still moves up to the matmul; it used to stay
// at the end, keeping the whole gradient alive through the rest of the
// backward.
// CHECK-LABEL: func.func @exclusive_chain
// CHECK:      %[[A:.*]] = dsc.exp %arg0
// CHECK-NEXT: %[[T:.*]] = dsc.tanh %[[A]]
// CHECK-NEXT: %[[G:.*]] = dsc.matmul %arg1, %[[T]] transpose_lhs
// CHECK-NEXT: %[[F:.*]] = dsc.reshape %[[G]]
// CHECK-NEXT: %[[S:.*]] = dsc.reduce_scatter %[[F]]
// CHECK-NEXT: dsc.neg %[[A]]
// CHECK:      dsc.store %[[S]] to @w
module attributes {dsc.world_size = 2 : i64} {
  dsc.state parameter @w {partition_of = array<i64: 4, 2>} : tensor<4xf32>
  func.func @exclusive_chain(%x: tensor<3x2xf32> {dsc.input = "x"}, %dy: tensor<3x4xf32> {dsc.input = "dy"})
      -> (tensor<3x2xf32> {dsc.output = "y"}) {
    %a = dsc.exp %x : tensor<3x2xf32>
    %t = dsc.tanh %a : tensor<3x2xf32>
    %g = dsc.matmul %dy, %t transpose_lhs : tensor<3x4xf32>, tensor<3x2xf32>
    %n = dsc.neg %a : tensor<3x2xf32>
    %m = dsc.mul %n, %n : tensor<3x2xf32>, tensor<3x2xf32>
    %f = dsc.reshape %g : tensor<4x2xf32> -> tensor<8xf32>
    %s = dsc.reduce_scatter %f : tensor<8xf32> -> tensor<4xf32>
    dsc.store %s to @w : tensor<4xf32>
    return %m : tensor<3x2xf32>
  }
}

// -----

// A reduction already in place, its exclusive producers right after their
// input, does not move.
// CHECK-LABEL: func.func @in_place
// CHECK:      %[[A:.*]] = dsc.exp %arg0
// CHECK-NEXT: %[[T:.*]] = dsc.tanh %[[A]]
// CHECK-NEXT: %[[F:.*]] = dsc.reshape %[[T]]
// CHECK-NEXT: %[[S:.*]] = dsc.reduce_scatter %[[F]]
// CHECK-NEXT: dsc.neg %[[A]]
module attributes {dsc.world_size = 2 : i64} {
  dsc.state parameter @w {partition_of = array<i64: 4, 2>} : tensor<4xf32>
  func.func @in_place(%x: tensor<4x2xf32> {dsc.input = "x"})
      -> (tensor<4x2xf32> {dsc.output = "y"}) {
    %a = dsc.exp %x : tensor<4x2xf32>
    %t = dsc.tanh %a : tensor<4x2xf32>
    %f = dsc.reshape %t : tensor<4x2xf32> -> tensor<8xf32>
    %s = dsc.reduce_scatter %f : tensor<8xf32> -> tensor<4xf32>
    %n = dsc.neg %a : tensor<4x2xf32>
    dsc.store %s to @w : tensor<4xf32>
    return %n : tensor<4x2xf32>
  }
}
