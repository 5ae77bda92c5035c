//===- TinyArtifact.cpp - a hand-written step artifact for dsc-run's tests -===//
//
// What dsc-compile will generate, written by hand: a model small enough for
// its loss to be computed independently (RunTestModel.h), honest to the ABI
// (Artifact.h). Per token t of the global batch,
//
//   q(t) = dot(wte[tokens[t]], head) + bias[targets[t]]
//   loss = sum over the global batch of q / number of tokens in it
//
// computed as generated code would: the embedding rows gathered into the
// arena, the dot products as one runtime GEMM (dsc::rt::cpu::gemmF32,
// resolved against dsc-run at load time), and the global sum and token
// count as two allReduceSum collectives (f32, i64) with sequence numbers 1
// and 2 of the step, on stream 0 ("comm", collectives on a worker thread of
// its own), which the step synchronizes before it reads them.
//
// Compile-time knobs make the variants the tests need: TINY_WORLD_SIZE,
// TINY_MICRO_BATCH, TINY_SEQ, TINY_ABI_VERSION, TINY_SECOND_INPUT (the
// name of the second input), TINY_STALL_RANK (a rank that sleeps instead of
// joining step 2's first collective, to trip the watchdog),
// TINY_CALL_MISSING (calls a runtime function that does not exist, so that
// loading fails).
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/Artifact.h"
#include "dsc/runtime/CpuGemm.h"
#include "dsc/runtime/Error.h"
#include "dsc/runtime/Stream.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#ifndef TINY_WORLD_SIZE
#define TINY_WORLD_SIZE 1
#endif
#ifndef TINY_MICRO_BATCH
#define TINY_MICRO_BATCH 4
#endif
#ifndef TINY_SEQ
#define TINY_SEQ 4
#endif
#ifndef TINY_ABI_VERSION
#define TINY_ABI_VERSION dsc::rt::kArtifactAbiVersion
#endif
#ifndef TINY_SECOND_INPUT
#define TINY_SECOND_INPUT "targets"
#endif
#ifndef TINY_STALL_RANK
#define TINY_STALL_RANK -1
#endif

using namespace dsc::rt;

namespace {

constexpr int64_t kVocab = 16, kDim = 8;
constexpr int64_t kMicroBatch = TINY_MICRO_BATCH, kSeq = TINY_SEQ;
constexpr int64_t kTokens = kMicroBatch * kSeq;
// The arena: the gathered rows [kTokens, kDim], then q [kTokens], at a
// 256-byte boundary as a memory plan would place it.
constexpr int64_t kRowsBytes = kTokens * kDim * 4;
constexpr int64_t kQOffset = (kRowsBytes + 255) / 256 * 256;
constexpr int64_t kArenaBytes = kQOffset + kTokens * 4;

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
    {TINY_SECOND_INPUT, ElementType::I64, 2, kInputShape},
};
const TensorDesc kOutputs[] = {{"loss", ElementType::F32, 0, nullptr}};
const StreamDesc kStreams[] = {{"comm", true, true}};

const ArtifactInfo kInfo = {
    TINY_ABI_VERSION, "cpu",   "TinyArtifact.cpp", TINY_WORLD_SIZE,
    /*expertParallelSize=*/1,
    kArenaBytes,      3,       kStates,            2,
    kInputs,          1,       kOutputs,           1,
    kStreams, 1};

int64_t stepsRun = 0;

} // namespace

#ifdef TINY_CALL_MISSING
namespace dsc::rt {
void functionNotInTheRuntime(int);
}
#endif

extern "C" const ArtifactInfo *dsc_artifact_info(void) { return &kInfo; }

extern "C" void dsc_artifact_step(StepContext *context) {
  ++stepsRun;
#ifdef TINY_CALL_MISSING
  functionNotInTheRuntime(1);
#endif
  auto *arena = static_cast<char *>(context->arena());
  check(reinterpret_cast<uintptr_t>(arena) % 256 == 0,
        "TinyArtifact: arena is not 256-byte aligned");
  const auto *wte = static_cast<const float *>(context->state(0));
  const auto *head = static_cast<const float *>(context->state(1));
  const auto *bias = static_cast<const float *>(context->state(2));
  const auto *tokens = static_cast<const int64_t *>(context->input(0));
  const auto *targets = static_cast<const int64_t *>(context->input(1));
  auto *rows = reinterpret_cast<float *>(arena);
  auto *q = reinterpret_cast<float *>(arena + kQOffset);

  for (int64_t t = 0; t < kTokens; ++t) {
    check(tokens[t] >= 0 && tokens[t] < kVocab && targets[t] >= 0 &&
              targets[t] < kVocab,
          "TinyArtifact: token id " + std::to_string(tokens[t]) + " or " +
              std::to_string(targets[t]) + " is not below the vocabulary " +
              std::to_string(kVocab));
    for (int64_t d = 0; d < kDim; ++d)
      rows[t * kDim + d] = wte[tokens[t] * kDim + d];
  }
  // q = rows @ head^T: [kTokens, kDim] x [kDim, 1].
  cpu::GemmShape shape;
  shape.m = kTokens;
  shape.n = 1;
  shape.k = kDim;
  shape.transB = true;
  cpu::gemmF32(shape, rows, head, q);

  float sum = 0;
  for (int64_t t = 0; t < kTokens; ++t)
    sum += q[t] + bias[targets[t]];
  if (context->rank() == TINY_STALL_RANK && stepsRun == 2)
    std::this_thread::sleep_for(std::chrono::seconds(600));
  Stream &comm = context->stream(0);
  context->allReduceSum(&sum, 1, ElementType::F32, 1, comm, CommGroup::World);
  int64_t count = kTokens;
  context->allReduceSum(&count, 1, ElementType::I64, 2, comm,
                        CommGroup::World);
  comm.synchronize();
  *static_cast<float *>(context->output(0)) =
      sum / static_cast<float>(count);
}
