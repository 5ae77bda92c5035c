// A one-parameter model whose gradient overflows when the data says so:
// loss = w * exp(token), so a token of 0 gives the gradient 1 (times the
// loss scale) and a token of 200 gives inf. loss-scale.test drives dsc's
// loss scaler through a chosen sequence of clean and overflowing steps.
dsc.state parameter @w : tensor<1xf32>
func.func @forward(%tokens: tensor<1x1xi64> {dsc.input = "tokens"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<1xf32>
  %t = dsc.convert %tokens : tensor<1x1xi64> to tensor<1x1xf32>
  %e = dsc.exp %t : tensor<1x1xf32>
  %p = dsc.mul %e, %w : tensor<1x1xf32>, tensor<1xf32>
  %l = dsc.reduce_sum %p, dims = [0, 1] : tensor<1x1xf32>
  return %l : tensor<f32>
}
