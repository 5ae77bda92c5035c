// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA

// Softmax, log-softmax and layer norm are calls into the row kernels
// (dsc/kernels/Row.h), the same text for both targets.
// CHECK: #include "dsc/runtime/GeneratedCode.h"
// CUDA: #include "dsc/runtime/GeneratedCode.cuh"

dsc.state parameter @g : tensor<32xf32>
dsc.state parameter @b : tensor<32xf32>

func.func @forward(%x: tensor<2x8x32xf32>, %s: tensor<2x4x8x8xbf16>, %c: tensor<3x5x7xf32>,
                   %h: tensor<6x4x8xf16>, %d: tensor<4x8xf64>)
    -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x4x8x8xbf16>, tensor<3x5x7xf32>,
        tensor<6x4x8xf16>, tensor<4x8xf64>) {
  %g = dsc.load @g : tensor<32xf32>
  %b = dsc.load @b : tensor<32xf32>
  // Layer norm over the last dim: 16 rows of 32, weight and bias, eps as a
  // double literal; no statistics are kept (null mean and rstd).
  // CHECK-LABEL: static void kernel0(dsc_stream_t stream, const float *__restrict in0, const float *__restrict in1, const float *__restrict in2, float *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::layerNormForward(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(in2), DSC_LIB(out0), static_cast<float *>(nullptr), static_cast<float *>(nullptr), 16, 32, 1.00000000000000008e-05);
  // CHECK-NEXT: }
  // CUDA-LABEL: static void kernel0(
  // CUDA-NEXT: dsc_kernels::layerNormForward(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(in2), DSC_LIB(out0), static_cast<float *>(nullptr), static_cast<float *>(nullptr), 16, 32, 1.00000000000000008e-05);
  %y = dsc.layer_norm %x weight(%g : tensor<32xf32>) bias(%b : tensor<32xf32>) {epsilon = 1.0e-05 : f64} : tensor<2x8x32xf32>
  // Without weight and bias: typed null pointers.
  // CHECK-LABEL: static void kernel1(
  // CHECK-NEXT: dsc_kernels::layerNormForward(stream, DSC_LIB(in0), DSC_LIB(static_cast<const float *>(nullptr)), DSC_LIB(static_cast<const float *>(nullptr)), DSC_LIB(out0), static_cast<float *>(nullptr), static_cast<float *>(nullptr), 16, 32, 9.99999999999999955e-07);
  %z = dsc.layer_norm %x {epsilon = 1.0e-06 : f64} : tensor<2x8x32xf32>
  // Softmax over the last dim of bf16 attention scores: (outer, n, inner) =
  // (64, 8, 1).
  // CHECK-LABEL: static void kernel2(dsc_stream_t stream, const dsc_bf16 *__restrict in0, dsc_bf16 *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::softmaxForward(stream, DSC_LIB(in0), DSC_LIB(out0), 64, 8, 1);
  %p = dsc.softmax %s, dim = 3 : tensor<2x4x8x8xbf16>
  // Log-softmax over a middle dim: (3, 5, 7).
  // CHECK-LABEL: static void kernel3(
  // CHECK-NEXT: dsc_kernels::logSoftmaxForward(stream, DSC_LIB(in0), DSC_LIB(out0), 3, 5, 7);
  %l = dsc.log_softmax %c, dim = 1 : tensor<3x5x7xf32>
  // Layer norm over the last two dims of f16: 6 rows of 32.
  // CHECK-LABEL: static void kernel4(dsc_stream_t stream, const dsc_f16 *__restrict in0, dsc_f16 *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::layerNormForward(stream, DSC_LIB(in0), DSC_LIB(static_cast<const dsc_f16 *>(nullptr)), DSC_LIB(static_cast<const dsc_f16 *>(nullptr)), DSC_LIB(out0), static_cast<float *>(nullptr), static_cast<float *>(nullptr), 6, 32, 1.00000000000000008e-05);
  %hn = dsc.layer_norm %h {normalized_rank = 2 : i64} : tensor<6x4x8xf16>
  // f64: the library's double rows (RowF64.h), the same call.
  // CHECK-LABEL: static void kernel5(dsc_stream_t stream, const double *__restrict in0, double *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::softmaxForward(stream, DSC_LIB(in0), DSC_LIB(out0), 4, 8, 1);
  %e = dsc.softmax %d, dim = 1 : tensor<4x8xf64>
  return %y, %z, %p, %l, %hn, %e : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x4x8x8xbf16>,
      tensor<3x5x7xf32>, tensor<6x4x8xf16>, tensor<4x8xf64>
}
