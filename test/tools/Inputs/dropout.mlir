func.func @forward(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<4xf32> {dsc.output = "y"}) {
  %0 = dsc.dropout %x, p = 0.1, seed = 1234 : tensor<4xf32>
  return %0 : tensor<4xf32>
}
