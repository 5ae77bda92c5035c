// A file that ends in the middle of an op.
// RUN: %expect_exit 1 dsc-opt %s 2>&1 | FileCheck %s
// CHECK: truncated.mlir:6:{{[0-9]+}}: error:

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dsc.relu %x : tensor<4x