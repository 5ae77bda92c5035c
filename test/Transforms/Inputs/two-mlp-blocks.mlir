// Two residual blocks with a GELU MLP each (GPT-2's c_fc / c_proj), then a
// SwiGLU block (Llama's gate_proj / up_proj / down_proj), on 8 tokens of
// width 4; the loss is a sum.
dsc.state parameter @"h.0.mlp.c_fc.weight" : tensor<16x4xf32>
dsc.state parameter @"h.0.mlp.c_fc.bias" : tensor<16xf32>
dsc.state parameter @"h.0.mlp.c_proj.weight" : tensor<4x16xf32>
dsc.state parameter @"h.0.mlp.c_proj.bias" : tensor<4xf32>
dsc.state parameter @"h.1.mlp.c_fc.weight" : tensor<16x4xf32>
dsc.state parameter @"h.1.mlp.c_fc.bias" : tensor<16xf32>
dsc.state parameter @"h.1.mlp.c_proj.weight" : tensor<4x16xf32>
dsc.state parameter @"h.1.mlp.c_proj.bias" : tensor<4xf32>
dsc.state parameter @"h.2.mlp.gate_proj.weight" : tensor<16x4xf32>
dsc.state parameter @"h.2.mlp.up_proj.weight" : tensor<16x4xf32>
dsc.state parameter @"h.2.mlp.down_proj.weight" : tensor<4x16xf32>
func.func @forward(%x: tensor<2x4x4xf32> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %x0 = dsc.reshape %x : tensor<2x4x4xf32> -> tensor<8x4xf32>
  %w0 = dsc.load @"h.0.mlp.c_fc.weight" : tensor<16x4xf32>
  %b0 = dsc.load @"h.0.mlp.c_fc.bias" : tensor<16xf32>
  %h0 = dsc.linear %x0, %w0, %b0 : tensor<8x4xf32>, tensor<16x4xf32>, tensor<16xf32>
  %g0 = dsc.gelu tanh %h0 : tensor<8x16xf32>
  %p0 = dsc.load @"h.0.mlp.c_proj.weight" : tensor<4x16xf32>
  %q0 = dsc.load @"h.0.mlp.c_proj.bias" : tensor<4xf32>
  %y0 = dsc.linear %g0, %p0, %q0 : tensor<8x16xf32>, tensor<4x16xf32>, tensor<4xf32>
  %x1 = dsc.add %x0, %y0 : tensor<8x4xf32>, tensor<8x4xf32>
  %w1 = dsc.load @"h.1.mlp.c_fc.weight" : tensor<16x4xf32>
  %b1 = dsc.load @"h.1.mlp.c_fc.bias" : tensor<16xf32>
  %h1 = dsc.linear %x1, %w1, %b1 : tensor<8x4xf32>, tensor<16x4xf32>, tensor<16xf32>
  %r1 = dsc.reshape %h1 : tensor<8x16xf32> -> tensor<2x4x16xf32>
  %g1 = dsc.relu %r1 : tensor<2x4x16xf32>
  %s1 = dsc.reshape %g1 : tensor<2x4x16xf32> -> tensor<8x16xf32>
  %p1 = dsc.load @"h.1.mlp.c_proj.weight" : tensor<4x16xf32>
  %q1 = dsc.load @"h.1.mlp.c_proj.bias" : tensor<4xf32>
  %y1 = dsc.linear %s1, %p1, %q1 : tensor<8x16xf32>, tensor<4x16xf32>, tensor<4xf32>
  %x2 = dsc.add %x1, %y1 : tensor<8x4xf32>, tensor<8x4xf32>
  %wg = dsc.load @"h.2.mlp.gate_proj.weight" : tensor<16x4xf32>
  %wu = dsc.load @"h.2.mlp.up_proj.weight" : tensor<16x4xf32>
  %hg = dsc.linear %x2, %wg : tensor<8x4xf32>, tensor<16x4xf32>
  %hu = dsc.linear %x2, %wu : tensor<8x4xf32>, tensor<16x4xf32>
  %a2 = dsc.silu %hg : tensor<8x16xf32>
  %m2 = dsc.mul %a2, %hu : tensor<8x16xf32>, tensor<8x16xf32>
  %wd = dsc.load @"h.2.mlp.down_proj.weight" : tensor<4x16xf32>
  %y2 = dsc.linear %m2, %wd : tensor<8x16xf32>, tensor<4x16xf32>
  %x3 = dsc.add %x2, %y2 : tensor<8x4xf32>, tensor<8x4xf32>
  %loss = dsc.reduce_sum %x3, dims = [0, 1] : tensor<8x4xf32>
  return %loss : tensor<f32>
}
