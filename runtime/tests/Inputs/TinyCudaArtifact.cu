//===- TinyCudaArtifact.cu - TinyArtifact.cpp's model as a CUDA artifact --===//
//
// The model of TinyArtifact.cpp (same states, inputs, output and loss, so
// that TinyModel.h's expected losses hold), written as dsc-compile
// --target=cuda writes artifacts (lib/Target/Cpp/EmitCpp.cpp's CUDA
// preamble) and built as it builds them, with nvcc: every pointer the
// StepContext hands out is device memory, and the artifact checks that it
// is; the embedding rows are gathered by a kernel, the dot products are one
// runtime GEMM (dsc::rt::cuda::gemmF32, resolved against dsc-run at load
// time), the global sum and token count are two allReduceSum collectives on
// device buffers (sequence numbers 1 and 2), the loss is computed in the
// arena and copied device to device into output(0), and the step ends in
// cudaDeviceSynchronize, throwing std::runtime_error on CUDA errors.
//
// Knobs: TINY_WORLD_SIZE, TINY_MICRO_BATCH.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/Artifact.h"
#include "dsc/runtime/CudaGemm.h"

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
constexpr int64_t kArenaBytes = kLossOffset + 4;

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

const ArtifactInfo kInfo = {
    kArtifactAbiVersion, "cuda",   "TinyCudaArtifact.cu", TINY_WORLD_SIZE,
    kArenaBytes,         3,        kStates,               2,
    kInputs,             1,        kOutputs};

void checkCuda(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string("TinyCudaArtifact: ") + what + ": " +
                             cudaGetErrorString(status));
}

/// Throws unless `pointer` is device memory: what a CUDA artifact is owed.
void checkDevice(const void *pointer, const char *what) {
  cudaPointerAttributes attributes{};
  checkCuda(cudaPointerGetAttributes(&attributes, pointer), what);
  if (attributes.type != cudaMemoryTypeDevice)
    throw std::runtime_error(std::string("TinyCudaArtifact: ") + what +
                             " is not device memory");
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
  const auto *tokens = static_cast<const int64_t *>(context->input(0));
  const auto *targets = static_cast<const int64_t *>(context->input(1));
  void *output = context->output(0);
  checkDevice(wte, "state 0");
  checkDevice(head, "state 1");
  checkDevice(bias, "state 2");
  checkDevice(tokens, "input 0");
  checkDevice(targets, "input 1");
  checkDevice(output, "output 0");

  auto *rows = reinterpret_cast<float *>(arena);
  auto *q = reinterpret_cast<float *>(arena + kQOffset);
  auto *sum = reinterpret_cast<float *>(arena + kSumOffset);
  auto *count = reinterpret_cast<int64_t *>(arena + kCountOffset);
  auto *loss = reinterpret_cast<float *>(arena + kLossOffset);

  gather<<<1, 256>>>(wte, tokens, rows);
  // q = rows @ head^T: [kTokens, kDim] x [kDim, 1].
  cuda::GemmShape shape;
  shape.m = kTokens;
  shape.n = 1;
  shape.k = kDim;
  shape.transB = true;
  cuda::gemmF32(shape, rows, head, q, 1.0f, 0.0f, nullptr);
  sumTokens<<<1, 1>>>(q, bias, targets, sum, count);
  checkCuda(cudaGetLastError(), "a kernel launch");
  context->allReduceSum(sum, 1, ElementType::F32, 1);
  context->allReduceSum(count, 1, ElementType::I64, 2);
  divide<<<1, 1>>>(sum, count, loss);
  checkCuda(cudaMemcpy(output, loss, sizeof(float), cudaMemcpyDeviceToDevice),
            "output copy");
  checkCuda(cudaGetLastError(), "a kernel launch");
  checkCuda(cudaDeviceSynchronize(), "the step");
}
