// RUN: dsc-opt %s --split-input-file --dsc-random-ltd=kept=2 -verify-diagnostics
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-random-ltd=kept=0 2>&1 | FileCheck %s --check-prefix=KEPT
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-random-ltd="kept=2 layers=3" 2>&1 | FileCheck %s --check-prefix=LAYER
// KEPT: error: --dsc-random-ltd: kept must be at least 1, got 0
// LAYER: error: --dsc-random-ltd: layer 3 does not exist (the model has 3 blocks)

// No repeated blocks.
module {
  dsc.state parameter @w : tensor<4x4xf32>
  // expected-error @+1 {{--dsc-random-ltd: the graph has no repeated blocks}}
  func.func @forward(%x: tensor<2x8x4xf32> {dsc.input = "x"})
      -> (tensor<f32> {dsc.output = "loss"}) {
    %w = dsc.load @w : tensor<4x4xf32>
    %y = dsc.linear %x, %w : tensor<2x8x4xf32>, tensor<4x4xf32>
    %l = dsc.reduce_mean %y, dims = [0, 1, 2] : tensor<2x8x4xf32>
    return %l : tensor<f32>
  }
}

// -----

// A block that reads a full-length buffer without a batch dimension: its
// rows would have to differ between the samples.
module {
  dsc.state parameter @"h.0.w" : tensor<4x4xf32>
  dsc.state parameter @"h.1.w" : tensor<4x4xf32>
  dsc.state parameter @"h.2.w" : tensor<4x4xf32>
  dsc.state buffer @"h.1.mask" : tensor<8x4xf32>
  func.func @forward(%x: tensor<2x8x4xf32> {dsc.input = "x"})
      -> (tensor<f32> {dsc.output = "loss"}) {
    %w0 = dsc.load @"h.0.w" : tensor<4x4xf32>
    %y0 = dsc.linear %x, %w0 : tensor<2x8x4xf32>, tensor<4x4xf32>
    %w1 = dsc.load @"h.1.w" : tensor<4x4xf32>
    %m1 = dsc.load @"h.1.mask" : tensor<8x4xf32>
    %y1 = dsc.linear %y0, %w1 : tensor<2x8x4xf32>, tensor<4x4xf32>
    // expected-error @+1 {{--dsc-random-ltd: block 'h.1' reads a full-length value that its hidden state does not flow into ('tensor<8x4xf32>'): only a mask with the batch first (or 1) can have its kept rows and columns gathered}}
    %z1 = dsc.mul %y1, %m1 : tensor<2x8x4xf32>, tensor<8x4xf32>
    %w2 = dsc.load @"h.2.w" : tensor<4x4xf32>
    %y2 = dsc.linear %z1, %w2 : tensor<2x8x4xf32>, tensor<4x4xf32>
    %l = dsc.reduce_mean %y2, dims = [0, 1, 2] : tensor<2x8x4xf32>
    return %l : tensor<f32>
  }
}

// -----

// A block that reads two hidden states.
module {
  dsc.state parameter @"h.0.w" : tensor<4x4xf32>
  dsc.state parameter @"h.1.w" : tensor<4x4xf32>
  dsc.state parameter @"h.2.w" : tensor<4x4xf32>
  func.func @forward(%x: tensor<2x8x4xf32> {dsc.input = "x"})
      -> (tensor<f32> {dsc.output = "loss"}) {
    %w0 = dsc.load @"h.0.w" : tensor<4x4xf32>
    %y0 = dsc.linear %x, %w0 : tensor<2x8x4xf32>, tensor<4x4xf32>
    // expected-error @+1 {{--dsc-random-ltd: block 'h.1' must read one hidden state and return one, got 2 and 1}}
    %w1 = dsc.load @"h.1.w" : tensor<4x4xf32>
    %y1 = dsc.linear %y0, %w1 : tensor<2x8x4xf32>, tensor<4x4xf32>
    %z1 = dsc.add %y1, %x : tensor<2x8x4xf32>, tensor<2x8x4xf32>
    %w2 = dsc.load @"h.2.w" : tensor<4x4xf32>
    %y2 = dsc.linear %z1, %w2 : tensor<2x8x4xf32>, tensor<4x4xf32>
    %l = dsc.reduce_mean %y2, dims = [0, 1, 2] : tensor<2x8x4xf32>
    return %l : tensor<f32>
  }
}

// -----

// A block that changes the hidden state's width.
module {
  dsc.state parameter @"h.0.w" : tensor<4x4xf32>
  dsc.state parameter @"h.1.w" : tensor<6x4xf32>
  dsc.state parameter @"h.2.w" : tensor<4x6xf32>
  func.func @forward(%x: tensor<2x8x4xf32> {dsc.input = "x"})
      -> (tensor<f32> {dsc.output = "loss"}) {
    %w0 = dsc.load @"h.0.w" : tensor<4x4xf32>
    %y0 = dsc.linear %x, %w0 : tensor<2x8x4xf32>, tensor<4x4xf32>
    // expected-error @+1 {{--dsc-random-ltd: block 'h.1' must map a [batch, seq, width] hidden state to one of the same type, got 'tensor<2x8x4xf32>' -> 'tensor<2x8x6xf32>'}}
    %w1 = dsc.load @"h.1.w" : tensor<6x4xf32>
    %y1 = dsc.linear %y0, %w1 : tensor<2x8x4xf32>, tensor<6x4xf32>
    %w2 = dsc.load @"h.2.w" : tensor<4x6xf32>
    %y2 = dsc.linear %y1, %w2 : tensor<2x8x6xf32>, tensor<4x6xf32>
    %l = dsc.reduce_mean %y2, dims = [0, 1, 2] : tensor<2x8x4xf32>
    return %l : tensor<f32>
  }
}
