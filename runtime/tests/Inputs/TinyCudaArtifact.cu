//===- TinyCudaArtifact.cu - TinyArtifact.cpp's model as a CUDA artifact --===//
//
// The model of TinyArtifact.cpp (same states, inputs, output and loss, so
// that TinyModel.h's expected losses hold), written as dsc-compile
// --target=cuda writes artifacts (lib/Target/Cpp/EmitCpp.cpp's CUDA
// preamble) and built as it builds them, with nvcc: state and arena are
// device memory, inputs and outputs pinned host memory, and the artifact
// checks that they are; on stream "compute" the inputs are copied to the
// arena (cudaMemcpyAsync), the embedding rows are gathered by a kernel, the
// dot products are one runtime GEMM (dsc::rt::cuda::gemmF32, resolved
// against dsc-run at load time); the global sum and token count are two
// allReduceSum collectives on device buffers (sequence numbers 1 and 2) on
// stream "comm", which waits for an event of compute, and compute waits for
// an event of comm before it computes the loss in the arena and copies it
// to output(0); the step ends synchronizing both streams, throwing
// std::runtime_error on CUDA errors.
//
// Knobs: TINY_WORLD_SIZE, TINY_MICRO_BATCH.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/Artifact.h"
#include "dsc/runtime/CudaGemm.h"
#include "dsc/runtime/CudaStream.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#ifndef TINY_WORLD_SIZE
#define TINY_WORLD_SIZE 1
#endif
#ifndef TINY_MICRO_BATCH
#define TINY_MICRO_BATCH 4
#endif

using namespace dsc::rt;

namespace {

constexpr int64_t kVocab = 16, kDim = 8;
constexpr int64_t kMicroBatch = TINY_MICRO_BATCH, kSeq = 4;
constexpr int64_t kTokens = kMicroBatch * kSeq;

constexpr int64_t align256(int64_t bytes) { return (bytes + 255) / 256 * 256; }
// The arena: rows [kTokens, kDim] f32, q [kTokens] f32, the sum (f32), the
// token count (i64) and the loss (f32), each at a 256-byte boundary.
constexpr int64_t kQOffset = align256(kTokens * kDim * 4);
constexpr int64_t kSumOffset = align256(kQOffset + kTokens * 4);
constexpr int64_t kCountOffset = kSumOffset + 256;
constexpr int64_t kLossOffset = kCountOffset + 256;
constexpr int64_t kTokensOffset = kLossOffset + 256;
constexpr int64_t kTargetsOffset = align256(kTokensOffset + kTokens * 8);
constexpr int64_t kArenaBytes = kTargetsOffset + kTokens * 8;

const int64_t kWteShape[] = {kVocab, kDim};
const int64_t kHeadShape[] = {1, kDim};
const int64_t kBiasShape[] = {kVocab};
const int64_t kInputShape[] = {kMicroBatch, kSeq};

const StateDesc kStates[] = {
    {{"wte.weight", ElementType::F32, 2, kWteShape}, StateRole::Parameter},
    {{"head.weight", ElementType::F32, 2, kHeadShape}, StateRole::Parameter},
    {{"bias", ElementType::F32, 1, kBiasShape}, StateRole::Buffer},
};
const TensorDesc kInputs[] = {
    {"tokens", ElementType::I64, 2, kInputShape},
    {"targets", ElementType::I64, 2, kInputShape},
};
const TensorDesc kOutputs[] = {{"loss", ElementType::F32, 0, nullptr}};
const StreamDesc kStreams[] = {{"compute", false, false}, {"comm", false, true}};

const ArtifactInfo kInfo = {
    kArtifactAbiVersion, "cuda",   "TinyCudaArtifact.cu", TINY_WORLD_SIZE,
    /*expertParallelSize=*/1,
    kArenaBytes,         3,        kStates,               2,
    kInputs,             1,        kOutputs,              2,
    kStreams, 1,
    /*hostArenaBytes=*/0, /*tensorParallelSize=*/1};

void checkCuda(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string("TinyCudaArtifact: ") + what + ": " +
                             cudaGetErrorString(status));
}

/// Throws unless `pointer` is memory of `type`: what a CUDA artifact is
/// owed (device memory, or pinned host memory for inputs and outputs).
void checkMemory(const void *pointer, cudaMemoryType type, const char *what) {
  cudaPointerAttributes attributes{};
  checkCuda(cudaPointerGetAttributes(&attributes, pointer), what);
  if (attributes.type != type)
    throw std::runtime_error(std::string("TinyCudaArtifact: ") + what +
                             (type == cudaMemoryTypeDevice
                                  ? " is not device memory"
                                  : " is not pinned host memory"));
}
void checkDevice(const void *pointer, const char *what) {
  checkMemory(pointer, cudaMemoryTypeDevice, what);
}

