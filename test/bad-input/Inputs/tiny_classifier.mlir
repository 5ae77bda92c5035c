// A tiny classifier in the dsc dialect for the data-samples-* bad-input
// tests: float features [2, 4], int64 labels [2] in [0, 3) (ignore_index 0
// lies among the classes, so the artifact records the bound 3), one linear
// layer, cross-entropy. Inputs/data_samples.py writes its weights and data.

dsc.state parameter @"fc.weight" : tensor<3x4xf32>
dsc.state parameter @"fc.bias" : tensor<3xf32>

func.func @forward(%features: tensor<2x4xf32> {dsc.input = "features"},
                   %labels: tensor<2xi64> {dsc.input = "labels"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @"fc.weight" : tensor<3x4xf32>
  %b = dsc.load @"fc.bias" : tensor<3xf32>
  %logits = dsc.linear %features, %w, %b : tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>
  %loss = dsc.cross_entropy %logits, %labels ignore_index = 0 reduction = mean : tensor<2x3xf32>, tensor<2xi64>
  return %loss : tensor<f32>
}
