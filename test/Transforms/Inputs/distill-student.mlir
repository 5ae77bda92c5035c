// A one-layer language model over 8 classes: the student of distill.mlir.
dsc.state parameter @"wte.weight" : tensor<8x4xf32>
dsc.state parameter @"lm_head.weight" : tensor<8x4xf32>
func.func @forward(%tokens: tensor<2x3xi64> {dsc.input = "tokens"},
                   %targets: tensor<2x3xi64> {dsc.input = "targets"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %wte = dsc.load @"wte.weight" : tensor<8x4xf32>
  %x = dsc.embedding %wte, %tokens : tensor<8x4xf32>, tensor<2x3xi64>
  %w = dsc.load @"lm_head.weight" : tensor<8x4xf32>
  %logits = dsc.linear %x, %w : tensor<2x3x4xf32>, tensor<8x4xf32>
  %flat = dsc.reshape %logits : tensor<2x3x8xf32> -> tensor<6x8xf32>
  %t = dsc.reshape %targets : tensor<2x3xi64> -> tensor<6xi64>
  %loss = dsc.cross_entropy %flat, %t : tensor<6x8xf32>, tensor<6xi64>
  return %loss : tensor<f32>
}
