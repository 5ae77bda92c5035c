// An f64 model trains nowhere: the optimizer's multi-tensor update (the
// library's kernel) computes in fp32, with fp32 parameters or fp32 master
// weights, so dsc-compile stops at the parameter with one located error
// and exit status 1 (no artifact). Its gradients still compile.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %expect_exit 1 dsc-compile %s -o %t/step.so 2>&1 | FileCheck %s
// CHECK: optimizer-f64.mlir:[[@LINE+3]]:1: error: is updated in 'f64'; the optimizer updates fp32 parameters or fp32 master weights
// CHECK: dsc-compile: error: dsc-opt failed (exit status 1)
// RUN: dsc-compile %s --gradients -o %t/grad.so > /dev/null
dsc.state parameter @w : tensor<4xf64>
func.func @forward(%x: tensor<4xf64> {dsc.input = "x"}) -> (tensor<f64> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<4xf64>
  %p = dsc.mul %w, %x : tensor<4xf64>, tensor<4xf64>
  %l = dsc.reduce_sum %p, dims = [0] : tensor<4xf64>
  return %l : tensor<f64>
}
