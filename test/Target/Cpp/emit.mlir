// RUN: dsc-opt %s --dsc-data-parallel=world-size=2 --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s

// The artifact's tables: states by name and role, inputs (y, the targets of
// a cross-entropy over 4 classes, without an index limit: its ignore_index,
// the default -100, is a valid target outside [0, 4); emit-index-limit.mlir),
// outputs, the world size and the planned arena.
// The loop macros, index checks and library helpers are the runtime's
// (dsc/runtime/GeneratedCode.h).
// CHECK: #include "dsc/runtime/GeneratedCode.h"
// Every task the step enqueues is one type: a function, the buffers (at
// most 4 here: the linear's 3 inputs and output) and a copy's byte count.
// CHECK: struct dsc_task_t {
// CHECK-NEXT: void (*fn)(const dsc_task_t &);
// CHECK-NEXT: void *p[4];
// CHECK-NEXT: int64_t bytes;
// CHECK: const dsc::rt::StateDesc kStates[] = {
// CHECK-NEXT: {{[{][{]}}"fc.weight", ElementType::F32, 2, kShape0}, dsc::rt::StateRole::Parameter},
// CHECK-NEXT: {{[{][{]}}"fc.bias", ElementType::F32, 1, kShape1}, dsc::rt::StateRole::Parameter},
// CHECK: const dsc::rt::TensorDesc kInputs[] = {
// CHECK-NEXT: {"x", ElementType::F32, 2, kShape{{[0-9]+}}},
// CHECK-NEXT: {"y", ElementType::I64, 1, kShape{{[0-9]+}}},
// CHECK: const dsc::rt::TensorDesc kOutputs[] = {
// CHECK-NEXT: {"loss", ElementType::F32, 0, kShape{{[0-9]+}}},
// Streams: compute runs kernels and copies on the step's thread (Inline);
// comm runs the collectives on a thread of its own.
// CHECK: const dsc::rt::StreamDesc kStreams[] = {
// CHECK-NEXT: {"compute", false, false},
// CHECK-NEXT: {"comm", true, true},
// CHECK: const dsc::rt::ArtifactInfo kInfo = {dsc::rt::kArtifactAbiVersion, "cpu", "", 2, 1, [[ARENA:[0-9]+]], 2, kStates, 2, kInputs, 1, kOutputs, 2, kStreams, 1, 0, 1, 1, 0};

// dsc.linear: a call of the library's GEMM onto the bias (dsc/kernels/).
// CHECK-LABEL: static void kernel0(dsc_stream_t stream, const float *__restrict in0,
// CHECK-NEXT: dsc_kernels::linear(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(in2), DSC_LIB(out0), 2, 4, 8);
// Its task: the buffers, typed back.
// CHECK: static void kernel0_task(const dsc_task_t &t) { kernel0(dsc_stream_t{}, static_cast<const float *>(t.p[0]), static_cast<const float *>(t.p[1]), static_cast<const float *>(t.p[2]), static_cast<float *>(t.p[3])); }

// A fused elementwise chain is one loop; the broadcast scalar reads index 0.
// CHECK-LABEL: DSC_GLOBAL void kernel1_0(
// CHECK: DSC_FOR(i, 8) {
// CHECK: const float t0 = (in0[i]) * (in1[0]);
// CHECK-NEXT: const float t1 = dsc_tanh((t0));
// CHECK-NEXT: const float t2 = cos((t1));
// CHECK-NEXT: const float t3 = sin((t2));
// CHECK-NEXT: out0[i] = t3;

// The loss is per-token losses (the library's classifier), then a
// reduction; the data-parallel pass removed the rank-local mean.
// CHECK-LABEL: static void kernel2(
// CHECK-NEXT: dsc_kernels::crossEntropyForward(stream, DSC_LIB(in0), DSC_LIB(in1), DSC_LIB(out0), 2, 4, -100 DSC_INDEX_FAULT);
// CHECK-LABEL: static void kernel3(
// CHECK-NEXT: dsc_kernels::reduceSum(stream, DSC_LIB(in0), DSC_LIB(out0), 1, 2, 1);

