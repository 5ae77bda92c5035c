// Negative dimensions are rejected by the type parser, in a dsc.state type
// and in an op's operand types alike.
// RUN: %expect_exit 1 dsc-opt %s -split-input-file 2>&1 | FileCheck %s

// CHECK: negative-dims.mlir:[[@LINE+1]]:35: error: expected non-function type
dsc.state parameter @w : tensor<4x-2xf32>

// -----

// CHECK: negative-dims.mlir:[[@LINE+1]]:25: error: expected non-function type
func.func @f(%x: tensor<-1x4xf32>) {
  return
}
