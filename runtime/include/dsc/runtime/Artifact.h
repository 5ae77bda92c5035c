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

constexpr int32_t kArtifactAbiVersion = 19;

class Stream;

/// Element types as stored in memory and in safetensors files. I1 takes one
/// byte per element (0 or 1), as torch.bool does.
enum class ElementType : int32_t { F64, F32, F16, BF16, I64, I32, I1 };

size_t elementSize(ElementType type);
const char *elementTypeName(ElementType type); // "f32", ... as in the IR

/// The groups of ranks a collective runs over, and a partitioned state is
/// spread over. With W ranks (ArtifactInfo::worldSize) and expert-parallel
/// size E (ArtifactInfo::expertParallelSize, which divides W), rank r is in
/// one group of each kind, at an index of its own:
///   World: all W ranks; r at index r.
///   Expert: the E consecutive ranks g*E, ..., g*E + E - 1 with g = r / E
///     (the ranks that share out the experts of a layer); r at index r % E.
///   ExpertData: the W/E ranks r % E + k*E, k = 0 .. W/E - 1 (the ranks that
///     hold the same experts: expert parallelism's data-parallel group);
///     r at index r / E.
/// With E = 1 the Expert group is each rank alone and ExpertData is the
/// world; with E = W, Expert is the world and ExpertData each rank alone.
/// With tensor-parallel size T (ArtifactInfo::tensorParallelSize, which
/// divides W), Megatron's mesh, tensor innermost:
///   Tensor: the T consecutive ranks g*T, ..., g*T + T - 1 with g = r / T
///     (the ranks that split each layer's weights); r at index r % T.
///   Data: the W/T ranks r % T + k*T (the ranks that hold the same slices:
///     data parallelism's group); r at index r / T.
/// Both at once (DeepSpeed-TED: experts under tensor parallelism, E * T
/// dividing W, E the expert-parallel size), the expert groups run along the
/// data dimension: with t = r % T and d = r / T,
///   Expert: the E ranks (g*E + k)*T + t, g = d / E; r at index d % E;
///   ExpertData: the W/(E*T) ranks (d % E + k*E)*T + t; r at index d / E;
/// which is the layout above when T = 1.
/// With pipeline-parallel size P (ArtifactInfo::pipelineParallelSize, P * T
/// dividing W), stages outermost: rank r runs stage r / (W/P), and
///   Pipeline: the P ranks r % (W/P) + s*(W/P), s = 0 .. P - 1 (the ranks
///     that pass one micro-batch's activations along); r at index r / (W/P).
///   Data then holds the D = W/(T*P) ranks of one stage with the same tensor
///     index: (r % (W/P)) % T + k*T, k < D; r at index (r % (W/P)) / T.
enum class CommGroup : int32_t {
  World = 0,
  Expert = 1,
  ExpertData = 2,
  Tensor = 3,
  Data = 4,
  Pipeline = 5
};

/// A pipeline stage's neighbours in its Pipeline group (ArtifactInfo::
/// pipelineParallelSize): the stage after it and the stage before it.
enum class PipelinePeer : int32_t { Next, Previous };

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
/// tensor is f32 is rounded to nearest even as it is read. Teacher is a
/// frozen teacher's weight (knowledge distillation), named "teacher.X": read
/// from the teacher's own weights file (dsc-run --teacher-weights) as X,
/// never from the student's weights or a checkpoint, which do not hold it.
enum class StateRole : int32_t {
  Parameter,
  Buffer,
  Optimizer,
  Gradient,
  Master,
  Teacher
};

/// Where a state lives (ZeRO-Offload, docs/offload.md): device memory, or
/// pinned host memory, which only the artifact's host kernels (the
/// optimizer's update on the host CPU) touch. On the CPU target both are
/// host memory, in separate pools, so that every copy between them is real.
/// Nvme (ZeRO-Infinity, docs/nvme.md): the state lives in this rank's NVMe
/// file; the artifact reads it into its own host buffers
/// (StepContext::nvmeRead) and writes it back (nvmeWrite), and
/// StepContext::state has no memory for it.
enum class MemoryTier : int32_t { Device, Host, Nvme };

/// The direction of a copy between host and device memory.
enum class TransferDirection : int32_t { DeviceToHost, HostToDevice };