__global__ void gather(const float *wte, const int64_t *tokens, float *rows) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
       i < kTokens * kDim; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t token = tokens[i / kDim];
    if (token < 0 || token >= kVocab)
      __trap();
    rows[i] = wte[token * kDim + i % kDim];
  }
}

__global__ void sumTokens(const float *q, const float *bias,
                          const int64_t *targets, float *sum,
                          int64_t *count) {
  float total = 0;
  for (int64_t t = 0; t < kTokens; ++t) {
    if (targets[t] < 0 || targets[t] >= kVocab)
      __trap();
    total += q[t] + bias[targets[t]];
  }
  *sum = total;
  *count = kTokens;
}

__global__ void divide(const float *sum, const int64_t *count, float *loss) {
  *loss = *sum / static_cast<float>(*count);
}

} // namespace

extern "C" const ArtifactInfo *dsc_artifact_info(void) { return &kInfo; }

extern "C" void dsc_artifact_step(StepContext *context) {
  auto *arena = static_cast<char *>(context->arena());
  if (reinterpret_cast<uintptr_t>(arena) % 256 != 0)
    throw std::runtime_error("TinyCudaArtifact: arena is not 256-byte aligned");
  checkDevice(arena, "the arena");
  const auto *wte = static_cast<const float *>(context->state(0));
  const auto *head = static_cast<const float *>(context->state(1));
  const auto *bias = static_cast<const float *>(context->state(2));
  const void *hostTokens = context->input(0);
  const void *hostTargets = context->input(1);
  void *output = context->output(0);
  checkDevice(wte, "state 0");
  checkDevice(head, "state 1");
  checkDevice(bias, "state 2");
  checkMemory(hostTokens, cudaMemoryTypeHost, "input 0");
  checkMemory(hostTargets, cudaMemoryTypeHost, "input 1");
  checkMemory(output, cudaMemoryTypeHost, "output 0");
  Stream &compute = context->stream(0), &comm = context->stream(1);
  cudaStream_t stream = static_cast<cuda::CudaStream &>(compute).handle();
  auto *tokens = reinterpret_cast<int64_t *>(arena + kTokensOffset);
  auto *targets = reinterpret_cast<int64_t *>(arena + kTargetsOffset);
  checkCuda(cudaMemcpyAsync(tokens, hostTokens, kTokens * 8,
                            cudaMemcpyHostToDevice, stream), "input copy");
  checkCuda(cudaMemcpyAsync(targets, hostTargets, kTokens * 8,
                            cudaMemcpyHostToDevice, stream), "input copy");

  auto *rows = reinterpret_cast<float *>(arena);
  auto *q = reinterpret_cast<float *>(arena + kQOffset);
  auto *sum = reinterpret_cast<float *>(arena + kSumOffset);
  auto *count = reinterpret_cast<int64_t *>(arena + kCountOffset);
  auto *loss = reinterpret_cast<float *>(arena + kLossOffset);

  gather<<<1, 256, 0, stream>>>(wte, tokens, rows);
  // q = rows @ head^T: [kTokens, kDim] x [kDim, 1].
  cuda::GemmShape shape;
  shape.m = kTokens;
  shape.n = 1;
  shape.k = kDim;
  shape.transB = true;
  cuda::gemmF32(shape, rows, head, q, 1.0f, 0.0f, stream);
  sumTokens<<<1, 1, 0, stream>>>(q, bias, targets, sum, count);
  checkCuda(cudaGetLastError(), "a kernel launch");
  auto written = compute.recordEvent();
  comm.wait(*written);
  context->allReduceSum(sum, 1, ElementType::F32, 1, comm, CommGroup::World);
  context->allReduceSum(count, 1, ElementType::I64, 2, comm, CommGroup::World);
  auto reduced = comm.recordEvent();
  compute.wait(*reduced);
  divide<<<1, 1, 0, stream>>>(sum, count, loss);
  checkCuda(cudaMemcpyAsync(output, loss, sizeof(float), cudaMemcpyDeviceToHost,
                            stream), "output copy");
  checkCuda(cudaGetLastError(), "a kernel launch");
  compute.synchronize();
  comm.synchronize();
}
