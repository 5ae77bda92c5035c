//===- Artifact.h - the interface between generated code and dsc-run -*- C++ -*-===//
//
// dsc-compile turns a model into an artifact: a shared library built from
// generated C++ (or CUDA) that exports two C symbols. dsc-run dlopen()s it,
// reads ArtifactInfo to learn what to load and feed, and calls the step
// function once per step with a StepContext that owns the memory and the
// communicator. Generated code never allocates and never invents
// communication: every buffer is an offset in the arena the compiler
// planned, every collective is a call the compiler emitted, and every
// kernel, copy and collective goes on a stream the artifact names, ordered
// across streams by the events it records and waits for.
//
// Bump kArtifactAbiVersion on any change to these declarations.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_ARTIFACT_H
#define DSC_RUNTIME_ARTIFACT_H

#include <cstddef>
#include <cstdint>

namespace dsc::rt {

constexpr int32_t kArtifactAbiVersion = 7;

class Stream;

/// Element types as stored in memory and in safetensors files. I1 takes one
/// byte per element (0 or 1), as torch.bool does.
enum class ElementType : int32_t { F64, F32, F16, BF16, I64, I32, I1 };

size_t elementSize(ElementType type);
const char *elementTypeName(ElementType type); // "f32", ... as in the IR

struct TensorDesc {
  const char *name;     // fully-qualified PyTorch name, or the input name
  ElementType type;
  int32_t rank;
  const int64_t *shape; // `rank` dimensions
  /// An integer input whose values index a table (token ids into the
  /// embedding, targets into the classifier's classes): every value must
  /// lie in [0, indexLimit), which dsc-run checks as it feeds the data.
  /// 0: no bound (every state and output, and inputs that index nothing).
  int64_t indexLimit;
};

/// Optimizer state (exp_avg, momentum, step count) and Gradient state (the
/// gradients accumulated over micro-batches) start at zero when the weights
/// file does not hold them; checkpoints do. Master is mixed precision's fp32
/// master weight of the 16-bit parameter X, named "X.master": a file without
/// that tensor gives it the (fp32) tensor X. A 16-bit float state whose file
/// tensor is f32 is rounded to nearest even as it is read.
enum class StateRole : int32_t { Parameter, Buffer, Optimizer, Gradient, Master };

struct StateDesc {
  TensorDesc tensor;
  StateRole role;
  /// A state partitioned over the ranks (ZeRO, docs/zero.md) has the shape
  /// of the whole tensor here (`wholeRank` dimensions; `wholeShape` null:
  /// not partitioned). `tensor` is then each rank's shard, [S] with S =
  /// ceil(numel / worldSize): rank r holds elements [r * S, (r + 1) * S)
  /// of the whole flattened, the last rank's tail zero. Weights files and
  /// checkpoints name the whole tensor.
  int32_t wholeRank;
  const int64_t *wholeShape;
  /// How a weights file that lacks this parameter fills it (the states a
  /// rewrite adds, such as experts; StateInit.cpp, docs/moe.md). With
  /// `initFrom`, the whole tensor repeats the stored tensor of that name
  /// along its leading dimension; with `initUniform` = b > 0, element i of
  /// the whole tensor is drawn from U(-b, b) by initUniformValue(name,
  /// initSeed, i). Neither: the file must hold the state.
  const char *initFrom;
  double initUniform;
  uint64_t initSeed;
};

/// A stream the artifact's steps enqueue work on (dscrt.stream). The runtime
/// creates one per entry, of its target's backend, before the first step.
struct StreamDesc {
  const char *name; // "compute", "comm"; unique
  /// CPU target: the stream has a worker thread of its own (CpuStream
  /// Threaded), so that its work overlaps the step's thread; otherwise its
  /// work runs on the thread that enqueues it (Inline). CUDA ignores it.
  bool ownThread;
  /// The artifact's collectives run on this stream (at most one has it: the
  /// runtime binds its communicator to it).
  bool collectives;
};

struct ArtifactInfo {
  int32_t abiVersion;   // kArtifactAbiVersion of the generated code
  const char *target;   // "cpu" or "cuda"
  const char *model;    // the model file the artifact was compiled from
  /// Ranks the artifact was compiled for; dsc-run refuses other world sizes.
  int32_t worldSize;
  /// Bytes of the activation arena, per rank: the compiler's memory plan.
  int64_t arenaBytes;
  int32_t numStates;
  const StateDesc *states;
  /// Graph inputs with their per-rank shapes (e.g. tokens [micro_batch, seq]).
  int32_t numInputs;
  const TensorDesc *inputs;
  int32_t numOutputs;
  const TensorDesc *outputs; // e.g. "loss", a scalar
  int32_t numStreams;
  const StreamDesc *streams;
  /// Calls of dsc_artifact_step per optimizer step (gradient accumulation):
  /// each call is one micro-batch, the update applies on every N-th.
  int32_t gradAccumSteps;
};

/// What generated code may ask of the runtime during a step. dsc-run
/// implements it; tests may implement it too.
class StepContext {
public:
  virtual ~StepContext() = default;
  /// Storage of state `i` (ArtifactInfo::states order), in device memory
  /// (host memory on the CPU target).
  virtual void *state(int32_t i) = 0;
  /// Input `i`, output `i`: host memory on every target (pinned on CUDA).
  /// The artifact copies them to and from device memory on its streams; the
  /// runtime reads the outputs once the step has returned.
  virtual const void *input(int32_t i) = 0;
  virtual void *output(int32_t i) = 0;
  /// The activation arena, ArtifactInfo::arenaBytes long, 256-byte aligned,
  /// in device memory.
  virtual void *arena() = 0;
  /// Stream `i` (ArtifactInfo::streams order): a CpuStream on the CPU target,
  /// a cuda::CudaStream on CUDA. The same streams on every step.
  virtual Stream &stream(int32_t i) = 0;
  /// Enqueues on `stream`, the artifact's collectives stream, the in-place
  /// sum over all ranks of `count` elements at `buffer`: it runs after the
  /// work enqueued on `stream` before the call, and work enqueued there
  /// after it runs after it. `sequence` numbers the collectives of a step in
  /// program order, identical on every rank; the runtime's watchdog reports
  /// it when a collective hangs.
  virtual void allReduceSum(void *buffer, size_t count, ElementType type,
                            int64_t sequence, Stream &stream) = 0;
  /// Enqueues on `stream`, as allReduceSum: `recv` (worldSize() * count
  /// elements) receives every rank's `send` (count), in rank order.
  virtual void allGather(const void *send, void *recv, size_t count,
                         ElementType type, int64_t sequence,
                         Stream &stream) = 0;
  /// Enqueues on `stream`, as allReduceSum: `recv` (count) receives block
  /// rank() of the sum over all ranks of `send` (worldSize() * count).
  virtual void reduceScatterSum(const void *send, void *recv, size_t count,
                                ElementType type, int64_t sequence,
                                Stream &stream) = 0;
  virtual int32_t rank() const = 0;
  virtual int32_t worldSize() const = 0;
  /// False for `dsc-run --eval`: a training step returns once its outputs
  /// (the loss) are written, before the backward pass and the optimizer.
  virtual bool training() const = 0;
};

} // namespace dsc::rt

extern "C" {
/// Static description of the artifact; valid for the library's lifetime.
const dsc::rt::ArtifactInfo *dsc_artifact_info(void);
/// Runs one step: reads inputs and state, writes outputs.
void dsc_artifact_step(dsc::rt::StepContext *context);
}

#endif // DSC_RUNTIME_ARTIFACT_H
