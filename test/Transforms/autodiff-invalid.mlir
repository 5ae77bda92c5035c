// RUN: dsc-opt %s --dsc-autodiff --split-input-file -verify-diagnostics

// An op without a gradient between a parameter and the loss is named.
dsc.state parameter @w : tensor<4xf32>
func.func @no_gradient() -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<4xf32>
  // expected-error @+1 {{'arith.addf' op has no gradient, but lies between a parameter and the loss}}
  %a = arith.addf %w, %w : tensor<4xf32>
  %loss = dsc.reduce_sum %a, dims = [0] : tensor<4xf32>
  return %loss : tensor<f32>
}

// -----

// A strided slice of a parameter is not differentiable.
dsc.state parameter @w : tensor<6xf32>
func.func @strided() -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<6xf32>
  // expected-error @+1 {{'dsc.slice' op has no gradient with step 2 (only step 1 is differentiable)}}
  %s = dsc.slice %w, dim = 0, start = 0, end = 6, step = 2 : tensor<6xf32>
  %loss = dsc.reduce_sum %s, dims = [0] : tensor<3xf32>
  return %loss : tensor<f32>
}

// -----

// The loss must be a scalar float.
dsc.state parameter @w : tensor<4xf32>
// expected-error @+1 {{the loss must be a scalar float tensor to differentiate, got 'tensor<4xf32>'}}
func.func @vector_loss() -> (tensor<4xf32> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

// dsc.gradient_of names a state.
// expected-error @+1 {{'dsc.gradient_of' must name a dsc.state, got "w"}}
func.func @bad_attr(%x: tensor<f32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}, tensor<f32> {dsc.output = "grad.w", dsc.gradient_of = "w"}) {
  return %x, %x : tensor<f32>, tensor<f32>
}
