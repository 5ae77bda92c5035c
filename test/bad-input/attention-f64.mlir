// dsc.attention on f64 data: the kernel library has f32, bf16 and f16
// instantiations only, so dsc-compile stops with one located error and exit
// status 1 (no artifact), not a compiler error in the generated C++. The
// gradients step: the optimizer updates fp32 only (optimizer-f64.mlir).
// RUN: rm -rf %t && mkdir -p %t
// RUN: %expect_exit 1 dsc-compile %s --gradients -o %t/step.so 2>&1 | FileCheck %s
// CHECK: error: 'dsc.attention' runs as the library kernel 'attention' only: f32, bf16 or f16 data, after --dscrt-select-library
// CHECK: dsc-compile: error: dsc-translate failed (exit status 1)

dsc.state parameter @q : tensor<1x2x4x8xf64>
func.func @forward() -> (tensor<f64> {dsc.output = "loss"}) {
  %q = dsc.load @q : tensor<1x2x4x8xf64>
  %o, %lse = dsc.attention %q, %q, %q causal {scale = 0.5 : f64}
      : tensor<1x2x4x8xf64>, tensor<1x2x4x8xf64>, tensor<1x2x4x8xf64>
      -> tensor<1x2x4x8xf64>, tensor<1x2x4xf32>
  %loss = dsc.reduce_sum %o, dims = [0, 1, 2, 3] : tensor<1x2x4x8xf64>
  return %loss : tensor<f64>
}
