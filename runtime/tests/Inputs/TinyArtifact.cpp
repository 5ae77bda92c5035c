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
// loading fails), TINY_EXPERT_PARALLEL_SIZE (ArtifactInfo's; with a value
// above 1 each step also exchanges, after the loss's collectives, one i64
// per member of the Expert group by allToAll (sequence 3) and sums one over
// the ExpertData group (sequence 4), and throws unless each rank received
// exactly what its groups' members sent: the groups' routing in dsc-run).
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
#ifndef TINY_EXPERT_PARALLEL_SIZE
#define TINY_EXPERT_PARALLEL_SIZE 1
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
    TINY_EXPERT_PARALLEL_SIZE,
    kArenaBytes,      3,       kStates,            2,
    kInputs,          1,       kOutputs,           1,
    kStreams, 1,
    /*hostArenaBytes=*/0, /*tensorParallelSize=*/1};

int64_t stepsRun = 0;

} // namespace

#ifdef TINY_CALL_MISSING
namespace dsc::rt {
void functionNotInTheRuntime(int);
}
#endif

extern "C" const ArtifactInfo *dsc_artifact_info(void) { return &kInfo; }

namespace {
#if TINY_EXPERT_PARALLEL_SIZE > 1
/// Rank r sends 100 * r + j to the member j of its Expert group, which then
/// holds, in block j, what member j sent it; then each rank sums its rank
/// over its ExpertData group (r % P + k * P).
void exchangeOverTheExpertGroups(StepContext &context, Stream &comm) {
  const int32_t p = context.groupSize(CommGroup::Expert);
  const int32_t r = context.rank(), index = context.groupRank(CommGroup::Expert);
  check(p == TINY_EXPERT_PARALLEL_SIZE && index == r % p,
        "TinyArtifact: the Expert group is not of the artifact's size");
  int64_t blocks[TINY_EXPERT_PARALLEL_SIZE];
  for (int32_t j = 0; j < p; ++j)
    blocks[j] = 100 * r + j;
  context.allToAll(blocks, 1, ElementType::I64, 3, comm, CommGroup::Expert);
  int64_t rankSum = r;
  context.allReduceSum(&rankSum, 1, ElementType::I64, 4, comm,
                       CommGroup::ExpertData);
  comm.synchronize();
  for (int32_t j = 0; j < p; ++j)
    check(blocks[j] == 100 * ((r / p) * p + j) + index,
          "TinyArtifact: allToAll over the Expert group delivered " +
              std::to_string(blocks[j]) + " in block " + std::to_string(j));
  int64_t expected = 0;
  for (int32_t k = 0; k < context.worldSize() / p; ++k)
    expected += r % p + k * p;
  check(rankSum == expected,
        "TinyArtifact: the sum over the ExpertData group is " +
            std::to_string(rankSum) + ", not " + std::to_string(expected));
}
#endif
} // namespace

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
#if TINY_EXPERT_PARALLEL_SIZE > 1
  exchangeOverTheExpertGroups(*context, comm);
#endif
  comm.synchronize();
  *static_cast<float *>(context->output(0)) =
      sum / static_cast<float>(count);
}
