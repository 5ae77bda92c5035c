func.func @forward(%x: tensor<4xbf16> {dsc.input = "x"}) -> (tensor<4xbf16> {dsc.output = "y"}) {
  %0 = dsc.exp %x : tensor<4xbf16>
  return %0 : tensor<4xbf16>
}
