// RUN: dsc-opt %s --split-input-file --dsc-sequence-length=length=4 -verify-diagnostics
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-sequence-length=length=9 2>&1 | FileCheck %s --check-prefix=LONG
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-sequence-length=length=0 2>&1 | FileCheck %s --check-prefix=ZERO
// LONG: error: --dsc-sequence-length: length 9 exceeds the inputs' sequence length 8
// ZERO: error: --dsc-sequence-length: length must be at least 1, got 0

// No input with a sequence dimension.
// expected-error @+1 {{--dsc-sequence-length: no graph input has a sequence dimension ([batch, seq, ...])}}
func.func @forward(%x: tensor<8xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %l = dsc.reduce_mean %x, dims = [0] : tensor<8xf32>
  return %l : tensor<f32>
}

// -----

// An output that keeps the sequence dimension cannot change its type.
func.func @forward(%x: tensor<2x8xf32> {dsc.input = "x"}) -> (tensor<2x8xf32> {dsc.output = "y"}) {
  %y = dsc.neg %x : tensor<2x8xf32>
  // expected-error @+1 {{a graph output depends on the sequence length: cannot shorten it}}
  return %y : tensor<2x8xf32>
}

// -----

// A reshape that folds the sequence dimension into a split it does not divide.
func.func @forward(%x: tensor<2x8xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  // expected-error @+1 {{cannot follow the sequence dimension through this reshape}}
  %r = dsc.reshape %x : tensor<2x8xf32> -> tensor<4x4xf32>
  %l = dsc.reduce_mean %r, dims = [0, 1] : tensor<4x4xf32>
  return %l : tensor<f32>
}

// -----

// A value the inputs do not flow into, met elementwise along a dimension
// that merges the batch with the sequence: no prefix of it is the cut.
func.func @forward(%x: tensor<2x8xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %r = dsc.reshape %x : tensor<2x8xf32> -> tensor<16xf32>
  %t = dsc.constant dense<1.0> : tensor<16xf32>
  // expected-error @+1 {{cannot cut this operand to the sequence length}}
  %y = dsc.mul %r, %t : tensor<16xf32>, tensor<16xf32>
  %l = dsc.reduce_mean %y, dims = [0] : tensor<16xf32>
  return %l : tensor<f32>
}
