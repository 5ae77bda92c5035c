// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp > %t.cpp
// RUN: FileCheck %s --input-file=%t.cpp
// RUN: c++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror -I %dsc_src_root/runtime/include %t.cpp
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s

// Slices, concats, broadcasts and causal masks (dsc/kernels/Layout.h) as
// library calls, the same text on both targets. Ops that only move
// elements take every element type (their kernels copy words): i1, i32
// and f64 too. The CPU source compiles.

func.func @forward(%x: tensor<2x6x4xf32>, %y: tensor<2x2x4xf32>, %v: tensor<4xf32>,
                   %s: tensor<2x4x4xbf16>, %d: tensor<2x3x5xf64>, %b: tensor<3x1x5xi1>,
                   %i: tensor<6x5xi32>, %c: tensor<7x2xf64>)
    -> (tensor<2x2x4xf32>, tensor<2x8x4xf32>, tensor<2x3x4xf32>, tensor<2x4x4xbf16>,
        tensor<2x3x5xf64>, tensor<5x1x3xi1>, tensor<3x5xi32>, tensor<7x2xf64>) {
  // Rows 1, 3, 5 of dim 1: outer 2, n 6, inner 4; start 1, step 2, 3 rows.
  // CHECK-LABEL: static void kernel0(
  // CHECK-NEXT: dsc_kernels::slice(stream, DSC_LIB(in0), DSC_LIB(out0), 2, 6, 4, 1, 2, 2);
  %sl = dsc.slice %x, dim = 1, start = 1, end = 5, step = 2 : tensor<2x6x4xf32>
  // One call per input, each at its offset along dim 1 of the 8 rows.
  // CHECK-LABEL: static void kernel1(
  // CHECK-NEXT: dsc_kernels::concatPart(stream, DSC_LIB(in0), DSC_LIB(out0), 2, 6, 4, 8, 0);
  // CHECK-NEXT: dsc_kernels::concatPart(stream, DSC_LIB(in1), DSC_LIB(out0), 2, 2, 4, 8, 6);
  %cc = dsc.concat(%x, %y), dim = 1 : tensor<2x6x4xf32>, tensor<2x2x4xf32>
  // The input aligned at the right, with leading 1s.
  // CHECK-LABEL: static void kernel2(
  // CHECK-NEXT: dsc_kernels::broadcast(stream, DSC_LIB(in0), DSC_LIB(out0), dsc::kernels::Dims{3, {1, 1, 4}}, dsc::kernels::Dims{3, {2, 3, 4}});
  %bc = dsc.broadcast %v : tensor<4xf32> -> tensor<2x3x4xf32>
  // The fill is a double literal, rounded to the element type by the kernel.
  // CHECK-LABEL: static void kernel3(dsc_stream_t stream, const dsc_bf16 *__restrict in0, dsc_bf16 *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::causalMask(stream, DSC_LIB(in0), DSC_LIB(out0), 2, 4, 4, -DSC_INF(double));
  %cm = dsc.causal_mask %s : tensor<2x4x4xbf16>
  // CHECK-LABEL: static void kernel4(dsc_stream_t stream, const double *__restrict in0, double *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::causalMask(stream, DSC_LIB(in0), DSC_LIB(out0), 2, 3, 5, -1.00000000000000000e+04);
  %cd = dsc.causal_mask %d {fill_value = -1.0e4 : f64} : tensor<2x3x5xf64>
  // A bool permute; the size-1 dim is dropped: a 3 x 5 transpose.
  // CHECK-LABEL: static void kernel5(dsc_stream_t stream, const uint8_t *__restrict in0, uint8_t *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::transpose(stream, DSC_LIB(in0), DSC_LIB(out0), 1, 3, 5);
  %bt = dsc.permute %b, [2, 1, 0] : tensor<3x1x5xi1>
  // CHECK-LABEL: static void kernel6(dsc_stream_t stream, const int32_t *__restrict in0, int32_t *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::slice(stream, DSC_LIB(in0), DSC_LIB(out0), 1, 6, 5, 3, 1, 3);
  %is = dsc.slice %i, dim = 0, start = 3, end = 6, step = 1 : tensor<6x5xi32>
  // f64 cumsum: the library's routing kernels take every numeric type.
  // CHECK-LABEL: static void kernel7(dsc_stream_t stream, const double *__restrict in0, double *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::cumsum(stream, DSC_LIB(in0), DSC_LIB(out0), 1, 7, 2);
  %cs = dsc.cumsum %c, dim = 0 : tensor<7x2xf64>
  return %sl, %cc, %bc, %cm, %cd, %bt, %is, %cs : tensor<2x2x4xf32>, tensor<2x8x4xf32>,
      tensor<2x3x4xf32>, tensor<2x4x4xbf16>, tensor<2x3x5xf64>, tensor<5x1x3xi1>,
      tensor<3x5xi32>, tensor<7x2xf64>
}
