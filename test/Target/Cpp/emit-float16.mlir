// 16-bit kernels: the graph below, computed in bf16 or fp16 by
// --dsc-mixed-precision, emitted for the CPU and CUDA. 16-bit tensors are
// arrays of dsc_bf16 / dsc_f16 that widen to float where read; literals are
// float literals; library calls take the 16-bit buffers. The CPU source
// must also compile.
// RUN: dsc-opt %s --dsc-mixed-precision=precision=bf16 --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp > %t.bf16.cpp
// RUN: FileCheck %s --input-file=%t.bf16.cpp
// RUN: c++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror -I %dsc_src_root/runtime/include %t.bf16.cpp
// RUN: dsc-opt %s --dsc-mixed-precision=precision=fp16 --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp > %t.f16.cpp
// RUN: FileCheck %s --check-prefix=F16 --input-file=%t.f16.cpp
// RUN: c++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror -I %dsc_src_root/runtime/include %t.f16.cpp
// RUN: dsc-opt %s --dsc-mixed-precision=precision=bf16 --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA

// CHECK: #include "dsc/runtime/GeneratedCode.h"
// The parameters are bf16 states beside their fp32 masters; inputs keep
// their fp32 tables.
// CHECK: {{[{][{]}}"w", ElementType::BF16, 2, kShape{{[0-9]+}}}, dsc::rt::StateRole::Parameter},
// CHECK-NEXT: {{[{][{]}}"w.master", ElementType::F32, 2, kShape{{[0-9]+}}}, dsc::rt::StateRole::Master},
// CHECK: {"loss", ElementType::F32, 0, kShape{{[0-9]+}}},
// The fp32 input becomes a 16-bit copy.
// CHECK: DSC_GLOBAL void kernel0_0(const float *__restrict in0, dsc_bf16 *__restrict out0) {
// CHECK: const dsc_bf16 t0 = static_cast<dsc_bf16>((in0[i]));
// dsc.linear: the library's bf16 GEMM onto the bf16 bias.
// CHECK: static void kernel{{[0-9]+}}(dsc_stream_t stream, const dsc_bf16 *__restrict in0, const dsc_bf16 *__restrict in1, const dsc_bf16 *__restrict in2, dsc_bf16 *__restrict out0) {
// CHECK-NEXT: dsc_kernels::linear(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(in2), DSC_LIB(out0), 2, 8, 8);
// Constants are rebuilt in 16 bits and written as float literals.
// CHECK: alignas(64) const dsc_bf16 kConst0[] = {1.25000000000000000e-01f};
// Elementwise: arithmetic on floats, each op's result rounded to bf16.
// CHECK: const dsc_bf16 t0 = (in0[i]) * (in1[0]);
// CHECK: const dsc_bf16 t0 = 5.00000000000000000e-01f * (in0[i]) * (1.00000000000000000e+00f + erf((in0[i]) * 7.07106781186547573e-01f));
// The rest are library calls on bf16 data (their rounding is the
// library's: dsc/kernels/): the batched matmul, the causal mask's fill,
// softmax, layer norm, cumsum, scatter-add, the max and the per-token loss.
// CHECK: dsc_kernels::batchedGemm(stream, s, DSC_LIB(in0), DSC_LIB(in0), DSC_LIB(out0), 1.0f, 0.0f); }
// CHECK: dsc_kernels::causalMask(stream, DSC_LIB(in0), DSC_LIB(out0), 2, 4, 4, -DSC_INF(double));
// CHECK: dsc_kernels::softmaxForward(stream, DSC_LIB(in0), DSC_LIB(out0), 8, 4, 1);
// CHECK: dsc_kernels::layerNormForward(
// CHECK: dsc_kernels::cumsum(stream, DSC_LIB(in0), DSC_LIB(out0), 2, 8, 1);
// CHECK: dsc_kernels::scatterAdd(
// CHECK: dsc_kernels::reduceMax(stream, DSC_LIB(in0), DSC_LIB(out0), 1, 32, 1);
// CHECK: static void kernel{{[0-9]+}}(dsc_stream_t stream, const dsc_bf16 *__restrict in0, const int64_t *__restrict in1, dsc_bf16 *__restrict out0) {
// CHECK-NEXT: dsc_kernels::crossEntropyForward(
// The loss is widened and summed in fp32 (--dsc-mixed-precision's loss).
// CHECK: DSC_GLOBAL void kernel{{[0-9]+}}_0(const dsc_bf16 *__restrict in0, float *__restrict out0) {
// CHECK: const float t0 = static_cast<float>((in0[i]));
// CHECK: dsc_kernels::reduceSum(stream, DSC_LIB(in0), DSC_LIB(out0), 1, 2, 1);
// CHECK-LABEL: extern "C" void dsc_artifact_step(