struct StateDesc {
  TensorDesc tensor;
  StateRole role;
  /// A state partitioned over the ranks of a group has the shape of the
  /// whole tensor here (`wholeRank` dimensions; `wholeShape` null: not
  /// partitioned). `tensor` is then each rank's shard, [S] with S =
  /// ceil(numel / G), G the size of the group `partitionGroup` names: the
  /// rank at index i of that group holds elements [i * S, (i + 1) * S) of
  /// the whole flattened, the tail past numel zero. Weights files and
  /// checkpoints name the whole tensor.
  int32_t wholeRank;
  const int64_t *wholeShape;
  /// A CommGroup: World for ZeRO's partitions (docs/zero.md; G = W, rank r
  /// holds shard r), Expert for expert parallelism's (docs/moe.md; G = P,
  /// rank r holds shard r % P: for experts stacked [E, ...] with P dividing
  /// E, exactly its E/P experts, which the ranks of its ExpertData group
  /// hold alike), ExpertData for ZeRO's partitions of those experts
  /// (docs/zero.md): of block r % P of the whole (its n/P elements), rank r
  /// holds [d * S, (d + 1) * S) with d = r / P and S = ceil(n / P / D) over
  /// the D = W/P ranks of its ExpertData group, the block's tail past n/P
  /// zero. Data for ZeRO's partitions under tensor parallelism
  /// (docs/tensor-parallel.md): rank r holds [d * S, (d + 1) * S), d = r / T,
  /// S = ceil(n / D) over the D = W/T ranks of its Data group, of the whole
  /// (n = numel) or, when partitionBlocks >= 1, of the rank's tensor-parallel
  /// slice (as below, its blocks in order, n = numel / T). World (0) for a
  /// state that is not partitioned.
  int32_t partitionGroup;
  /// How a weights file that lacks this parameter fills it (the states a
  /// rewrite adds, such as experts; StateInit.cpp, docs/moe.md). With
  /// `initFrom`, the whole tensor repeats the stored tensor of that name
  /// along its leading dimension; with `initUniform` = b > 0, element i of
  /// the whole tensor is drawn from U(-b, b) by initUniformValue(name,
  /// initSeed, i) (a Master state draws with its parameter's name). Neither:
  /// the file must hold the state.
  const char *initFrom;
  double initUniform;
  uint64_t initSeed;
  /// Device memory (StepContext::state is device memory) or pinned host
  /// memory (host memory on every target).
  MemoryTier tier;
  /// A state partitioned over the Tensor group (tensor parallelism's slice
  /// of a weight, docs/tensor-parallel.md) is not a flat shard: the whole
  /// flattened, viewed as [B, T, C] with B = partitionBlocks (0 or 1: one
  /// block), the rank at index i of its Tensor group holds [:, i, :], in
  /// that order (`tensor` is its shape). For the Data group, 0: ZeRO
  /// partitions the whole; B >= 1: the rank's slice of B blocks. For the
  /// Expert group, 0: the rank's experts of the whole; B >= 1 (experts
  /// whose feed-forward block tensor parallelism splits): of the rank's
  /// tensor-parallel slice ([B, C], B a multiple of the experts), the
  /// rank at index i of its Expert group holds blocks [i*B/P, (i+1)*B/P),
  /// its experts' slices. Ignored for other groups.
  int64_t partitionBlocks;
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
  /// Expert-parallel size P: the size of the Expert group (CommGroup). At
  /// least 1 and a divisor of worldSize (dsc-run refuses others); 1 for a
  /// model without expert parallelism.
  int32_t expertParallelSize;
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
  /// each call is one micro-batch; the N-th, on which endsOptimizerStep()
  /// is true, reduces the gradients and updates.
  int32_t gradAccumSteps;
  /// Bytes of the arena in pinned host memory, per rank (ZeRO-Offload's
  /// copies of gradients and updated parameters): the compiler's memory plan.
  int64_t hostArenaBytes;
  /// Tensor-parallel size T: the size of the Tensor group (CommGroup). At
  /// least 1 and a divisor of worldSize; the W / T ranks of a Data group
  /// read different micro-batches, the T ranks of a Tensor group the same.
  int32_t tensorParallelSize;
  /// Pipeline-parallel size P: the size of the Pipeline group (CommGroup),
  /// at least 1, P * tensorParallelSize dividing worldSize. With P > 1 the
  /// artifact holds one program per stage (dsc_artifact_stages); this one
  /// is stage `pipelineStage`'s, whose states, inputs and arena these
  /// tables describe. One call runs an optimizer step's gradAccumSteps = 1
  /// call over all its micro-batches, stacked along the inputs' first
  /// dimension.
  int32_t pipelineParallelSize;
  int32_t pipelineStage;
};

