// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA

// A reduction over adjacent dims is one call on the (outer, n, inner) view
// of its input (dsc/kernels/Reduce.h), the same text on both targets.
// CUDA: #include "dsc/runtime/GeneratedCode.cuh"

func.func @forward(%x: tensor<4x6x5xf32>, %b: tensor<2x3x4xbf16>, %i: tensor<2x3x4xi64>)
    -> (tensor<5xf32>, tensor<4x6xf32>, tensor<4x1x1xf32>, tensor<2x4xbf16>,
        tensor<3xi64>, tensor<4x5xf32>) {
  // Leading dims: columns (a bias gradient), outer 1, n 4 * 6, inner 5.
  // CHECK-LABEL: static void kernel0(dsc_stream_t stream, const float *__restrict in0, float *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::reduceSum(stream, DSC_LIB(in0), DSC_LIB(out0), 1, 24, 5);
  // CHECK-NEXT: }
  // CUDA-LABEL: static void kernel0(
  // CUDA-NEXT: dsc_kernels::reduceSum(stream, DSC_LIB(in0), DSC_LIB(out0), 1, 24, 5);
  %s = dsc.reduce_sum %x, dims = [0, 1] : tensor<4x6x5xf32>
  // The last dim: rows.
  // CHECK-LABEL: static void kernel1(
  // CHECK-NEXT: dsc_kernels::reduceMean(stream, DSC_LIB(in0), DSC_LIB(out0), 24, 5, 1);
  %m = dsc.reduce_mean %x, dims = [2] : tensor<4x6x5xf32>
  // keep_dims changes no byte of the result.
  // CHECK-LABEL: static void kernel2(
  // CHECK-NEXT: dsc_kernels::reduceMax(stream, DSC_LIB(in0), DSC_LIB(out0), 4, 30, 1);
  %x1 = dsc.reduce_max %x, dims = [1, 2] keep_dims : tensor<4x6x5xf32>
  // bf16: the same call, CUDA's own type through DSC_LIB.
  // CHECK-LABEL: static void kernel3(dsc_stream_t stream, const dsc_bf16 *__restrict in0, dsc_bf16 *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::reduceMax(stream, DSC_LIB(in0), DSC_LIB(out0), 2, 3, 4);
  %b1 = dsc.reduce_max %b, dims = [1] : tensor<2x3x4xbf16>
  // Dims that are not adjacent have no (outer, n, inner) view: the
  // lowering permutes them last, then a row reduction (outer 3, n 8).
  // CHECK-LABEL: static void kernel4(
  // CHECK-NEXT: dsc_kernels::permute(stream, DSC_LIB(in0), DSC_LIB(out0), dsc::kernels::Dims{3, {2, 3, 4}}, dsc::kernels::Dims{3, {1, 0, 2}});
  // CHECK-LABEL: static void kernel5(
  // CHECK-NEXT: dsc_kernels::reduceSum(stream, DSC_LIB(in0), DSC_LIB(out0), 3, 8, 1);
  %i1 = dsc.reduce_sum %i, dims = [0, 2] : tensor<2x3x4xi64>
  // A middle dim: outer 4, n 6, inner 5.
  // CHECK-LABEL: static void kernel6(
  // CHECK-NEXT: dsc_kernels::reduceSum(stream, DSC_LIB(in0), DSC_LIB(out0), 4, 6, 5);
  %n = dsc.reduce_sum %x, dims = [1] : tensor<4x6x5xf32>
  return %s, %m, %x1, %b1, %i1, %n : tensor<5xf32>, tensor<4x6xf32>, tensor<4x1x1xf32>,
      tensor<2x4xbf16>, tensor<3xi64>, tensor<4x5xf32>
}
