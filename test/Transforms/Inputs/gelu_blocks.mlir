// Two residual blocks h.0 and h.1, each a linear (fc), a tanh GELU and a
// second linear (proj), then a head and a summed cross-entropy: the shape of
// a transformer's MLP, small enough to read the scheduled step.
dsc.state parameter @"h.0.fc" : tensor<16x8xf32>
dsc.state parameter @"h.0.proj" : tensor<8x16xf32>
dsc.state parameter @"h.1.fc" : tensor<16x8xf32>
dsc.state parameter @"h.1.proj" : tensor<8x16xf32>
dsc.state parameter @"head" : tensor<4x8xf32>
func.func @forward(%x: tensor<2x8xf32> {dsc.input = "x"}, %y: tensor<2xi64> {dsc.input = "y"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %fc0 = dsc.load @"h.0.fc" : tensor<16x8xf32>
  %a0 = dsc.linear %x, %fc0 : tensor<2x8xf32>, tensor<16x8xf32>
  %g0 = dsc.gelu tanh %a0 : tensor<2x16xf32>
  %proj0 = dsc.load @"h.0.proj" : tensor<8x16xf32>
  %b0 = dsc.linear %g0, %proj0 : tensor<2x16xf32>, tensor<8x16xf32>
  %h0 = dsc.add %x, %b0 : tensor<2x8xf32>, tensor<2x8xf32>
  %fc1 = dsc.load @"h.1.fc" : tensor<16x8xf32>
  %a1 = dsc.linear %h0, %fc1 : tensor<2x8xf32>, tensor<16x8xf32>
  %g1 = dsc.gelu tanh %a1 : tensor<2x16xf32>
  %proj1 = dsc.load @"h.1.proj" : tensor<8x16xf32>
  %b1 = dsc.linear %g1, %proj1 : tensor<2x16xf32>, tensor<8x16xf32>
  %h1 = dsc.add %h0, %b1 : tensor<2x8xf32>, tensor<2x8xf32>
  %wh = dsc.load @"head" : tensor<4x8xf32>
  %logits = dsc.linear %h1, %wh : tensor<2x8xf32>, tensor<4x8xf32>
  %loss = dsc.cross_entropy %logits, %y reduction = sum : tensor<2x4xf32>, tensor<2xi64>
  return %loss : tensor<f32>
}
