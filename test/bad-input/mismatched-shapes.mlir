// RUN: %expect_exit 1 dsc-opt %s 2>&1 | FileCheck %s

func.func @attention(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x32xf32>) {
  // CHECK: mismatched-shapes.mlir:[[@LINE+1]]:8: error: 'dsc.matmul' op contracting dimensions differ: lhs has 16, rhs has 32
  %s = dsc.matmul %q, %k transpose_rhs : tensor<2x4x8x16xf32>, tensor<2x4x8x32xf32>
  return
}
