// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s
// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA

// A dropout is one library call (dsc/kernels/Random.h) with its site's
// constants {numel, perSample, p, seed}; the step key is the runtime's
// (StepContext::stepKey), copied to the device before the step's kernels.
// So is a uniform draw, with {numel, perSample, low, high, seed}, the bounds
// printed with 17 significant digits. A key with a sample offset (a
// pipeline stage's micro-batch) is a copy of the runtime's with the offset
// added to its first sample, copied to the device like it; the step asks
// the runtime for its key once.

func.func @forward(%x: tensor<4x6x5xbf16> {dsc.input = "x"}) -> (tensor<4x6x5xbf16>, tensor<4x6x5xf32>, tensor<4x6x5xbf16>) {
  // CHECK-LABEL: static void kernel0(dsc_stream_t stream, const dsc_bf16 *__restrict in0, const int64_t *__restrict in1, dsc_bf16 *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::dropout(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(out0), dsc::kernels::DropoutSite{120, 30, 2.50000000000000000e-01, 3});
  // CUDA-LABEL: static void kernel0(
  // CUDA-NEXT: dsc_kernels::dropout(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(out0), dsc::kernels::DropoutSite{120, 30, 2.50000000000000000e-01, 3});
  // CHECK-LABEL: static void kernel1(dsc_stream_t stream, const int64_t *__restrict in0, float *__restrict out0) {
  // CHECK-NEXT: dsc_kernels::randomUniform(stream, DSC_LIB(in0), DSC_LIB(out0), dsc::kernels::UniformSite{120, 30, 9.89999999999999991e-01, 1.01000000000000001e+00, 5});
  // CUDA-LABEL: static void kernel1(
  // CUDA-NEXT: dsc_kernels::randomUniform(stream, DSC_LIB(in0), DSC_LIB(out0), dsc::kernels::UniformSite{120, 30, 9.89999999999999991e-01, 1.01000000000000001e+00, 5});
  // CHECK: dsc_artifact_step
  // CHECK: const int64_t *step_key = ctx->stepKey();
  // CHECK-NEXT: auto *[[KEY:v[0-9]+]] = step_key;
  // CHECK: dsc_memcpy_task, {dsc_ptr({{v[0-9]+}}), dsc_ptr([[KEY]])}
  // CHECK-NOT: ctx->stepKey()
  // CHECK: const int64_t [[KEY4:v[0-9]+]]_key[4] = {step_key[0], step_key[1], step_key[2] + 4, step_key[3]};
  // CHECK-NEXT: auto *[[KEY4]] = [[KEY4]]_key;
  // CHECK: dsc_memcpy_task, {dsc_ptr({{v[0-9]+}}), dsc_ptr([[KEY4]])}
  // CUDA: const int64_t *step_key = ctx->stepKey();
  // CUDA-NEXT: auto *[[KEY:v[0-9]+]] = step_key;
  // CUDA: cudaMemcpyAsync({{.*}}, [[KEY]], 4 * sizeof({{.*}}), cudaMemcpyHostToDevice
  // CUDA: const int64_t [[KEY4:v[0-9]+]]_key[4] = {step_key[0], step_key[1], step_key[2] + 4, step_key[3]};
  // CUDA-NEXT: auto *[[KEY4]] = [[KEY4]]_key;
  // CUDA: cudaMemcpyAsync({{.*}}, [[KEY4]], 4 * sizeof({{.*}}), cudaMemcpyHostToDevice
  %key = dsc.step_key : tensor<4xi64>
  %y = dsc.dropout %x, %key, p = 0.25, seed = 3, samples = 4 : tensor<4x6x5xbf16>
  %u = dsc.random_uniform %key, low = 0.99, high = 1.01, seed = 5, samples = 4 : tensor<4x6x5xf32>
  %key4 = dsc.step_key sample_offset = 4 : tensor<4xi64>
  %z = dsc.dropout %x, %key4, p = 0.25, seed = 3, samples = 4 : tensor<4x6x5xbf16>
  return %y, %u, %z : tensor<4x6x5xbf16>, tensor<4x6x5xf32>, tensor<4x6x5xbf16>
}
