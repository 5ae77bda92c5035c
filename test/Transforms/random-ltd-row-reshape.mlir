// RUN: dsc-opt %s --dsc-random-ltd="kept=4 layers=1" | FileCheck %s

// Blocks exported as BERT's are: the hidden state is reshaped to rows
// ([B, T, D] -> [B * T, D]) after the previous block's last op, before
// this block's first load, and the last block's output likewise before
// the head's load. The dropping block takes the reshape that feeds it and
// leaves the one after it: it gathers and returns the hidden state
// [2, 8, 4] itself.
// CHECK-LABEL: func.func @forward
// CHECK: %[[X1:.*]] = dsc.add %{{.*}} : tensor<2x8x4xf32>, tensor<2x8x4xf32>
// CHECK: %[[XK:.*]] = dsc.gather %[[X1]], %{{.*}}, dim = 1 : tensor<2x8x4xf32>, tensor<2x4x4xi64>
// CHECK: dsc.reshape %[[XK]] : tensor<2x4x4xf32> -> tensor<8x4xf32>
// CHECK: %[[YK:.*]] = dsc.add %[[XK]], %{{.*}} : tensor<2x4x4xf32>, tensor<2x4x4xf32>
// CHECK: %[[SC:.*]] = dsc.scatter_add %{{.*}}, %{{.*}}, %[[YK]], dim = 1
// CHECK: %[[X2:.*]] = dsc.select %{{.*}}, %[[SC]], %[[X1]]
// CHECK: dsc.reshape %[[X2]] : tensor<2x8x4xf32> -> tensor<16x4xf32>

dsc.state parameter @"h.0.w" : tensor<4x4xf32>
dsc.state parameter @"h.1.w" : tensor<4x4xf32>
dsc.state parameter @"h.2.w" : tensor<4x4xf32>
dsc.state parameter @"head.w" : tensor<4x4xf32>

func.func @forward(%x0: tensor<2x8x4xf32> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %r0 = dsc.reshape %x0 : tensor<2x8x4xf32> -> tensor<16x4xf32>
  %w0 = dsc.load @"h.0.w" : tensor<4x4xf32>
  %l0 = dsc.linear %r0, %w0 : tensor<16x4xf32>, tensor<4x4xf32>
  %u0 = dsc.reshape %l0 : tensor<16x4xf32> -> tensor<2x8x4xf32>
  %x1 = dsc.add %x0, %u0 : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %r1 = dsc.reshape %x1 : tensor<2x8x4xf32> -> tensor<16x4xf32>
  %w1 = dsc.load @"h.1.w" : tensor<4x4xf32>
  %l1 = dsc.linear %r1, %w1 : tensor<16x4xf32>, tensor<4x4xf32>
  %u1 = dsc.reshape %l1 : tensor<16x4xf32> -> tensor<2x8x4xf32>
  %x2 = dsc.add %x1, %u1 : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %r2 = dsc.reshape %x2 : tensor<2x8x4xf32> -> tensor<16x4xf32>
  %w2 = dsc.load @"h.2.w" : tensor<4x4xf32>
  %l2 = dsc.linear %r2, %w2 : tensor<16x4xf32>, tensor<4x4xf32>
  %u2 = dsc.reshape %l2 : tensor<16x4xf32> -> tensor<2x8x4xf32>
  %x3 = dsc.add %x2, %u2 : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %r3 = dsc.reshape %x3 : tensor<2x8x4xf32> -> tensor<16x4xf32>
  %wh = dsc.load @"head.w" : tensor<4x4xf32>
  %h = dsc.linear %r3, %wh : tensor<16x4xf32>, tensor<4x4xf32>
  %l = dsc.reduce_mean %h, dims = [0, 1] : tensor<16x4xf32>
  return %l : tensor<f32>
}
