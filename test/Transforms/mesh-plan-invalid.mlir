// RUN: dsc-opt %s -split-input-file -verify-diagnostics --dsc-plan="world-size=4 global-batch=8"

// A training step is not a model to plan: its graph holds the backward.
dsc.state parameter @w : tensor<4x4xf32>
// expected-error@+1 {{--dsc-plan plans the exported model; this module is already a training step}}
dsc.state optimizer @"w.exp_avg" : tensor<4x4xf32>

// -----

// No embedding of a parameter table: nothing says the model's width.
dsc.state parameter @"h.0.w" : tensor<4x4xf32>
dsc.state parameter @"h.1.w" : tensor<4x4xf32>
// expected-error@+1 {{--dsc-plan: no token embedding}}
func.func @forward(%x: tensor<2x4xf32> {dsc.input = "x"}) -> (tensor<2x4xf32> {dsc.output = "y"}) {
  %w = dsc.load @"h.0.w" : tensor<4x4xf32>
  %y = dsc.linear %x, %w : tensor<2x4xf32>, tensor<4x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// An embedding but no repeated blocks.
dsc.state parameter @wte : tensor<16x4xf32>
// expected-error@+1 {{--dsc-plan: no repeated blocks}}
func.func @forward(%ids: tensor<2x3xi64> {dsc.input = "ids"}) -> (tensor<2x3x4xf32> {dsc.output = "y"}) {
  %wte = dsc.load @wte : tensor<16x4xf32>
  %y = dsc.embedding %wte, %ids : tensor<16x4xf32>, tensor<2x3xi64>
  return %y : tensor<2x3x4xf32>
}
