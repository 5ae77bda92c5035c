// GPT-2 124M's loss alone as a step: per-token cross-entropy over 50257
// classes for 4 x 128 tokens, for timing the classifier inside a compiled
// step (docs/BENCHMARKS.md). The targets pass through a conversion so that
// dsc-run does not bound the data by the vocabulary.
dsc.state parameter @"logits" : tensor<4x128x50257xf32>

func.func @forward(%tokens: tensor<4x128xi64> {dsc.input = "tokens"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %narrow = dsc.convert %tokens : tensor<4x128xi64> to tensor<4x128xi32>
  %ids = dsc.convert %narrow : tensor<4x128xi32> to tensor<4x128xi64>
  %logits = dsc.load @"logits" : tensor<4x128x50257xf32>
  %loss = dsc.cross_entropy %logits, %ids : tensor<4x128x50257xf32>, tensor<4x128xi64>
  return %loss : tensor<f32>
}