// F16: #include "dsc/runtime/GeneratedCode.h"
// F16: dsc_kernels::linear(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(in2), DSC_LIB(out0), 2, 8, 8);
// F16: alignas(64) const dsc_f16 kConst{{[0-9]+}}[] = {1.25000000000000000e-01f};
// F16: dsc_kernels::softmaxForward(

// The CUDA text is the same; 16-bit pointers become CUDA's types in the
// library calls (DSC_LIB).
// CUDA: #include "dsc/runtime/GeneratedCode.cuh"
// CUDA: static void kernel{{[0-9]+}}(dsc_stream_t stream, const dsc_bf16 *__restrict in0, const dsc_bf16 *__restrict in1, const dsc_bf16 *__restrict in2, dsc_bf16 *__restrict out0) {
// CUDA-NEXT: dsc_kernels::linear(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(in2), DSC_LIB(out0), 2, 8, 8);
// CUDA: dsc_kernels::causalMask(stream, DSC_LIB(in0), DSC_LIB(out0), 2, 4, 4, -DSC_INF(double));

dsc.state parameter @w : tensor<8x8xf32>
dsc.state parameter @b : tensor<8xf32>
func.func @zoo(%x: tensor<2x8xf32> {dsc.input = "x"}, %t: tensor<2xi64> {dsc.input = "t"},
               %idx: tensor<2x8xi64> {dsc.input = "idx"})
    -> (tensor<f32> {dsc.output = "loss"}, tensor<2x8xf32> {dsc.output = "cumsum"},
        tensor<2x8xf32> {dsc.output = "scatter"}, tensor<f32> {dsc.output = "max"}) {
  %w = dsc.load @w : tensor<8x8xf32>
  %b = dsc.load @b : tensor<8xf32>
  %h = dsc.linear %x, %w, %b : tensor<2x8xf32>, tensor<8x8xf32>, tensor<8xf32>
  %c = dsc.constant dense<0.125> : tensor<f32>
  %s = dsc.mul %h, %c : tensor<2x8xf32>, tensor<f32>
  %g = dsc.gelu erf %s : tensor<2x8xf32>
  %q = dsc.reshape %g : tensor<2x8xf32> -> tensor<2x4x2xf32>
  %att = dsc.matmul %q, %q transpose_rhs : tensor<2x4x2xf32>, tensor<2x4x2xf32>
  %m = dsc.causal_mask %att : tensor<2x4x4xf32>
  %p = dsc.softmax %m, dim = 2 : tensor<2x4x4xf32>
  %p2 = dsc.reshape %p : tensor<2x4x4xf32> -> tensor<2x16xf32>
  %n = dsc.layer_norm %h weight(%b : tensor<8xf32>) bias(%b : tensor<8xf32>) : tensor<2x8xf32>
  %cs = dsc.cumsum %n, dim = 1 : tensor<2x8xf32>
  %sa = dsc.scatter_add %n, %idx, %s, dim = 1 : tensor<2x8xf32>, tensor<2x8xi64>, tensor<2x8xf32>
  %mx = dsc.reduce_max %p2, dims = [0, 1] : tensor<2x16xf32>
  %loss = dsc.cross_entropy %p2, %t : tensor<2x16xf32>, tensor<2xi64>
  return %loss, %cs, %sa, %mx : tensor<f32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<f32>
}
