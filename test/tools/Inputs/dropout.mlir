func.func @forward(%x: tensor<4xf64> {dsc.input = "x"}) -> (tensor<4xf64> {dsc.output = "y"}) {
  %key = dsc.step_key : tensor<4xi64>
  %0 = dsc.dropout %x, %key, p = 0.1, seed = 1234, samples = 4 : tensor<4xf64>
  return %0 : tensor<4xf64>
}