/// What generated code may ask of the runtime during a step. dsc-run
/// implements it; tests may implement it too.
class StepContext {
public:
  virtual ~StepContext() = default;
  /// Storage of state `i` (ArtifactInfo::states order), in device memory
  /// (host memory on the CPU target); null for a state on NVMe.
  virtual void *state(int32_t i) = 0;
  /// Enqueue on `stream` the read of all `bytes` of NVMe state `i` from
  /// this rank's file into `buffer` (host memory), and the write of
  /// `buffer` into it: each runs after the work enqueued on `stream`
  /// before the call, and work enqueued there after it runs once it is
  /// complete. A failed transfer is an error the stream reports (Stream.h).
  /// dsc-run counts the bytes read and written.
  virtual void nvmeRead(int32_t i, void *buffer, size_t bytes,
                        Stream &stream) = 0;
  virtual void nvmeWrite(int32_t i, const void *buffer, size_t bytes,
                         Stream &stream) = 0;
  /// Input `i`, output `i`: host memory on every target (pinned on CUDA).
  /// The artifact copies them to and from device memory on its streams; the
  /// runtime reads the outputs once the step has returned.
  virtual const void *input(int32_t i) = 0;
  virtual void *output(int32_t i) = 0;
  /// The activation arena, ArtifactInfo::arenaBytes long, 256-byte aligned,
  /// in device memory.
  virtual void *arena() = 0;
  /// The host arena, ArtifactInfo::hostArenaBytes long, 256-byte aligned,
  /// in pinned host memory.
  virtual void *hostArena() = 0;
  /// Counts a copy of `bytes` between host and device memory that the
  /// artifact enqueued (inputs, outputs, ZeRO-Offload's transfers); dsc-run
  /// reports the counts per direction.
  virtual void countTransfer(TransferDirection direction, size_t bytes) = 0;
  /// Stream `i` (ArtifactInfo::streams order): a CpuStream on the CPU target,
  /// a cuda::CudaStream on CUDA. The same streams on every step.
  virtual Stream &stream(int32_t i) = 0;
  /// Enqueues on `stream`, the artifact's collectives stream, the in-place
  /// sum over the ranks of this rank's `group` of `count` elements at
  /// `buffer`: it runs after the work enqueued on `stream` before the call,
  /// and work enqueued there after it runs after it. `sequence` numbers the
  /// collectives of a step in program order, whatever their group, identical
  /// on every rank (it must grow within a step); the runtime's watchdog
  /// reports it when a collective hangs. Every rank issues the same
  /// collectives in the same order, so the ranks of each group issue its
  /// collectives in the same order too.
  virtual void allReduceSum(void *buffer, size_t count, ElementType type,
                            int64_t sequence, Stream &stream,
                            CommGroup group) = 0;
  /// As allReduceSum, the elementwise maximum (a vocabulary-parallel
  /// cross-entropy's largest logit over the tensor group).
  virtual void allReduceMax(void *buffer, size_t count, ElementType type,
                            int64_t sequence, Stream &stream,
                            CommGroup group) = 0;
  /// Enqueues on `stream`, as allReduceSum: `recv` (groupSize(group) *
  /// count elements) receives the `send` (count) of every rank of the
  /// group, in the order of their indices in it.
  virtual void allGather(const void *send, void *recv, size_t count,
                         ElementType type, int64_t sequence, Stream &stream,
                         CommGroup group) = 0;
  /// Enqueues on `stream`, as allReduceSum: `recv` (count) receives block
  /// groupRank(group) of the sum over the group's ranks of `send`
  /// (groupSize(group) * count).
  virtual void reduceScatterSum(const void *send, void *recv, size_t count,
                                ElementType type, int64_t sequence,
                                Stream &stream, CommGroup group) = 0;
  /// Enqueues on `stream`, as allReduceSum, an in-place all-to-all over the
  /// group (expert parallelism's dispatch and combine): `buffer` holds
  /// groupSize(group) blocks of `count` elements; block j goes to the rank
  /// at index j of the group, and afterwards block j holds the block that
  /// rank sent to this one (its block groupRank(group)).
  virtual void allToAll(void *buffer, size_t count, ElementType type,
                        int64_t sequence, Stream &stream, CommGroup group) = 0;
  /// As allReduceSum over the Pipeline group, but over its ranks at the
  /// `stageCount` stages `stages` only (increasing, this rank's stage among
  /// them): the gradient of a weight that only those stages hold (GPT-2's
  /// tied embedding and head at P > 2). The other stages do not issue it;
  /// `sequence` grows within this rank's step as for any collective.
  virtual void allReduceSumStages(void *buffer, size_t count, ElementType type,
                                  int64_t sequence, Stream &stream,
                                  const int32_t *stages,
                                  int32_t stageCount) = 0;
  /// Enqueues on `stream`, the artifact's collectives stream, the send of
  /// `count` elements at `buffer` to this rank's `peer` in its Pipeline
  /// group, tagged `microBatch`, and the receive into `buffer` of what that
  /// peer sends with the same tag. Ordered as allReduceSum; `sequence` as
  /// there. A send takes a copy of `buffer` when it runs and never waits
  /// for its receiver; a receive completes once the message has arrived.
  /// dsc-run waits for this step's sends to complete after the step.
  virtual void pipelineSend(const void *buffer, size_t count, ElementType type,
                            PipelinePeer peer, int64_t microBatch,
                            int64_t sequence, Stream &stream) = 0;
  virtual void pipelineRecv(void *buffer, size_t count, ElementType type,
                            PipelinePeer peer, int64_t microBatch,
                            int64_t sequence, Stream &stream) = 0;
  /// The number of ranks in this rank's `group`, and this rank's index in
  /// it (CommGroup).
  virtual int32_t groupSize(CommGroup group) const = 0;
  virtual int32_t groupRank(CommGroup group) const = 0;
  virtual int32_t rank() const = 0;
  virtual int32_t worldSize() const = 0;
  /// False for `dsc-run --eval`: a training step returns once its outputs
  /// (the loss) are written, before the backward pass and the optimizer.
  virtual bool training() const = 0;
  /// dsc.step_key's four integers for this call of the step: the run's
  /// seed, the optimizer step (1-based, as dsc-run numbers steps), the
  /// index of this rank's first sample of this call in the optimizer
  /// step's global batch, and 1 if the step trains (0 when training() is
  /// false). Host memory, valid until the step returns.
  virtual const int64_t *stepKey() = 0;
  /// Whether this call is the last micro-batch of its optimizer step (every
  /// call is without gradient accumulation): only that call reduces the
  /// accumulated gradients and updates; the others return once the
  /// gradients are accumulated. The same on every rank.
  virtual bool endsOptimizerStep() const = 0;
};

