// dsc.attention and dsc.attention_grad are calls of the kernel library
// (dsc/kernels/Attention.h on the CPU, dsc/kernels/cuda/Attention.cuh on
// CUDA), shapes as literals, through the dsc_kernels namespace the preamble
// sets per target; no [T, S] buffer is allocated. The CPU source must also
// compile.
// RUN: dsc-opt %s --dsc-autodiff --dsc-lower-to-runtime --dsc-plan-memory | dsc-translate --dscrt-to-cpp > %t.cpp
// RUN: FileCheck %s --input-file=%t.cpp
// RUN: c++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror -I %dsc_src_root/runtime/include %t.cpp
// RUN: dsc-opt %s --dsc-autodiff --dsc-lower-to-runtime --dsc-plan-memory | FileCheck %s --check-prefix=IR --implicit-check-not='memref<2x2x8x8xf32>'
// RUN: dsc-opt %s --dsc-mixed-precision=precision=bf16 --dsc-autodiff --dsc-lower-to-runtime --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA

// CHECK: #include "dsc/kernels/Attention.h"
// CHECK-NEXT: namespace dsc_kernels = dsc::kernels::cpu;
// CHECK: using dsc_stream_t = dsc::kernels::cpu::Queue;
// CHECK: dsc_kernels::attentionForward<float, uint8_t>(stream, in{{[0-9]+}}, in{{[0-9]+}}, in{{[0-9]+}}, in{{[0-9]+}}, 0, 0, 0, 1, out0, out1, 2, 2, 8, 8, 16, 16, 2.50000000000000000e-01, true);
// CHECK: dsc_kernels::attentionBackward<float, uint8_t>(stream, in{{[0-9]+}}, in{{[0-9]+}}, in{{[0-9]+}}, in{{[0-9]+}}, in{{[0-9]+}}, in{{[0-9]+}}, in{{[0-9]+}}, 0, 0, 0, 1, out0, out1, out2, 2, 2, 8, 8, 16, 16, 2.50000000000000000e-01, true);

// The kernels' buffers: [B, H, T, D] tensors and the [B, H, T] log-sum-exp,
// no [B, H, T, S] one.
// IR: dscrt.kernel {{.*}} outs({{.*}} : memref<2x2x8x16xf32>, memref<2x2x8xf32>)
// IR: dscrt.kernel {{.*}} outs({{.*}} : memref<2x2x8x16xf32>, memref<2x2x8x16xf32>, memref<2x2x8x16xf32>)

// CUDA: #include "dsc/kernels/cuda/Attention.cuh"
// CUDA-NEXT: namespace dsc_kernels = dsc::kernels::cuda;
// CUDA: dsc_kernels::attentionForward<dsc_bf16, uint8_t>(stream,
// CUDA: dsc_kernels::attentionBackward<dsc_bf16, uint8_t>(stream,

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
