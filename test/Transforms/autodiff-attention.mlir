// RUN: dsc-opt %s --dsc-autodiff --split-input-file -verify-diagnostics | FileCheck %s

// dsc.attention's cotangents come from one dsc.attention_grad reading the
// forward's result and saved log-sum-exp; the mask and the flag carry over.
// CHECK-LABEL: func.func @attention
// CHECK: %[[O:.*]], %[[LSE:.*]] = dsc.attention %[[Q:[^,]*]], %[[K:[^,]*]], %[[V:[^ ]*]] mask(%[[M:.*]] : tensor<4x4xi1>) causal {scale = 5.000000e-01 : f64}
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = dsc.attention_grad %[[Q]], %[[K]], %[[V]], %[[O]], %{{.*}}, %[[LSE]] mask(%[[M]] : tensor<4x4xi1>) causal {scale = 5.000000e-01 : f64}
// CHECK: return %{{.*}}, %[[DQ]], %[[DK]], %[[DV]]
dsc.state parameter @q : tensor<1x2x4x8xf32>
dsc.state parameter @k : tensor<1x2x4x8xf32>
dsc.state parameter @v : tensor<1x2x4x8xf32>
func.func @attention(%keep: tensor<4x4xi1> {dsc.input = "keep"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %q = dsc.load @q : tensor<1x2x4x8xf32>
  %k = dsc.load @k : tensor<1x2x4x8xf32>
  %v = dsc.load @v : tensor<1x2x4x8xf32>
  %o, %lse = dsc.attention %q, %k, %v mask(%keep : tensor<4x4xi1>) causal {scale = 0.5 : f64}
      : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
      -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
  %loss = dsc.reduce_sum %o, dims = [0, 1, 2, 3] : tensor<1x2x4x8xf32>
  return %loss : tensor<f32>
}

// -----

// A loss that reads the log-sum-exp has no rule.
dsc.state parameter @q : tensor<1x1x4x8xf32>
func.func @lse_in_loss() -> (tensor<f32> {dsc.output = "loss"}) {
  %q = dsc.load @q : tensor<1x1x4x8xf32>
  // expected-error @+1 {{'dsc.attention' op has no gradient through its log-sum-exp result, which reaches the loss here}}
  %o, %lse = dsc.attention %q, %q, %q {scale = 0.5 : f64}
      : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>
      -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32>
  %loss = dsc.reduce_sum %lse, dims = [0, 1, 2] : tensor<1x1x4xf32>
  return %loss : tensor<f32>
}

// -----

// A trained additive mask (a learned bias) has no rule.
dsc.state parameter @q : tensor<1x1x4x8xf32>
dsc.state parameter @bias : tensor<4x4xf32>
func.func @trained_mask() -> (tensor<f32> {dsc.output = "loss"}) {
  %q = dsc.load @q : tensor<1x1x4x8xf32>
  %b = dsc.load @bias : tensor<4x4xf32>
  // expected-error @+1 {{'dsc.attention' op has no gradient with respect to its mask, which depends on a trained value here}}
  %o, %lse = dsc.attention %q, %q, %q mask(%b : tensor<4x4xf32>) {scale = 0.5 : f64}
      : tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>
      -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32>
  %loss = dsc.reduce_sum %o, dims = [0, 1, 2, 3] : tensor<1x1x4x8xf32>
  return %loss : tensor<f32>
}
