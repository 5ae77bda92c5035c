// RUN: dsc-opt %s --dsc-autodiff --dsc-checkpoint-activations="budget=8" -verify-diagnostics -split-input-file
// RUN: not dsc-opt %s --dsc-checkpoint-activations="segments=layers" -split-input-file 2>&1 | FileCheck %s --check-prefix=SEGMENTS
// RUN: not dsc-opt %s --dsc-checkpoint-activations="budget=-1" -split-input-file 2>&1 | FileCheck %s --check-prefix=BUDGET
// SEGMENTS: error: unknown segments 'layers'; expected blocks
// BUDGET: error: budget must be >= 0 bytes, got -1

// No parameter names a repeated block (<prefix>.<i>. for two indices i).
dsc.state parameter @"h.0.w" : tensor<4xf32>
dsc.state parameter @"head.w" : tensor<4xf32>
// expected-error @+1 {{found no repeated blocks to checkpoint: no parameter is named <prefix>.<i>.<name> for two indices i}}
func.func @no_blocks(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %w0 = dsc.load @"h.0.w" : tensor<4xf32>
  %a = dsc.mul %x, %w0 : tensor<4xf32>, tensor<4xf32>
  %t = dsc.tanh %a : tensor<4xf32>
  %w1 = dsc.load @"head.w" : tensor<4xf32>
  %b = dsc.mul %t, %w1 : tensor<4xf32>, tensor<4xf32>
  %loss = dsc.reduce_sum %b, dims = [0] : tensor<4xf32>
  return %loss : tensor<f32>
}

// -----

// A budget below what recomputing every block keeps is a warning, and every
// block is recomputed.
dsc.state parameter @"h.0.w" : tensor<4xf32>
dsc.state parameter @"h.1.w" : tensor<4xf32>
// expected-warning @+1 {{activation budget 8 bytes not met: recomputing all 2 blocks keeps an estimated 32 bytes for the backward}}
func.func @budget(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %w0 = dsc.load @"h.0.w" : tensor<4xf32>
  %a = dsc.mul %x, %w0 : tensor<4xf32>, tensor<4xf32>
  %t = dsc.tanh %a : tensor<4xf32>
  %w1 = dsc.load @"h.1.w" : tensor<4xf32>
  %b = dsc.mul %t, %w1 : tensor<4xf32>, tensor<4xf32>
  %u = dsc.tanh %b : tensor<4xf32>
  %loss = dsc.reduce_sum %u, dims = [0] : tensor<4xf32>
  return %loss : tensor<f32>
}
