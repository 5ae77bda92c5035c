// RUN: dsc-opt %s --dsc-autodiff --dsc-checkpoint-activations --split-input-file | FileCheck %s
// RUN: dsc-opt %s --dsc-autodiff --dsc-checkpoint-activations="budget=130 print=true" --split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: dsc-opt %s --dsc-autodiff --dsc-checkpoint-activations="print=true" --split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=PRINT

// Two residual blocks (h.0, h.1) and a head. The forward keeps only the
// residual stream (%arg0, h0, h1): each block's linear and tanh are
// recomputed right before the first backward op that reads them, in the
// order the backward reaches them (h.1 first), from the block's input.
// CHECK-LABEL: func.func @two_blocks
// CHECK: %[[W0:.*]] = dsc.load @h.0.w
// CHECK: %[[L0:.*]] = dsc.linear %arg0, %[[W0]]
// CHECK: %[[T0:.*]] = dsc.tanh %[[L0]]
// CHECK: %[[H0:.*]] = dsc.add %arg0, %[[T0]]
// CHECK: %[[W1:.*]] = dsc.load @h.1.w
// CHECK: %[[L1:.*]] = dsc.linear %[[H0]], %[[W1]]
// CHECK: %[[T1:.*]] = dsc.tanh %[[L1]]
// CHECK: %[[H1:.*]] = dsc.add %[[H0]], %[[T1]]
// CHECK: dsc.cross_entropy
// The forward's tanh results are read by nothing after the forward.
// CHECK-NOT: %[[T0]]{{[ ,]}}
// CHECK-NOT: %[[T1]]{{[ ,]}}
// CHECK: %[[DH1:.*]] = dsc.matmul %{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<3x4xf32>
// CHECK: %[[RL1:.*]] = dsc.linear %[[H0]], %[[W1]] {dsc.recomputed}
// CHECK-NEXT: %[[RT1:.*]] = dsc.tanh %[[RL1]] {dsc.recomputed}
// CHECK-NEXT: dsc.mul %[[RT1]], %[[RT1]]
// CHECK-NOT: %[[T0]]{{[ ,]}}
// CHECK: dsc.matmul %{{.*}}, %[[H0]] transpose_lhs
// CHECK: %[[RL0:.*]] = dsc.linear %arg0, %[[W0]] {dsc.recomputed}
// CHECK-NEXT: %[[RT0:.*]] = dsc.tanh %[[RL0]] {dsc.recomputed}
// CHECK-NEXT: dsc.mul %[[RT0]], %[[RT0]]
// CHECK: return
// BUDGET: @two_blocks: recomputing 1 of 2 blocks h.0; activations kept for the backward: 152 -> ~120 bytes
// PRINT: @two_blocks: recomputing 2 of 2 blocks h.0 h.1; activations kept for the backward: 152 -> ~120 bytes
dsc.state parameter @"h.0.w" : tensor<4x4xf32>
dsc.state parameter @"h.1.w" : tensor<4x4xf32>
dsc.state parameter @"head.w" : tensor<3x4xf32>
func.func @two_blocks(%x: tensor<2x4xf32> {dsc.input = "x"}, %y: tensor<2xi64> {dsc.input = "y"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %w0 = dsc.load @"h.0.w" : tensor<4x4xf32>
  %l0 = dsc.linear %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %t0 = dsc.tanh %l0 : tensor<2x4xf32>
  %h0 = dsc.add %x, %t0 : tensor<2x4xf32>, tensor<2x4xf32>
  %w1 = dsc.load @"h.1.w" : tensor<4x4xf32>
  %l1 = dsc.linear %h0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
  %t1 = dsc.tanh %l1 : tensor<2x4xf32>
  %h1 = dsc.add %h0, %t1 : tensor<2x4xf32>, tensor<2x4xf32>
  %wh = dsc.load @"head.w" : tensor<3x4xf32>
  %logits = dsc.linear %h1, %wh : tensor<2x4xf32>, tensor<3x4xf32>
  %loss = dsc.cross_entropy %logits, %y reduction = sum : tensor<2x3xf32>, tensor<2xi64>
  return %loss : tensor<f32>
}

// -----

// A dropout is recomputed like any pure op: the clone reads the same step
// key (kept, not recomputed) and so draws the same mask. The block boundary
// is where the fewest bytes cross: after the residual add of block 0, not at
// the normalization statistics (%sq, %ms) that block 1 computes before it
// loads its first parameter.
// CHECK-LABEL: func.func @dropout_and_boundary
// CHECK: %[[K:.*]] = dsc.step_key : tensor<4xi64>
// CHECK: %[[D:.*]] = dsc.dropout %{{.*}}, %[[K]], p = 1.000000e-01, seed = 7, samples = 2 :
// CHECK: %[[H0:.*]] = dsc.add %arg0, %{{.*}}
// CHECK: %[[SQ:.*]] = dsc.mul %[[H0]], %[[H0]]
// CHECK: %[[MS:.*]] = dsc.reduce_mean %[[SQ]]
// CHECK: dsc.cross_entropy
// CHECK-NOT: dsc.recomputed
// CHECK: %[[RSQ:.*]] = dsc.mul %[[H0]], %[[H0]] {dsc.recomputed}
// CHECK-NEXT: %[[RMS:.*]] = dsc.reduce_mean %[[RSQ]], dims = [1] keep_dims {dsc.recomputed}
// CHECK-NEXT: dsc.mul %[[RMS]], %{{.*}} {dsc.recomputed}
// CHECK: %[[RL:.*]] = dsc.linear %arg0, %{{.*}} {dsc.recomputed}
// CHECK-NEXT: %[[RD:.*]] = dsc.dropout %[[RL]], %[[K]], p = 1.000000e-01, seed = 7, samples = 2 {dsc.recomputed}
// CHECK-NEXT: dsc.tanh %[[RD]] {dsc.recomputed}
// CHECK-NOT: dsc.recomputed
// CHECK: dsc.dropout %{{.*}}, %[[K]], p = 1.000000e-01, seed = 7, samples = 2 :
// CHECK: return
// PRINT: @dropout_and_boundary: recomputing 2 of 2 blocks h.0 h.1
dsc.state parameter @"h.0.w" : tensor<4x4xf32>
dsc.state parameter @"h.1.w" : tensor<2x1xf32>
func.func @dropout_and_boundary(%x: tensor<2x4xf32> {dsc.input = "x"}, %y: tensor<2xi64> {dsc.input = "y"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %w0 = dsc.load @"h.0.w" : tensor<4x4xf32>
  %l0 = dsc.linear %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %key = dsc.step_key : tensor<4xi64>
  %d0 = dsc.dropout %l0, %key, p = 0.1, seed = 7, samples = 2 : tensor<2x4xf32>
  %t0 = dsc.tanh %d0 : tensor<2x4xf32>
  %h0 = dsc.add %x, %t0 : tensor<2x4xf32>, tensor<2x4xf32>
  %sq = dsc.mul %h0, %h0 : tensor<2x4xf32>, tensor<2x4xf32>
  %ms = dsc.reduce_mean %sq, dims = [1] keep_dims : tensor<2x4xf32>
  %w1 = dsc.load @"h.1.w" : tensor<2x1xf32>
  %s1 = dsc.mul %ms, %w1 : tensor<2x1xf32>, tensor<2x1xf32>
  %n1 = dsc.mul %h0, %s1 : tensor<2x4xf32>, tensor<2x1xf32>
  %loss = dsc.cross_entropy %n1, %y reduction = sum : tensor<2x4xf32>, tensor<2xi64>
  return %loss : tensor<f32>
}

// -----

// A graph without a backward (not differentiated, e.g. an eval graph) has
// nothing to recompute and is left as it is.
// CHECK-LABEL: func.func @eval
// CHECK-NOT: dsc.recomputed
dsc.state parameter @"h.0.w" : tensor<4xf32>
dsc.state parameter @"h.1.w" : tensor<4xf32>
func.func @eval(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "value"}) {
  %w0 = dsc.load @"h.0.w" : tensor<4xf32>
  %a = dsc.mul %x, %w0 : tensor<4xf32>, tensor<4xf32>
  %w1 = dsc.load @"h.1.w" : tensor<4xf32>
  %b = dsc.mul %a, %w1 : tensor<4xf32>, tensor<4xf32>
  %s = dsc.reduce_sum %b, dims = [0] : tensor<4xf32>
  return %s : tensor<f32>
}
