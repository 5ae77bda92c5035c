// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA

// Lookups, layout and routing (dsc/kernels/Embedding.h, Permute.h,
// Routing.h) as library calls. Whole shapes are dsc::kernels::Dims
// literals. The kernels that read indices take the index-fault record last
// on CUDA; on the CPU they throw and DSC_INDEX_FAULT is empty.
// CHECK: #include "dsc/runtime/GeneratedCode.h"
// CUDA: #include "dsc/runtime/GeneratedCode.cuh"

func.func @forward(%wte: tensor<50x8xf32>, %ids: tensor<2x3xi64>, %k: tensor<2x3x4x5xf32>,
                   %p: tensor<16x4xf32>, %e: tensor<16x1xi64>, %acc: tensor<7x8xf32>,
                   %idx: tensor<3x8xi64>, %val: tensor<3x8xf32>, %m: tensor<16x4xi64>,
                   %b: tensor<2x5x3xbf16>)
    -> (tensor<2x3x8xf32>, tensor<2x3x5x4xf32>, tensor<2x4x3x5xf32>, tensor<16x1xf32>,
        tensor<7x8xf32>, tensor<16x2xf32>, tensor<16x2xi64>, tensor<16x4xi64>,
        tensor<16x4xf32>, tensor<2x5x3xbf16>, tensor<5x2x3xbf16>) {
  // 6 ids into a 50 x 8 table.
  // CHECK-LABEL: static void kernel0(dsc_stream_t stream, const float *__restrict in0, const int64_t *__restrict in1, float *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::embeddingForward(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(out0), 6, 50, 8 DSC_INDEX_FAULT);
  // CUDA-LABEL: static void kernel0(
  // CUDA-NEXT: dsc_kernels::embeddingForward(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(out0), 6, 50, 8 DSC_INDEX_FAULT);
  %h = dsc.embedding %wte, %ids : tensor<50x8xf32>, tensor<2x3xi64>
  // The last two dims swapped: 6 transposes of 4 x 5.
  // CHECK-LABEL: static void kernel1(
  // CHECK-NEXT: dsc_kernels::transpose(stream, DSC_LIB(in0), DSC_LIB(out0), 6, 4, 5);
  %kt = dsc.transpose %k, 2, 3 : tensor<2x3x4x5xf32>
  // CHECK-LABEL: static void kernel2(
  // CHECK-NEXT: dsc_kernels::permute(stream, DSC_LIB(in0), DSC_LIB(out0), dsc::kernels::Dims{4, {2, 3, 4, 5}}, dsc::kernels::Dims{4, {0, 2, 1, 3}});
  %pm = dsc.permute %k, [0, 2, 1, 3] : tensor<2x3x4x5xf32>
  // CHECK-LABEL: static void kernel3(
  // CHECK-NEXT: dsc_kernels::gather(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(out0), dsc::kernels::Dims{2, {16, 4}}, dsc::kernels::Dims{2, {16, 1}}, 1 DSC_INDEX_FAULT);
  %g = dsc.gather %p, %e, dim = 1 : tensor<16x4xf32>, tensor<16x1xi64>
  // CHECK-LABEL: static void kernel4(
  // CHECK-NEXT: dsc_kernels::scatterAdd(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(in2), DSC_LIB(out0), dsc::kernels::Dims{2, {7, 8}}, dsc::kernels::Dims{2, {3, 8}}, dsc::kernels::Dims{2, {3, 8}}, 0 DSC_INDEX_FAULT);
  %s = dsc.scatter_add %acc, %idx, %val, dim = 0 : tensor<7x8xf32>, tensor<3x8xi64>, tensor<3x8xf32>
  // Along the last dim: outer 16, n 4, inner 1; values and indices.
  // CHECK-LABEL: static void kernel5(dsc_stream_t stream, const float *__restrict in0, float *__restrict out0, int64_t *__restrict out1) {
  // CHECK-NEXT: dsc_kernels::topK(stream, DSC_LIB(in0), DSC_LIB(out0), DSC_LIB(out1), 16, 4, 1, 2);
  %v, %i = dsc.top_k %p, k = 2, dim = 1 : tensor<16x4xf32>
  // Along dim 0: outer 1, n 16, inner 4.
  // CHECK-LABEL: static void kernel6(
  // CHECK-NEXT: dsc_kernels::cumsum(stream, DSC_LIB(in0), DSC_LIB(out0), 1, 16, 4);
  %c = dsc.cumsum %m, dim = 0 : tensor<16x4xi64>
  // CHECK-LABEL: static void kernel7(dsc_stream_t stream, const int64_t *__restrict in0, float *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::oneHot(stream, DSC_LIB(in0), DSC_LIB(out0), 16, 4);
  %e1 = dsc.reshape %e : tensor<16x1xi64> -> tensor<16xi64>
  %o = dsc.one_hot %e1 : tensor<16xi64> -> tensor<16x4xf32>
  // CHECK-LABEL: static void kernel8(dsc_stream_t stream, const dsc_bf16 *__restrict in0, dsc_bf16 *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::cumsum(stream, DSC_LIB(in0), DSC_LIB(out0), 2, 5, 3);
  %bc = dsc.cumsum %b, dim = 1 : tensor<2x5x3xbf16>
  // A transpose of other dims is a permute.
  // CHECK-LABEL: static void kernel9(
  // CHECK-NEXT: dsc_kernels::permute(stream, DSC_LIB(in0), DSC_LIB(out0), dsc::kernels::Dims{3, {2, 5, 3}}, dsc::kernels::Dims{3, {1, 0, 2}});
  %bt = dsc.transpose %b, 0, 1 : tensor<2x5x3xbf16>
  return %h, %kt, %pm, %g, %s, %v, %i, %c, %o, %bc, %bt : tensor<2x3x8xf32>,
      tensor<2x3x5x4xf32>, tensor<2x4x3x5xf32>, tensor<16x1xf32>, tensor<7x8xf32>,
      tensor<16x2xf32>, tensor<16x2xi64>, tensor<16x4xi64>, tensor<16x4xf32>,
      tensor<2x5x3xbf16>, tensor<5x2x3xbf16>
}
