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

// dsc.linear is a GEMM against the [out, in] weight plus a bias loop.
// CHECK-LABEL: static void kernel0(const float *__restrict in0, const float *__restrict in1, const float *__restrict in2, float *__restrict out0) {
// CHECK: s.m = 2; s.n = 4; s.k = 8; s.transB = true;
// CHECK: dsc::rt::cpu::gemmF32(s, in0, in1, out0);
// CHECK: out0[r * 4 + j] += in2[j];

// A fused elementwise chain is one loop; the broadcast scalar reads index 0.
// CHECK-LABEL: static void kernel1(
// CHECK: #pragma omp parallel for
// CHECK: for (int64_t i = 0; i < 8; ++i) {
// CHECK: const float t0 = (in0[i]) * (in1[0]);
// CHECK: const float t1 = std::tanh((t0));
// CHECK: out0[i] = t1;

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
