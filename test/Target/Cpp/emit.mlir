// RUN: dsc-opt %s --dsc-data-parallel=world-size=2 --dsc-lower-to-runtime --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s

// The artifact's tables: states by name and role, inputs, outputs, the world
// size and the planned arena.
// CHECK: #include "dsc/runtime/Artifact.h"
// CHECK: const dsc::rt::StateDesc kStates[] = {
// CHECK-NEXT: {{[{][{]}}"fc.weight", ElementType::F32, 2, kShape0}, dsc::rt::StateRole::Parameter},
// CHECK-NEXT: {{[{][{]}}"fc.bias", ElementType::F32, 1, kShape1}, dsc::rt::StateRole::Parameter},
// CHECK: const dsc::rt::TensorDesc kInputs[] = {
// CHECK-NEXT: {"x", ElementType::F32, 2, kShape{{[0-9]+}}},
// CHECK-NEXT: {"y", ElementType::I64, 1, kShape{{[0-9]+}}},
// CHECK: const dsc::rt::TensorDesc kOutputs[] = {
// CHECK-NEXT: {"loss", ElementType::F32, 0, kShape{{[0-9]+}}},
// CHECK: const dsc::rt::ArtifactInfo kInfo = {dsc::rt::kArtifactAbiVersion, "cpu", "", 2, [[ARENA:[0-9]+]], 2, kStates, 2, kInputs, 1, kOutputs};

// dsc.linear: the bias broadcast into the output, then a GEMM against the
// [out, in] weight accumulating into it (beta = 1).
// CHECK-LABEL: DSC_GLOBAL void kernel0_0(const float *__restrict in0, const float *__restrict in1, const float *__restrict in2, float *__restrict out0) {
// CHECK-NEXT: DSC_FOR(i, 8) {
// CHECK-NEXT: out0[i] = in2[i % 4];
// CHECK-LABEL: static void kernel0(
// CHECK-NEXT: DSC_LAUNCH(kernel0_0, 8, in0, in1, in2, out0);
// CHECK-NEXT: s.m = 2; s.n = 4; s.k = 8; s.transB = true;
// CHECK-NEXT: DSC_GEMM(s, in0, in1, out0, 1.0f, 1.0f);

// A fused elementwise chain is one loop; the broadcast scalar reads index 0.
// CHECK-LABEL: DSC_GLOBAL void kernel1_0(
// CHECK: DSC_FOR(i, 8) {
// CHECK: const float t0 = (in0[i]) * (in1[0]);
// CHECK-NEXT: const float t1 = tanh((t0));
// CHECK-NEXT: out0[i] = t1;

// The loss is per-token losses, one parallel iteration per token, then a
// reduction; the data-parallel pass removed the rank-local mean.
// CHECK-LABEL: DSC_GLOBAL void kernel2_0(
// CHECK-NEXT: DSC_FOR(i, 2) {
// CHECK: if (t != -100) {
// CHECK: out0[r] = static_cast<float>(loss);
// CHECK-LABEL: DSC_GLOBAL void kernel3_0(
// CHECK-NEXT: DSC_FOR(i, 1) {
// CHECK: a += v;
// CHECK-NOT: / static_cast<double>(count)

// The step: state and inputs from the context, buffers at arena offsets,
// the data-parallel all-reduces numbered in order, the output copied out.
// CHECK-LABEL: extern "C" void dsc_artifact_step(dsc::rt::StepContext *ctx) {
// CHECK: static_cast<const float *>(ctx->input(0));
// CHECK: static_cast<float *>(ctx->state(0));
// CHECK: reinterpret_cast<float *>(arena + {{[0-9]+}});
// CHECK: kernel0(
// CHECK: ctx->allReduceSum(v{{[0-9]+}}, 1, ElementType::F32, 0);
// CHECK: ctx->allReduceSum(v{{[0-9]+}}, 1, ElementType::F32, 1);
// CHECK: std::memcpy(ctx->output(0), v{{[0-9]+}}, 1 * sizeof(*v{{[0-9]+}}));

// The CUDA flavour: the same loops as __global__ grid-stride kernels,
// constants uploaded once, device-to-device output copy, a synchronizing
// error check at the end of the step.
// RUN: dsc-opt %s --dsc-lower-to-runtime --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA
// CUDA: #define DSC_GLOBAL static __global__
// CUDA: #define DSC_LAUNCH(f, n, ...) f<<<dsc_blocks(n), 256>>>(__VA_ARGS__)
// CUDA: #define DSC_GEMM(s, a, b, c, alpha, beta) dsc::rt::cuda::gemmF32(s, a, b, c, alpha, beta, nullptr)
// CUDA: const dsc::rt::ArtifactInfo kInfo = {dsc::rt::kArtifactAbiVersion, "cuda",
// CUDA: DSC_GLOBAL void kernel0_0(
// CUDA-LABEL: extern "C" void dsc_artifact_step(
// CUDA: static const auto *kConst0_device = dsc_upload(kConst0, sizeof(kConst0));
// CUDA: dsc_check(cudaMemcpy(ctx->output(0), v{{[0-9]+}}, 1 * sizeof(*v{{[0-9]+}}), cudaMemcpyDeviceToDevice), "output copy");
// CUDA: dsc_check(cudaDeviceSynchronize(), "the step");

dsc.state parameter @"fc.weight" : tensor<4x8xf32>
dsc.state parameter @"fc.bias" : tensor<4xf32>
func.func @forward(%x: tensor<2x8xf32> {dsc.input = "x"}, %y: tensor<2xi64> {dsc.input = "y"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @"fc.weight" : tensor<4x8xf32>
  %b = dsc.load @"fc.bias" : tensor<4xf32>
  %h = dsc.linear %x, %w, %b : tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>
  %c = dsc.constant dense<0.5> : tensor<f32>
  %s = dsc.mul %h, %c : tensor<2x4xf32>, tensor<f32>
  %t = dsc.tanh %s : tensor<2x4xf32>
  %l = dsc.cross_entropy %t, %y : tensor<2x4xf32>, tensor<2xi64>
  return %l : tensor<f32>
}
