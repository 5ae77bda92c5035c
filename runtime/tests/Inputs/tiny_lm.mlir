// A tiny language model in the dsc dialect for dsc-run's CUDA tests
// (RunCudaToolTest.cpp), which compile it with dsc-compile --target=cuda
// (and --target=cpu, to compare) when they run: token embedding, a linear
// head with bias, cross-entropy against the targets. Micro batch 2,
// sequence 4, vocabulary 16, width 8.

dsc.state parameter @"wte.weight" : tensor<16x8xf32>
dsc.state parameter @"head.weight" : tensor<16x8xf32>
dsc.state parameter @"head.bias" : tensor<16xf32>

func.func @forward(%tokens: tensor<2x4xi64> {dsc.input = "tokens"},
                   %targets: tensor<2x4xi64> {dsc.input = "targets"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %wte = dsc.load @"wte.weight" : tensor<16x8xf32>
  %h = dsc.embedding %wte, %tokens : tensor<16x8xf32>, tensor<2x4xi64>
  %w = dsc.load @"head.weight" : tensor<16x8xf32>
  %b = dsc.load @"head.bias" : tensor<16xf32>
  %logits = dsc.linear %h, %w, %b : tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>
  %loss = dsc.cross_entropy %logits, %targets : tensor<2x4x16xf32>, tensor<2x4xi64>
  return %loss : tensor<f32>
}
