// Cross-entropies and tables that --dsc-tensor-parallel="vocab-parallel=1"
// cannot split by vocabulary rows: each a located error.
// RUN: dsc-opt %s --split-input-file --dsc-data-parallel="world-size=4 tensor-parallel=4" --dsc-tensor-parallel="vocab-parallel=1" -verify-diagnostics

// A vocabulary of 6 over 4 ranks: dsc does not pad the table.
module {
  dsc.state parameter @head : tensor<6x4xf32>
  func.func @forward(%x: tensor<2x4xf32> {dsc.input = "x"}, %t: tensor<2xi64> {dsc.input = "targets"}) -> (tensor<f32> {dsc.output = "loss"}) {
    %w = dsc.load @head : tensor<6x4xf32>
    %z = dsc.linear %x, %w : tensor<2x4xf32>, tensor<6x4xf32>
    // expected-error @+1 {{--dsc-tensor-parallel: cannot split the vocabulary of 6 over the 4 ranks of a tensor group: 4 must divide it (pad the vocabulary when exporting)}}
    %loss = dsc.cross_entropy %z, %t : tensor<2x6xf32>, tensor<2xi64>
    return %loss : tensor<f32>
  }
}

// -----

// Logits that no linear map of a parameter computes.
module {
  func.func @forward(%z: tensor<2x8xf32> {dsc.input = "x"}, %t: tensor<2xi64> {dsc.input = "targets"}) -> (tensor<f32> {dsc.output = "loss"}) {
    // expected-error @+1 {{--dsc-tensor-parallel: cannot split this cross-entropy by vocabulary: its logits are not a linear map of a parameter (through reshapes that nothing else reads)}}
    %loss = dsc.cross_entropy %z, %t : tensor<2x8xf32>, tensor<2xi64>
    return %loss : tensor<f32>
  }
}

// -----

// A tied table whose lookup has a padding row.
module {
  dsc.state parameter @wte : tensor<8x4xf32>
  func.func @forward(%ids: tensor<2xi64> {dsc.input = "tokens"}, %t: tensor<2xi64> {dsc.input = "targets"}) -> (tensor<f32> {dsc.output = "loss"}) {
    %w = dsc.load @wte : tensor<8x4xf32>
    // expected-error @+1 {{--dsc-tensor-parallel: cannot split an embedding with padding_idx by vocabulary rows (its zero-gradient row is one rank's)}}
    %h = dsc.embedding %w, %ids padding_idx = 0 : tensor<8x4xf32>, tensor<2xi64>
    %z = dsc.linear %h, %w : tensor<2x4xf32>, tensor<8x4xf32>
    %loss = dsc.cross_entropy %z, %t : tensor<2x8xf32>, tensor<2xi64>
    return %loss : tensor<f32>
  }
}

// -----

// A head whose table another op reads whole.
module {
  dsc.state parameter @head : tensor<8x4xf32>
  func.func @forward(%x: tensor<2x4xf32> {dsc.input = "x"}, %t: tensor<2xi64> {dsc.input = "targets"}) -> (tensor<f32> {dsc.output = "loss"}) {
    %w = dsc.load @head : tensor<8x4xf32>
    %z = dsc.linear %x, %w : tensor<2x4xf32>, tensor<8x4xf32>
    %loss = dsc.cross_entropy %z, %t : tensor<2x8xf32>, tensor<2xi64>
    // expected-error @+1 {{--dsc-tensor-parallel: @head is split by vocabulary rows, but this op reads it whole}}
    %r = dsc.reduce_sum %w, dims = [0, 1] : tensor<8x4xf32>
    %sum = dsc.add %loss, %r : tensor<f32>, tensor<f32>
    return %sum : tensor<f32>
  }
}
