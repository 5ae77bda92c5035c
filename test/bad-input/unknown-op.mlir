// An op of an unregistered dialect, and an unknown op of the dsc dialect.
// RUN: %expect_exit 1 dsc-opt %s -split-input-file 2>&1 | FileCheck %s

// CHECK: unknown-op.mlir:[[@LINE+1]]:1: error: Dialect `foo' not found for custom op 'foo.bar'
foo.bar

// -----

func.func @f(%x: tensor<4xf32>) {
  // CHECK: unknown-op.mlir:[[@LINE+1]]:8: error: custom op 'dsc.frobnicate' is unknown
  %0 = dsc.frobnicate %x : tensor<4xf32>
  return
}

// -----

// CHECK: unknown-op.mlir:[[@LINE+1]]:{{[0-9]+}}: error: operation being parsed with an unregistered dialect
"foo.baz"() : () -> ()