/// One static-shape variant of the step, for curriculum learning's sequence
/// lengths, random-LTD's kept tokens (docs/training.md) and staged
/// knowledge distillation (docs/distillation.md). An artifact built with
/// such schedules holds several: they share ArtifactInfo's states (a
/// variant without the teacher declares the teacher's states and reads
/// none), inputs (the full-length batch: a variant cuts it itself), outputs
/// and streams, and the one arena of ArtifactInfo::arenaBytes, the largest
/// variant's plan. dsc-run picks each step's variant from the schedules in
/// the run settings; variant 0 is the full-length step, dsc_artifact_step's.
struct StepVariant {
  int64_t seqlen;     // tokens of each sequence the step runs on
  int64_t kept;       // tokens the random-LTD blocks run on (seqlen: all)
  int32_t teacher;    // 1: runs the teacher (distillation), 0: the student alone
  int64_t arenaBytes; // this variant's own memory plan, <= arenaBytes
  double flops;       // the forward's matrix-product FLOPs per rank
  void (*step)(StepContext *context);
};

struct StepVariants {
  int32_t count;
  const StepVariant *variants;
};

/// The program of one pipeline stage: its tables (ArtifactInfo, with
/// pipelineStage = its index) and its step. dsc-run runs on rank r the
/// stage r / (W / P) of the artifact's dsc_artifact_stages.
struct PipelineStageProgram {
  const ArtifactInfo *(*info)(void);
  void (*step)(StepContext *context);
};

struct PipelineStagePrograms {
  int32_t count; // pipelineParallelSize
  const PipelineStageProgram *stages;
};

} // namespace dsc::rt

extern "C" {
/// Static description of the artifact; valid for the library's lifetime.
const dsc::rt::ArtifactInfo *dsc_artifact_info(void);
/// Runs one step: reads inputs and state, writes outputs.
void dsc_artifact_step(dsc::rt::StepContext *context);
/// Optional: the step's variants (StepVariant); absent in an artifact
/// without data schedules.
const dsc::rt::StepVariants *dsc_artifact_variants(void);
/// Optional: the stages' programs of a pipeline-parallel artifact;
/// dsc_artifact_info and dsc_artifact_step are then stage 0's.
const dsc::rt::PipelineStagePrograms *dsc_artifact_stages(void);
}

#endif // DSC_RUNTIME_ARTIFACT_H
