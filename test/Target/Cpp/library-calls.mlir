// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA

// A kernel with a library name is one call into the kernel library, the
// same text for both targets: `dsc_kernels` is the target's namespace,
// DSC_LIB the pointer type its kernels take.
// CHECK: #include "dsc/runtime/GeneratedCode.h"
// CUDA: #include "dsc/runtime/GeneratedCode.cuh"

dsc.state parameter @w : tensor<16x8xbf16>
dsc.state parameter @b : tensor<16xbf16>

func.func @forward(%x: tensor<4x8xbf16>, %q: tensor<2x3x4x8xf32>,
                   %k: tensor<2x3x5x8xf32>, %m: tensor<8x5xf32>)
    -> (tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) {
  %w = dsc.load @w : tensor<16x8xbf16>
  %b = dsc.load @b : tensor<16xbf16>
  // dsc.linear with and without a bias: m = 4 rows, n = 16, k = 8.
  // CHECK-LABEL: static void kernel0(dsc_stream_t stream, const dsc_bf16 *__restrict in0, const dsc_bf16 *__restrict in1, const dsc_bf16 *__restrict in2, dsc_bf16 *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::linear(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(in2), DSC_LIB(out0), 4, 16, 8);
  // CHECK-NEXT: }
  %y = dsc.linear %x, %w, %b : tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>
  // CHECK-LABEL: static void kernel1(
  // CHECK-NEXT: dsc_kernels::linear(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(static_cast<const dsc_bf16 *>(nullptr)), DSC_LIB(out0), 4, 16, 8);
  %z = dsc.linear %x, %w : tensor<4x8xbf16>, tensor<16x8xbf16>
  // A batched matmul: 6 items of [4, 8] x [8, 5]^T, one call with strides.
  // CHECK-LABEL: static void kernel2(
  // CHECK-NEXT: { dsc_kernels::GemmShape s; s.batch = 6; s.m = 4; s.n = 5; s.k = 8;
  // CHECK-NEXT: s.transA = false; s.transB = true; s.strideA = 32; s.strideB = 40; s.strideC = 20;
  // CHECK-NEXT: dsc_kernels::batchedGemm(stream, s, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(out0), 1.0f, 0.0f); }
  %s = dsc.matmul %q, %k transpose_rhs : tensor<2x3x4x8xf32>, tensor<2x3x5x8xf32>
  // The right operand has no batch: stride 0 repeats it.
  // CHECK-LABEL: static void kernel3(
  // CHECK: s.strideA = 32; s.strideB = 0; s.strideC = 20;
  %r = dsc.matmul %q, %m : tensor<2x3x4x8xf32>, tensor<8x5xf32>
  // A store: the library's copy, 16 x 8 bf16 = 256 bytes.
  // CHECK-LABEL: static void kernel4(
  // CHECK-NEXT: dsc_kernels::copy(stream, DSC_LIB(in0), DSC_LIB(out0), 256);
  dsc.store %w to @w : tensor<16x8xbf16>
  return %y, %z, %s, %r : tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>
}
