// A sequence that the tensor group cannot split: a located error.
// RUN: dsc-opt %s --split-input-file --dsc-data-parallel="world-size=2 tensor-parallel=2" --dsc-tensor-parallel="sequence-parallel=1" -verify-diagnostics

// Two samples of 3 tokens: 2 ranks cannot hold 3/2 tokens each.
dsc.state parameter @"h.0.mlp.c_fc.weight" : tensor<16x4xf32>
dsc.state parameter @"h.0.mlp.c_proj.weight" : tensor<4x16xf32>
// expected-error @+1 {{--dsc-tensor-parallel=sequence-parallel: the sequence of 3 tokens does not divide over the 2 ranks of a tensor group}}
func.func @forward(%x: tensor<2x3x4xf32> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %x0 = dsc.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %w0 = dsc.load @"h.0.mlp.c_fc.weight" : tensor<16x4xf32>
  %h0 = dsc.linear %x0, %w0 : tensor<6x4xf32>, tensor<16x4xf32>
  %g0 = dsc.gelu tanh %h0 : tensor<6x16xf32>
  %p0 = dsc.load @"h.0.mlp.c_proj.weight" : tensor<4x16xf32>
  %y0 = dsc.linear %g0, %p0 : tensor<6x16xf32>, tensor<4x16xf32>
  %x1 = dsc.add %x0, %y0 : tensor<6x4xf32>, tensor<6x4xf32>
  %l = dsc.reduce_sum %x1, dims = [0, 1] : tensor<6x4xf32>
  return %l : tensor<f32>
}