// The step: the streams, state and inputs from the context, buffers at
// arena offsets; inputs copied in and kernels run as tasks of compute; the
// data-parallel all-reduces numbered in order on comm, which waits for
// compute's event, and compute waits for comm's before it reads a sum; the
// output copied out, both streams synchronized.
// CHECK-LABEL: extern "C" void dsc_artifact_step(dsc::rt::StepContext *ctx) {
// CHECK: dsc::rt::Stream &[[S:s[0-9]+]] = ctx->stream(0);
// CHECK-NEXT: dsc::rt::Stream &[[M:s[0-9]+]] = ctx->stream(1);
// CHECK-NEXT: auto *[[XH:v[0-9]+]] = static_cast<const float *>(ctx->input(0));
// CHECK-NEXT: auto *[[X:v[0-9]+]] = reinterpret_cast<float *>(arena + {{[0-9]+}});
// CHECK-NEXT: ctx->countTransfer(dsc::rt::TransferDirection::HostToDevice, 16 * sizeof(*[[X]]));
// CHECK-NEXT: [[S]].enqueue(dsc_task_t{dsc_memcpy_task, {dsc_ptr([[X]]), dsc_ptr([[XH]])}, 64}, "host to device copy");
// CHECK: static_cast<float *>(ctx->state(0));
// CHECK: [[S]].enqueue(dsc_task_t{kernel0_task, {dsc_ptr([[X]]), dsc_ptr(v{{[0-9]+}}), dsc_ptr(v{{[0-9]+}}), dsc_ptr(v{{[0-9]+}})}, 0}, "kernel0 (dsc.linear)");
// CHECK: [[S]].enqueue(dsc_task_t{kernel{{[0-9]+}}_task, {dsc_ptr(v{{[0-9]+}}), dsc_ptr([[A:v[0-9]+]])}, 0}, "kernel{{[0-9]+}} (copy)");
// CHECK-NEXT: auto [[E0:e[0-9]+]] = [[S]].recordEvent();
// CHECK-NEXT: [[M]].wait(*[[E0]]);
// CHECK-NEXT: ctx->allReduceSum([[A]], 1, ElementType::F32, 0, [[M]], dsc::rt::CommGroup::World);
// CHECK-NEXT: auto [[E1:e[0-9]+]] = [[M]].recordEvent();
// CHECK: ctx->allReduceSum(v{{[0-9]+}}, 1, ElementType::F32, 1, [[M]], dsc::rt::CommGroup::World);
// CHECK-NEXT: auto [[E3:e[0-9]+]] = [[M]].recordEvent();
// CHECK-NEXT: [[S]].wait(*[[E3]]);
// CHECK: auto *[[L:v[0-9]+]] = static_cast<float *>(ctx->output(0));
// CHECK-NEXT: ctx->countTransfer(dsc::rt::TransferDirection::DeviceToHost, 1 * sizeof(*[[L]]));
// CHECK-NEXT: [[S]].enqueue(dsc_task_t{dsc_memcpy_task, {dsc_ptr([[L]]), dsc_ptr(v{{[0-9]+}})}, 4}, "device to host copy");
// CHECK-NEXT: [[S]].synchronize();
// CHECK-NEXT: [[M]].synchronize();
// CHECK-NEXT: dsc_raise_index_error();
// CHECK-NEXT: }

// The CUDA flavour: the same loops as __global__ grid-stride kernels
// launched on the kernel's stream, GEMMs on it too, constants uploaded once,
// host/device copies with cudaMemcpyAsync on the compute stream, no thread
// of its own for any stream, and the step ends synchronizing its streams
// after an error check.
// RUN: dsc-opt %s --dsc-data-parallel=world-size=2 --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cuda | FileCheck %s --check-prefix=CUDA
// CUDA: #include "dsc/runtime/GeneratedCode.cuh"
// CUDA: const dsc::rt::StreamDesc kStreams[] = {
// CUDA-NEXT: {"compute", false, false},
// CUDA-NEXT: {"comm", false, true},
// CUDA: const dsc::rt::ArtifactInfo kInfo = {dsc::rt::kArtifactAbiVersion, "cuda",
// CUDA: DSC_GLOBAL void kernel1_0(
// CUDA-LABEL: extern "C" void dsc_artifact_step(
// CUDA: dsc::rt::Stream &[[S:s[0-9]+]] = ctx->stream(0);
// CUDA-NEXT: cudaStream_t [[S]]_h = dsc_handle([[S]]);
// CUDA: dsc_check(cudaMemcpyAsync(v{{[0-9]+}}, v{{[0-9]+}}, 16 * sizeof(*v{{[0-9]+}}), cudaMemcpyHostToDevice, [[S]]_h), "host to device copy");
// CUDA: kernel0([[S]]_h, v{{[0-9]+}},
// CUDA: static const auto *kConst0_device = dsc_upload(kConst0, sizeof(kConst0));
// CUDA: ctx->allReduceSum(v{{[0-9]+}}, 1, ElementType::F32, 0, s{{[0-9]+}}, dsc::rt::CommGroup::World);
// CUDA: dsc_check(cudaMemcpyAsync(v{{[0-9]+}}, v{{[0-9]+}}, 1 * sizeof(*v{{[0-9]+}}), cudaMemcpyDeviceToHost, [[S]]_h), "device to host copy");
// CUDA-NEXT: dsc_check(cudaGetLastError(), "a kernel launch");
// CUDA-NEXT: [[S]].synchronize();
// CUDA: dsc_raise_index_error();
// CUDA-NEXT: }
// CUDA-NOT: cudaDeviceSynchronize

dsc.state parameter @"fc.weight" : tensor<4x8xf32>
dsc.state parameter @"fc.bias" : tensor<4xf32>
func.func @forward(%x: tensor<2x8xf32> {dsc.input = "x"}, %y: tensor<2xi64> {dsc.input = "y"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @"fc.weight" : tensor<4x8xf32>
  %b = dsc.load @"fc.bias" : tensor<4xf32>
  %h = dsc.linear %x, %w, %b : tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>
  %c = dsc.constant dense<0.5> : tensor<f32>
  %s = dsc.mul %h, %c : tensor<2x4xf32>, tensor<f32>
  %th = dsc.tanh %s : tensor<2x4xf32>
  %co = dsc.cos %th : tensor<2x4xf32>
  %t = dsc.sin %co : tensor<2x4xf32>
  %l = dsc.cross_entropy %t, %y : tensor<2x4xf32>, tensor<2xi64>
  return %l : tensor<f32>
}
