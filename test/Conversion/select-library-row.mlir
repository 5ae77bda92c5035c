// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library | FileCheck %s

// Softmax, log-softmax and layer norm are the library's row kernels;
// per-token cross-entropy with i64 targets its classifier.

// CHECK-LABEL: func.func @step()
func.func @forward(%x: tensor<4x8xf32>, %t: tensor<4xi64>, %t32: tensor<4xi32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) {
  // CHECK: dscrt.kernel "row" on
  // CHECK: dsc.softmax
  %s = dsc.softmax %x, dim = 1 : tensor<4x8xf32>
  // CHECK: dscrt.kernel "row" on
  // CHECK: dsc.log_softmax
  %l = dsc.log_softmax %x, dim = 0 : tensor<4x8xf32>
  // CHECK: dscrt.kernel "row" on
  // CHECK: dsc.layer_norm
  %n = dsc.layer_norm %x : tensor<4x8xf32>
  // CHECK: dscrt.kernel "classifier" on
  // CHECK: dsc.cross_entropy
  %c = dsc.cross_entropy %x, %t reduction = none : tensor<4x8xf32>, tensor<4xi64>
  // i32 targets are not among the types the selection takes (f32, bf16,
  // f16, i64): generated loops.
  // CHECK: dscrt.kernel on
  // CHECK: dsc.cross_entropy
  %d = dsc.cross_entropy %x, %t32 reduction = none : tensor<4x8xf32>, tensor<4xi32>
  return %s, %l, %n, %c, %d : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>
}
