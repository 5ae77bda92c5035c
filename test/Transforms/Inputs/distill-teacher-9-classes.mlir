// A two-layer teacher over 9 classes, which the student of distill-invalid.mlir
// does not have.
dsc.state parameter @"wte.weight" : tensor<9x4xf32>
dsc.state parameter @"h.0.mlp.c_fc.weight" : tensor<4x4xf32>
dsc.state buffer @"h.0.scale" : tensor<4xf32>
dsc.state parameter @"lm_head.weight" : tensor<9x4xf32>
func.func @forward(%tokens: tensor<2x3xi64> {dsc.input = "tokens"},
                   %targets: tensor<2x3xi64> {dsc.input = "targets"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %wte = dsc.load @"wte.weight" : tensor<9x4xf32>
  %x = dsc.embedding %wte, %tokens : tensor<9x4xf32>, tensor<2x3xi64>
  %fc = dsc.load @"h.0.mlp.c_fc.weight" : tensor<4x4xf32>
  %h = dsc.linear %x, %fc : tensor<2x3x4xf32>, tensor<4x4xf32>
  %key = dsc.step_key : tensor<4xi64>
  %d = dsc.dropout %h, %key, p = 0.1, seed = 1234, samples = 2 : tensor<2x3x4xf32>
  %s = dsc.load @"h.0.scale" : tensor<4xf32>
  %y = dsc.mul %d, %s : tensor<2x3x4xf32>, tensor<4xf32>
  %w = dsc.load @"lm_head.weight" : tensor<9x4xf32>
  %logits = dsc.linear %y, %w : tensor<2x3x4xf32>, tensor<9x4xf32>
  %flat = dsc.reshape %logits : tensor<2x3x9xf32> -> tensor<6x9xf32>
  %t = dsc.reshape %targets : tensor<2x3xi64> -> tensor<6xi64>
  %loss = dsc.cross_entropy %flat, %t : tensor<6x9xf32>, tensor<6xi64>
  return %loss : tensor<f32>
}
