// RUN: dsc-opt %s --split-input-file --dsc-moe="experts=4 top-k=2" -verify-diagnostics

// Random gating (here top-2's second-expert sampling, on by default) numbers
// its draws by sample: a graph without inputs has no micro-batch.
module {
  dsc.state parameter @"mlp.c_fc.weight" : tensor<16x4xf32>
  dsc.state parameter @"mlp.c_proj.weight" : tensor<4x16xf32>
  func.func @forward(%x: tensor<8x4xf32>) -> (tensor<f32> {dsc.output = "loss"}) {
    %w1 = dsc.load @"mlp.c_fc.weight" : tensor<16x4xf32>
    %h = dsc.linear %x, %w1 : tensor<8x4xf32>, tensor<16x4xf32>
    %a = dsc.relu %h : tensor<8x16xf32>
    %w2 = dsc.load @"mlp.c_proj.weight" : tensor<4x16xf32>
    // expected-error @+1 {{--dsc-moe: random gating numbers its draws by sample, but the graph's micro-batch (its inputs' leading dimension) is unknown}}
    %y = dsc.linear %a, %w2 : tensor<8x16xf32>, tensor<4x16xf32>
    %l = dsc.reduce_sum %y, dims = [0, 1] : tensor<8x4xf32>
    return %l : tensor<f32>
  }
}

// -----

// 3 samples do not divide 8 tokens.
module {
  dsc.state parameter @"mlp.c_fc.weight" : tensor<16x4xf32>
  dsc.state parameter @"mlp.c_proj.weight" : tensor<4x16xf32>
  func.func @forward(%x: tensor<8x4xf32>, %t: tensor<3xi64> {dsc.input = "tokens"})
      -> (tensor<f32> {dsc.output = "loss"}) {
    %w1 = dsc.load @"mlp.c_fc.weight" : tensor<16x4xf32>
    %h = dsc.linear %x, %w1 : tensor<8x4xf32>, tensor<16x4xf32>
    %a = dsc.relu %h : tensor<8x16xf32>
    %w2 = dsc.load @"mlp.c_proj.weight" : tensor<4x16xf32>
    // expected-error @+1 {{the graph's micro-batch (its inputs' leading dimension) does not divide the 8 tokens}}
    %y = dsc.linear %a, %w2 : tensor<8x16xf32>, tensor<4x16xf32>
    %l = dsc.reduce_sum %y, dims = [0, 1] : tensor<8x4xf32>
    return %l : tensor<f32>
  }
}
