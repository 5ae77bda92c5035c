// Element count x element size beyond int64, for a parameter and for an op.
// RUN: %expect_exit 1 dsc-opt %s -split-input-file 2>&1 | FileCheck %s

// 2^31 * 2^31 elements of 4 bytes = 2^64 bytes.
// CHECK: size-overflow.mlir:[[@LINE+1]]:1: error: 'dsc.state' op @big of type 'tensor<2147483648x2147483648xf32>' has more elements or bytes than fit in int64
dsc.state parameter @big : tensor<2147483648x2147483648xf32>

// -----

// 3 * 2^62 elements: the element count itself overflows.
func.func @f(%x: tensor<3x4611686018427387904xbf16>) {
  // CHECK: size-overflow.mlir:[[@LINE+1]]:8: error: 'dsc.exp' op operand #0 of type 'tensor<3x4611686018427387904xbf16>' has more elements or bytes than fit in int64
  %0 = dsc.exp %x : tensor<3x4611686018427387904xbf16>
  return
}
