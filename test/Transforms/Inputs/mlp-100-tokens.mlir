// One ReLU MLP block on 100 tokens of width 4.
dsc.state parameter @"mlp.fc.weight" : tensor<8x4xf32>
dsc.state parameter @"mlp.proj.weight" : tensor<4x8xf32>
func.func @forward(%x: tensor<100x4xf32> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %w1 = dsc.load @"mlp.fc.weight" : tensor<8x4xf32>
  %h = dsc.linear %x, %w1 : tensor<100x4xf32>, tensor<8x4xf32>
  %a = dsc.relu %h : tensor<100x8xf32>
  %w2 = dsc.load @"mlp.proj.weight" : tensor<4x8xf32>
  %y = dsc.linear %a, %w2 : tensor<100x8xf32>, tensor<4x8xf32>
  %l = dsc.reduce_sum %y, dims = [0, 1] : tensor<100x4xf32>
  return %l : tensor<f32>
}
