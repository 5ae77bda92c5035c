func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dsc.relu %x : tensor<4x
