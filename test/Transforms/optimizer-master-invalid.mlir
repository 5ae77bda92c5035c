// RUN: dsc-opt %s --dsc-optimizer -verify-diagnostics -split-input-file

// A state named like a parameter's master weight must be one: the update
// would otherwise write a tensor of another role or shape.
dsc.state parameter @w : tensor<4xbf16>
// expected-error @+1 {{is not the master weight of @w (a master state of the parameter's shape)}}
dsc.state optimizer @w.master : tensor<4xf32>
func.func @step(%x: tensor<4xbf16> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"},
        tensor<4xbf16> {dsc.output = "grad.w", dsc.gradient_of = @w}) {
  %l = dsc.constant dense<0.0> : tensor<f32>
  return %l, %x : tensor<f32>, tensor<4xbf16>
}

// -----

dsc.state parameter @w : tensor<4xbf16>
// expected-error @+1 {{is not the master weight of @w (a master state of the parameter's shape)}}
dsc.state master @w.master : tensor<2x2xf32>
func.func @step(%x: tensor<4xbf16> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"},
        tensor<4xbf16> {dsc.output = "grad.w", dsc.gradient_of = @w}) {
  %l = dsc.constant dense<0.0> : tensor<f32>
  return %l, %x : tensor<f32>, tensor<4xbf16>
}
