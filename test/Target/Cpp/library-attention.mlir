// dsc.attention and dsc.attention_grad are calls of the kernel library
// (dsc/kernels/Attention.h on the CPU, dsc/kernels/cuda/Attention.cuh on
// CUDA), shapes as literals, through the dsc_kernels namespace the preamble
// sets per target. The CPU source must also compile.
// RUN: dsc-opt %s --dsc-autodiff --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp > %t.cpp
// RUN: FileCheck %s --input-file=%t.cpp
// RUN: c++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror -I %dsc_src_root/runtime/include %t.cpp
// RUN: dsc-opt %s --dsc-autodiff --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | FileCheck %s --check-prefix=IR --implicit-check-not='memref<2x2x8x8xf32>'
// RUN: dsc-opt %s --dsc-mixed-precision=precision=bf16 --dsc-autodiff --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA

// The kernels are chosen in the IR; no [B, H, T, S] buffer is allocated.
// IR: dscrt.kernel "attention" {{.*}} outs({{.*}} : memref<2x2x8x16xf32>, memref<2x2x8xf32>)
// IR: dscrt.kernel "attention" {{.*}} outs({{.*}} : memref<2x2x8x16xf32>, memref<2x2x8x16xf32>, memref<2x2x8x16xf32>)

// The mask [S] broadcasts over B, H and T: strides 0, 0, 0, 1.
// CHECK: #include "dsc/runtime/GeneratedCode.h"
// CHECK: static void kernel0(dsc_stream_t stream, const float *__restrict in0, const float *__restrict in1, const float *__restrict in2, const uint8_t *__restrict in3, float *__restrict out0, float *__restrict out1) {
// CHECK-NEXT: dsc_kernels::attentionForward(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(in2), DSC_LIB(in3), 0, 0, 0, 1, DSC_LIB(out0), DSC_LIB(out1), 2, 2, 8, 8, 16, 16, 2.50000000000000000e-01, true);
// CHECK: dsc_kernels::attentionBackward(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(in2), DSC_LIB(in3), DSC_LIB(in4), DSC_LIB(in5), DSC_LIB(in6), 0, 0, 0, 1, DSC_LIB(out0), DSC_LIB(out1), DSC_LIB(out2), 2, 2, 8, 8, 16, 16, 2.50000000000000000e-01, true);

// bf16 data, the log-sum-exp fp32.
// CUDA: #include "dsc/runtime/GeneratedCode.cuh"
// CUDA: static void kernel0(dsc_stream_t stream, const dsc_bf16 *__restrict in0, const dsc_bf16 *__restrict in1, const dsc_bf16 *__restrict in2, const uint8_t *__restrict in3, dsc_bf16 *__restrict out0, float *__restrict out1) {
// CUDA-NEXT: dsc_kernels::attentionForward(stream,
// CUDA: dsc_kernels::attentionBackward(stream,

dsc.state parameter @q : tensor<2x2x8x16xf32>
dsc.state parameter @k : tensor<2x2x8x16xf32>
dsc.state parameter @v : tensor<2x2x8x16xf32>
func.func @forward(%keep: tensor<8xi1> {dsc.input = "keep"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %q = dsc.load @q : tensor<2x2x8x16xf32>
  %k = dsc.load @k : tensor<2x2x8x16xf32>
  %v = dsc.load @v : tensor<2x2x8x16xf32>
  %o, %lse = dsc.attention %q, %k, %v mask(%keep : tensor<8xi1>) causal {scale = 0.25 : f64}
      : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
      -> tensor<2x2x8x16xf32>, tensor<2x2x8xf32>
  %loss = dsc.reduce_sum %o, dims = [0, 1, 2, 3] : tensor<2x2x8x16xf32>
  return %loss : tensor<f32>
}
