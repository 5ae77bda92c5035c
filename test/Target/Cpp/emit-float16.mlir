// 16-bit kernels: the graph below, computed in bf16 or fp16 by
// --dsc-mixed-precision, emitted for the CPU and CUDA. 16-bit tensors are
// arrays of dsc_bf16 / dsc_f16 that widen to float where read; literals are
// float literals; GEMMs take the 16-bit operands; reductions accumulate in
// double and round once. The CPU source must also compile.
// RUN: dsc-opt %s --dsc-mixed-precision=precision=bf16 --dsc-lower-to-runtime --dsc-plan-memory | dsc-translate --dscrt-to-cpp > %t.bf16.cpp
// RUN: FileCheck %s --input-file=%t.bf16.cpp
// RUN: c++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror -I %dsc_src_root/runtime/include %t.bf16.cpp
// RUN: dsc-opt %s --dsc-mixed-precision=precision=fp16 --dsc-lower-to-runtime --dsc-plan-memory | dsc-translate --dscrt-to-cpp > %t.f16.cpp
// RUN: FileCheck %s --check-prefix=F16 --input-file=%t.f16.cpp
// RUN: c++ -std=c++17 -fopenmp -fsyntax-only -Wall -Werror -I %dsc_src_root/runtime/include %t.f16.cpp
// RUN: dsc-opt %s --dsc-mixed-precision=precision=bf16 --dsc-lower-to-runtime --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA

// CHECK: #include "dsc/runtime/Float16.h"
// CHECK: using dsc_bf16 = dsc::rt::BFloat16;
// CHECK: inline void dsc_gemm(const dsc::rt::cpu::GemmShape &s, const dsc_bf16 *a,
// CHECK-NEXT: dsc_bf16 *c, float alpha, float beta) {
// CHECK-NEXT: dsc::rt::cpu::gemmBF16(s, a, b, c, alpha, beta);
// The parameters are bf16 states beside their fp32 masters; inputs keep
// their fp32 tables.
// CHECK: {{[{][{]}}"w", ElementType::BF16, 2, kShape{{[0-9]+}}}, dsc::rt::StateRole::Parameter},
// CHECK-NEXT: {{[{][{]}}"w.master", ElementType::F32, 2, kShape{{[0-9]+}}}, dsc::rt::StateRole::Master},
// CHECK: {"loss", ElementType::F32, 0, kShape{{[0-9]+}}},
// The fp32 input becomes a 16-bit copy.
// CHECK: DSC_GLOBAL void kernel0_0(const float *__restrict in0, dsc_bf16 *__restrict out0) {
// CHECK: const dsc_bf16 t0 = static_cast<dsc_bf16>((in0[i]));
// dsc.linear: a bf16 GEMM into the bias-filled bf16 output.
// CHECK: static void kernel{{[0-9]+}}(dsc_stream_t stream, const dsc_bf16 *__restrict in0, const dsc_bf16 *__restrict in1, const dsc_bf16 *__restrict in2, dsc_bf16 *__restrict out0) {
// CHECK: DSC_GEMM(s, in0, in1, out0, 1.0f, 1.0f);
// Constants are rebuilt in 16 bits and written as float literals.
// CHECK: alignas(64) const dsc_bf16 kConst0[] = {1.25000000000000000e-01f};
// Elementwise: arithmetic on floats, each op's result rounded to bf16.
// CHECK: const dsc_bf16 t0 = (in0[i]) * (in1[0]);
// CHECK: const dsc_bf16 t0 = 5.00000000000000000e-01f * (in0[i]) * (1.00000000000000000e+00f + erf((in0[i]) * 7.07106781186547573e-01f));
// Batched matmul.
// CHECK: DSC_GEMM(s, in0 + (c0 * 1) * 8, in0 + (c0 * 1) * 8, out0 + i * 16, 1.0f, 0.0f);
// The causal mask fills a bf16 element.
// CHECK: out0[i] = c2 > c1 + 0 ? dsc_bf16(-DSC_INF(float)) : in0[i];
// Softmax: a bf16 running max, the sum in double.
// CHECK: dsc_bf16 m = -DSC_INF(float);
// CHECK-NEXT: for
// CHECK-NEXT: double sum = 0;
// CHECK: y[j * 1] = static_cast<dsc_bf16>(exp(x[j * 1] - m) / sum);
// Layer norm: mean and variance in double, rounded once.
// CHECK: double mean = 0, var = 0;
// CHECK: out0[i * 8 + j] = static_cast<dsc_bf16>(y);
// Cumulative sum in float; scatter-add widens, adds, rounds.
// CHECK: float acc = 0;
// CHECK: out0[(c0) * 8 + (j) * 1] = out0[(c0) * 8 + (j) * 1] + in2[(c0) * 8 + (c1) * 1];
// The max in bf16 from -inf.
// CHECK: dsc_bf16 a = -DSC_INF(float);
// The loss: per-token losses in double, rounded to bf16, widened and
// summed in fp32 (--dsc-mixed-precision's loss), divided by an fp32 count.
// CHECK: double m = x[0];
// CHECK: out0[r] = static_cast<dsc_bf16>(loss);
// CHECK: DSC_GLOBAL void kernel{{[0-9]+}}_0(const dsc_bf16 *__restrict in0, float *__restrict out0) {
// CHECK: const float t0 = static_cast<float>((in0[i]));
// CHECK: DSC_GLOBAL void kernel{{[0-9]+}}_0(const float *__restrict in0, float *__restrict out0) {
// CHECK-NEXT: DSC_FOR(i, 1) {
// CHECK-NEXT: double a = double(0);
// CHECK-LABEL: extern "C" void dsc_artifact_step(

// F16: using dsc_f16 = dsc::rt::Half;
// F16: DSC_GEMM(s, in0, in1, out0, 1.0f, 1.0f);
// F16: alignas(64) const dsc_f16 kConst{{[0-9]+}}[] = {1.25000000000000000e-01f};
// F16: dsc_f16 m = -DSC_INF(float);

// CUDA: #include <cuda_bf16.h>
// CUDA: struct dsc_bf16 {
// CUDA-NEXT: __nv_bfloat16 value;
// CUDA: DSC_HD dsc_bf16(float v) : value(__float2bfloat16(v)) {}
// CUDA-NEXT: DSC_HD operator float() const { return __bfloat162float(value); }
// CUDA: dsc::rt::cuda::gemmBF16(s, reinterpret_cast<const uint16_t *>(a),
// CUDA: DSC_GEMM(s, in0, in1, out0, 1.0f, 1.0f);

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
