//===- Run.h - dsc-run: execute a step artifact on every rank ---*- C++ -*-===//
//
// The pieces of dsc-run (docs/running.md), each testable on its own, and
// runMain, which puts them together: the command line, the checks of an
// artifact against the job (target, world size, batch, sequence length),
// loading its state from safetensors, the StepContext that generated code
// talks to, the targets (where the buffers live, which communicator sums),
// and the per-step log and metrics file.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_RUN_H
#define DSC_RUNTIME_RUN_H

#include "dsc/runtime/Artifact.h"
#include "dsc/runtime/CommGroups.h"
#include "dsc/runtime/StateSlice.h"
#include "dsc/runtime/CommStats.h"
#include "dsc/runtime/DataSchedule.h"
#include "dsc/runtime/Error.h"
#include "dsc/runtime/SampleData.h"
#include "dsc/runtime/TokenData.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dsc::rt {

class Checkpoint;
class Communicator;
class Stream;
class MemoryPool;
class NvmeStore;
class SafeTensorsFile;
enum class DType;
enum class CommDType : std::uint8_t;

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

/// A bad command line; dsc-run exits with kUsageExitCode.
class UsageError : public Error {
public:
  using Error::Error;
};

constexpr int kUsageExitCode = 2;

struct RunOptions {
  std::string artifact;
  std::string weights;
  /// The teacher's own weights file, for an artifact that distills from a
  /// teacher (StateRole::Teacher); read on every run, resumed ones too.
  std::string teacherWeights;
  std::string data;
  /// DeepSpeed's train_batch_size: samples per optimizer step, all ranks
  /// and micro-batches together. 0 (not given): the artifact's.
  int64_t batch = 0;
  int64_t seq = 0; // 0 (not given): the artifact's

  int64_t steps = 0;
  bool eval = false;
  std::string metrics; // empty: no CSV
  std::string save;    // checkpoint root to save into; empty: no saving
  int64_t saveInterval = 0; // also save every K steps; 0: at the end only
  std::string resume;  // checkpoint root or step directory; empty: none
  std::string dumpOutputs; // safetensors of the first step's outputs; empty: none
  /// Text file of every step's random-LTD kept positions; empty: none.
  std::string dumpLtdIndices;
  /// Safetensors of every state this rank holds after the last step (rank
  /// r > 0 writes FILE.rank<r>); empty: none.
  std::string dumpStates;
  /// A step line every N steps (and the first and last); 0: not given,
  /// the artifact's (the config's steps_per_print), else every step.
  int64_t stepsPerPrint = 0;
  /// DeepSpeed csv_monitor files go to this directory; empty: not given,
  /// the artifact's (the config's csv_monitor), else none.
  std::string csvMonitor;
  /// The directory of the NVMe tier's per-rank files (NvmeStore.h);
  /// empty: not given, the artifact's (the config's nvme_path), else none.
  std::string nvmePath;
  /// The artifact's curriculum and random-LTD schedules (run settings).
  DataSchedulePlan dataSchedule;
  int64_t seed = 1234;     // dsc.step_key's seed: what random ops draw from
  bool seedGiven = false;  // --seed given (else a resumed run takes its checkpoint's)
  bool help = false;
};

/// Fills the options the command line left unset from `settings`, the
/// `key=value` lines an artifact compiled in (ArtifactLibrary::runSettings:
/// steps_per_print, csv_monitor, nvme_path, the data schedules into
/// `dataSchedule`). Throws Error "WHERE: ..." for a line it
/// cannot read.
void applyArtifactRunSettings(RunOptions &options, const std::string &settings,
                              const std::string &where);

/// Parses dsc-run's arguments (without argv[0]). Options take their value
/// as the next argument or after '='. Throws UsageError for an unknown
/// option, a missing value or required option (--weights is required only
/// without --resume; --batch and --seq are optional), a number that is not a positive decimal integer, an
/// empty --save/--resume directory, or --save-interval without --save.
/// With --help or -h anywhere, returns at once with `help` set.
RunOptions parseRunOptions(const std::vector<std::string> &args);

/// The --help text.
std::string runUsage();

//===----------------------------------------------------------------------===//
// The artifact against the job
//===----------------------------------------------------------------------===//

/// The two data formats (docs/running.md): nanoGPT's token files, which
/// feed inputs named `tokens` and `targets`, and for any model a
/// safetensors file of samples whose tensors are named after the inputs.
enum class DataFormat { Tokens, Samples };

/// Samples for a path ending in ".safetensors", tokens otherwise.
DataFormat dataFormatOf(const std::string &path);

/// Where the batch goes and the loss comes from.
struct FeedPlan {
  DataFormat format = DataFormat::Tokens;
  int32_t tokensInput = -1;  // token format: index in ArtifactInfo::inputs,
  int32_t targetsInput = -1; // -1 if absent
  int32_t lossOutput = -1;
  /// Optional scalar outputs of a training step, -1 if absent: the learning
  /// rate the step used (`lr`), and with loss scaling the scale it used
  /// (`loss_scale`) and whether it was skipped (`skipped`, 1 or 0).
  int32_t lrOutput = -1;
  int32_t lossScaleOutput = -1;
  int32_t skippedOutput = -1;
  /// The global 2-norm of the gradients before clipping (`grad_norm`; a
  /// step compiled with gradient clipping computes it), -1 if absent.
  int32_t gradNormOutput = -1;
  /// Mixture of experts (--moe-experts): the routes the capacity dropped
  /// in all layers (`moe.dropped`, -1 if absent), and each layer's routes
  /// per expert before dropping (`moe.exp_counts.<layer>`, i64), both of
  /// this rank's micro-batch.
  int32_t moeDroppedOutput = -1;
  std::vector<int32_t> expCountsOutputs;
  /// The terms of a loss that sums several (scalars `lm_loss`, `kd_loss`
  /// of knowledge distillation, `aux_loss` of the experts' balance), in
  /// kLossTermNames order, those the artifact outputs.
  std::vector<int32_t> lossTermOutputs;
  int64_t microBatch = 0; // per rank: every input's leading dimension
  /// Tokens per sample: dimension 1 of the token ids (`tokens`, or with
  /// samples the first integer input of two or more dimensions); 1 for a
  /// model without token ids.
  int64_t seqLen = 0;
  /// Ranks that read different micro-batches: the world over the
  /// tensor-parallel size (the T ranks of a tensor group read the same).
  int dataRanks = 1;
  /// DeepSpeed's train_batch_size: micro batch x data-parallel ranks x
  /// micro-batches per step (gradient accumulation).
  int64_t trainBatch = 0;
  /// Token format: token ids must lie in [0, tokenLimit), the smaller
  /// indexLimit of the two inputs (the vocabulary); 0 when the artifact
  /// records none.
  int64_t tokenLimit = 0;
};

/// Throws Error "WHERE: ..." unless dsc-run can run artifacts of `target`:
/// "cpu" always, "cuda" when `cudaSupported` ("WHERE: artifact is for
/// target 'cuda', but this dsc-run was built without CUDA support ...").
void checkArtifactTarget(const std::string &target, const std::string &where,
                         bool cudaSupported);

/// Throws Error unless the artifact fits the job: compiled for a target this
/// dsc-run runs (checkArtifactTarget, CUDA support meaning that a RunTarget
/// "cuda" is registered) and `worldSize` ranks; inputs that the format of
/// options.data feeds (tokens: named "tokens" and/or "targets" only, int64
/// [micro batch, seq] and agreeing with each other; samples: any, with one
/// leading micro-batch dimension); options.batch, unless 0, equal to the
/// train batch and options.seq, unless 0, to seqLen (each error says the
/// artifact's value); an output "loss" of f32 or f64 holding one element,
/// and "lr", "loss_scale" and "skipped", when the artifact has them, the
/// same.
FeedPlan planFeeds(const ArtifactInfo &info, const RunOptions &options,
                   int worldSize);

/// What a samples file must hold for the artifact's inputs: per input its
/// name, storageDType, shape without the micro-batch dimension, and
/// indexLimit.
std::vector<SampleSpec> sampleSpecs(const ArtifactInfo &info);

/// The data file, cut into the artifact's inputs by the plan's format.
class InputFeed {
public:
  /// Opens `path`: TokenData::open with the plan's token limit, or
  /// SampleData::open held to sampleSpecs(info). Throws their Errors.
  InputFeed(const std::string &path, const FeedPlan &plan,
            const ArtifactInfo &info);

  /// Fills `inputs` (the artifact's host input buffers, by input index)
  /// with rank `rank`'s share of micro-batch `index` (0-based) of
  /// microBatch x `worldSize` samples. With gradient accumulation, step s's
  /// micro-batches are s*G .. s*G+G-1, so step s covers samples
  /// [s*B, (s+1)*B) of train batch B, as DeepSpeed's loader does.
  void fill(int64_t index, int rank, int worldSize,
            const std::vector<void *> &inputs);

private:
  FeedPlan plan_;
  std::optional<TokenData> tokens_;
  std::optional<SampleData> samples_;
  std::vector<int64_t> unfed_; // tokens or targets that no input takes
};

/// The safetensors dtype that stores `type` (I1 is one byte, as BOOL).
DType storageDType(ElementType type);

/// Throws Error "WHERE: no tensor 'NAME'; the artifact needs it as f32 [16]"
/// unless `present`.
void checkStatePresent(bool present, const std::string &where,
                       const TensorDesc &state);
/// Throws Error "WHERE: tensor 'NAME' is F32 [16, 9], but the artifact
/// expects F32 [16, 8]" unless `dtype` and `shape` store `state` (an f32
/// tensor stores a 16-bit float state too: roundsOnLoad).
void checkStateMatches(const std::string &where, const TensorDesc &state,
                       DType dtype, const std::vector<int64_t> &shape);

/// For every state of `info`, in ArtifactInfo::states order: checks that
/// `weights` holds it with the artifact's dtype and shape (Errors as
/// loadStates), then calls `read(index, name, bytes)`, which reads it
/// (SafeTensorsFile::read) wherever the target keeps it. Optimizer and
/// gradient state the file does not hold (a weights file, not a checkpoint)
/// starts at zero:
/// `read` is then called with `present` false and must zero it.
/// The tensor that state `state` is read from in a weights file or a
/// checkpoint that holds the tensors `has` says it holds: the one of its
/// name, or for a master weight "X.master" that is not there, X (training
/// in mixed precision from fp32 weights, or from an fp32 checkpoint).
std::string stateSource(const StateDesc &state,
                        const std::function<bool(const std::string &)> &has);
/// Whether `state` is zero between optimizer steps, where every checkpoint
/// is saved: gradient accumulation's sums (StateRole::Gradient) and its
/// count of micro-batches, "optimizer.micro_step", which the last
/// micro-batch of each step resets. A checkpoint that lacks them (saved by
/// a job without gradient accumulation, such as a pipeline, whose stages
/// take all the micro-batches of a step in one call) resumes them at zero.
bool zeroBetweenSteps(const StateDesc &state);
/// Whether a tensor stored as `stored` is rounded (to nearest even) into a
/// state of `type` as it is read: f32 into a bf16 or f16 state (the 16-bit
/// parameters of mixed precision, from fp32 weights).
bool roundsOnLoad(ElementType type, DType stored);
/// `count` elements at `src`, stored as `stored`, written to `dst` as
/// `type`: copied, or rounded where roundsOnLoad.
void copyStored(void *dst, ElementType type, const void *src, DType stored,
                size_t count);

/// Whether the artifact has a training step: training artifacts carry
/// optimizer state (at least the step count).
bool artifactTrains(const ArtifactInfo &info);

/// Whether state `state` is partitioned over the ranks of a group (ZeRO's
/// over the World, expert parallelism's over the Expert group).
inline bool isPartitioned(const StateDesc &state) {
  return state.wholeShape != nullptr;
}
/// The group a partitioned state is partitioned over (Artifact.h).
inline CommGroup partitionGroup(const StateDesc &state) {
  return static_cast<CommGroup>(state.partitionGroup);
}
/// The whole tensor of a state: `state.tensor`, with the whole shape when
/// it is partitioned. Weights files and checkpoints hold it by name.
TensorDesc wholeTensor(const StateDesc &state);
/// The elements of the whole flattened tensor that rank `rank` holds of
/// `state` in a job of expert-parallel size `expertParallelSize`, [begin,
/// begin + count): all of them for a state that is not partitioned; for a
/// partitioned one, the `count` first elements of the shard of the rank's
/// index in the partition's group (fewer than the shard's on the last
/// indices, whose tail is zero); for one partitioned over the ExpertData
/// group, of the shard within the rank's block of experts (Artifact.h).
///
/// A tensor-parallel slice, and ZeRO's shard of one, is a StateSlice of
/// several blocks (StateSlice.h).
StateSlice stateSlice(const StateDesc &state, int rank, int expertParallelSize,
                      int tensorParallelSize = 1);
/// Reads state `state`'s storage on rank `rank` (of a job of
/// expert-parallel size `expertParallelSize`) from `weights` into `dst`
/// (tensorBytes(state.tensor) bytes): the whole tensor, or the rank's
/// slice of it, zero-padded. forEachState has checked the file's tensor.
void readState(const StateDesc &state, const SafeTensorsFile &weights, int rank,
               int expertParallelSize, void *dst, int tensorParallelSize = 1);

/// Whether `state` has a fill rule for weights files that lack it.
bool hasInitRule(const StateDesc &state);
/// Element `index` of the whole tensor of a state drawn from U(-bound,
/// bound): with key = XXH64(name, seed) and SplitMix64's finaliser applied
/// to key + (index + 1) * 0x9E3779B97F4A7C15, the top 24 bits u give
/// (2 * u / 2^24 - 1) * bound, computed in double.
double initUniformValue(const std::string &name, uint64_t seed, int64_t index,
                        double bound);
/// Fills `dst` (rank `rank`'s storage of `state`, tensorBytes(state.tensor)
/// bytes, in a job of expert-parallel size `expertParallelSize`) from its
/// rule: the elements of stateSlice of the whole tensor the rule defines;
/// `weights` holds the tensor an `initFrom` rule repeats. Throws Error when
/// that tensor is missing or its shape is not the state's without the
/// leading dimension.
void initState(const StateDesc &state, const SafeTensorsFile &weights, int rank,
               int expertParallelSize, void *dst, int tensorParallelSize = 1);

/// The artifact's tensor-parallel size: 1 for an ArtifactInfo that leaves
/// it 0 (built by hand, as tests do).
inline int tensorParallelSize(const ArtifactInfo &info) {
  return info.tensorParallelSize > 0 ? info.tensorParallelSize : 1;
}

/// The artifact's pipeline-parallel size, 1 for one that leaves it 0.
inline int pipelineParallelSize(const ArtifactInfo &info) {
  return info.pipelineParallelSize > 0 ? info.pipelineParallelSize : 1;
}

/// The rank whose place in the tensor-by-data mesh of one pipeline stage
/// `rank` has: every stage lays out its W/P ranks alike (Artifact.h), so
/// its states' shards are placed as those of a job of W/P ranks. The rank
/// itself without pipeline parallelism.
inline int stageLocalRank(const ArtifactInfo &info, int rank) {
  if (pipelineParallelSize(info) == 1)
    return rank;
  int stageRanks = info.worldSize / pipelineParallelSize(info);
  return stageRanks > 0 ? rank % stageRanks : rank;
}

/// The data-parallel rank of `rank` in a job of `worldSize` ranks: its
/// index in its Data group (Artifact.h), whose micro-batches it reads. The
/// ranks of a tensor group, and the stages of a pipeline, read the same.
inline int dataRankOf(const ArtifactInfo &info, int rank, int worldSize) {
  int stageRanks = worldSize / pipelineParallelSize(info);
  return rank % stageRanks / tensorParallelSize(info);
}

void forEachState(const ArtifactInfo &info, const SafeTensorsFile &weights,
                  const std::function<void(int32_t, const std::string &,
                                           size_t, bool present)> &read);

/// Whether the artifact has a teacher's weights (StateRole::Teacher).
bool hasTeacher(const ArtifactInfo &info);
/// For every teacher state "teacher.X" of `info`: checks that `teacher`
/// (the teacher's own weights file) holds X with the state's dtype and
/// shape (an f32 X for a bf16 state too), then calls `read(index, own)`,
/// `own` the state under the name X, which readState(own, teacher, ...)
/// reads. forEachState and Checkpoint::loadStates leave these states zero.
void forEachTeacherState(
    const ArtifactInfo &info, const SafeTensorsFile &teacher,
    const std::function<void(int32_t, const StateDesc &own)> &read);

/// Reads every state of `info` from `weights` into buffers from `pool`, in
/// ArtifactInfo::states order, as rank `rank` holds them (readState, with
/// the artifact's expert-parallel size). Throws Error naming the tensor when
/// the file lacks it or holds it with another dtype or shape (both shapes in
/// the message), or when what it reads holds NaN or an infinity (readState).
/// Tensors of the file that no state names are ignored. States on the host
/// (MemoryTier::Host) come from `hostPool` when one is given, states on
/// NVMe from `nvmePool` (host memory the target writes them from into
/// their files, then releases). A teacher's state (StateRole::Teacher) is
/// left nullptr: it comes from the teacher's own file, and a run that
/// starts after staged KD's stop never allocates it (loadTeacherStates).
std::vector<void *> loadStates(const ArtifactInfo &info,
                               const SafeTensorsFile &weights,
                               MemoryPool &pool, int rank = 0,
                               MemoryPool *hostPool = nullptr,
                               MemoryPool *nvmePool = nullptr);

/// The pool state `desc` is read into: `hostPool` for a state on the host
/// and `nvmePool` for one on NVMe when there is one, `pool` otherwise.
inline MemoryPool &statePool(const StateDesc &desc, MemoryPool &pool,
                             MemoryPool *hostPool,
                             MemoryPool *nvmePool = nullptr) {
  if (desc.tier == MemoryTier::Nvme && nvmePool)
    return *nvmePool;
  return desc.tier == MemoryTier::Host && hostPool ? *hostPool : pool;
}

//===----------------------------------------------------------------------===//
// What generated code calls
//===----------------------------------------------------------------------===//

/// dsc-run's StepContext: fixed buffers (host memory for the CPU target,
/// device memory for CUDA, inputs and outputs in host memory on both), the
/// target's streams, and collectives on a Communicator.
class RunStepContext final : public StepContext {
public:
  /// Copies `bytes` from `src` to `dst`, buffers of the target's device
  /// memory, in order on `stream`: the part of a collective over a group of
  /// one rank that moves data (an allGather or reduceScatterSum out of
  /// place). Empty: host memory, a task of the CPU stream `stream`.
  using LocalCopy = std::function<void(void *dst, const void *src, size_t bytes,
                                       Stream &stream)>;

  /// `streams` in ArtifactInfo::streams order (not owned); `comm` (the
  /// job's) runs the collectives of stream `collectiveStream` (-1: none),
  /// and with `expertParallelSize` the communicators of the groups
  /// (GroupCommunicators, CommGroups.h): collective over `comm` when P > 1,
  /// which splits them from it. Throws Error unless P divides comm.size().
  RunStepContext(std::vector<void *> states, std::vector<void *> inputs,
                 std::vector<void *> outputs, void *arena, Communicator &comm,
                 std::vector<Stream *> streams = {},
                 int32_t collectiveStream = -1, int32_t expertParallelSize = 1,
                 LocalCopy localCopy = {}, int32_t tensorParallelSize = 1,
                 int32_t pipelineParallelSize = 1);
  ~RunStepContext() override;

  /// Starts a call of the step for optimizer step `step` (1-based, as
  /// printed) whose first sample is `firstSample` in the step's global
  /// batch (stepKey), the last of that step's micro-batches when
  /// `endsOptimizerStep`: sequence numbers start over.
  void beginStep(int64_t step, int64_t firstSample = 0,
                 bool endsOptimizerStep = true);
  /// Collectives the artifact issued in the current step.
  int64_t collectivesThisStep() const { return collectivesThisStep_; }

  void *state(int32_t i) override;
  const void *input(int32_t i) override;
  void *output(int32_t i) override;
  void *arena() override { return arena_; }
  /// Staged KD's stop (RunTarget::releaseTeacher): a released teacher
  /// state becomes nullptr, and the arena a smaller one.
  void setState(int32_t i, void *buffer);
  void setArena(void *arena) { arena_ = arena; }
  void *hostArena() override { return hostArena_; }
  /// The host arena (ArtifactInfo::hostArenaBytes), when the artifact has one.
  void setHostArena(void *hostArena) { hostArena_ = hostArena; }
  void countTransfer(TransferDirection direction, size_t bytes) override;
  /// Copies and bytes between host and device the artifact counted, per
  /// direction (TransferDirection), over the run.
  struct TransferCounters {
    int64_t calls = 0, bytes = 0;
  };
  const TransferCounters &transfers(TransferDirection direction) const {
    return transfers_[size_t(direction)];
  }
  /// ZeRO-Infinity: the store of this rank's NVMe states (ids: state
  /// indices), which the target created; nvmeRead and nvmeWrite enqueue a
  /// task on the stream that issues the request and waits for it, and
  /// throw Error without a store or for a size other than the state's.
  void setNvmeStore(NvmeStore *store) { nvme_ = store; }
  void nvmeRead(int32_t i, void *buffer, size_t bytes, Stream &stream) override;
  void nvmeWrite(int32_t i, const void *buffer, size_t bytes,
                 Stream &stream) override;
  /// Requests and bytes of the NVMe reads and writes the artifact
  /// enqueued, over the run.
  const TransferCounters &nvmeReads() const { return nvmeReads_; }
  const TransferCounters &nvmeWrites() const { return nvmeWrites_; }
  Stream &stream(int32_t i) override;
  /// Goes to Communicator::allReduce (in place, sum) of `group`'s
  /// communicator, which numbers, counts and watches it: on a CPU stream as
  /// a task of `stream` (a worker thread's, or the caller's for an Inline
  /// stream), on a CUDA stream at once (NCCL enqueues on the stream the
  /// communicator is bound to, and waits for it). Over a group of one rank
  /// without a communicator it moves nothing. `sequence` must grow within
  /// a step, whatever the group (it numbers the step's collectives in
  /// program order); a sequence that does not, a stream other than the
  /// collectives stream, a group that is no CommGroup, or a type MPI cannot
  /// reduce (i1), is an Error naming the step and the sequence (and the
  /// group, unless the World), thrown here; an error of the communicator is
  /// one too, thrown here or reported by the stream (Stream.h). Each call
  /// counts in groupStats(group).
  void allReduceSum(void *buffer, size_t count, ElementType type,
                    int64_t sequence, Stream &stream, CommGroup group) override;
  /// The sum over some stages of the Pipeline group: each sends its buffer
  /// to the others (Communicator::send, tag kStagesTag) and adds what they
  /// send in stage order, so that every stage holds the same bits; f32 and
  /// f64 on a CPU stream only (an Error otherwise, as is a list of stages
  /// that is not increasing, in range and this rank's). Counted in
  /// stageGroupStats under the group's name, "pipeline[0,3]".
  void allReduceSumStages(void *buffer, size_t count, ElementType type,
                          int64_t sequence, Stream &stream,
                          const int32_t *stages, int32_t stageCount) override;
  /// The tag of allReduceSumStages's messages, above any micro-batch's
  /// (pipelineSend's tags) that a step of MPI's smallest tag bound has.
  static constexpr int kStagesTag = 32767;
  /// As allReduceSum, with ReduceOp::Max; counted as an all-reduce.
  void allReduceMax(void *buffer, size_t count, ElementType type,
                    int64_t sequence, Stream &stream, CommGroup group) override;
  /// As allReduceSum, through Communicator::allGather, reduceScatter and
  /// allToAll (in place). Over a group of one rank without a communicator,
  /// allGather and reduceScatterSum copy `send` to `recv` (LocalCopy).
  void allGather(const void *send, void *recv, size_t count, ElementType type,
                 int64_t sequence, Stream &stream, CommGroup group) override;
  void reduceScatterSum(const void *send, void *recv, size_t count,
                        ElementType type, int64_t sequence, Stream &stream,
                        CommGroup group) override;
  void allToAll(void *buffer, size_t count, ElementType type, int64_t sequence,
                Stream &stream, CommGroup group) override;
  /// Communicator::send and recv of the Pipeline group's communicator to
  /// or from the stage after (Next) or before (Previous) this rank's,
  /// tagged `microBatch`, numbered, counted and streamed as allReduceSum.
  /// Error for a peer outside the pipeline (stage 0's Previous).
  void pipelineSend(const void *buffer, size_t count, ElementType type,
                    PipelinePeer peer, int64_t microBatch, int64_t sequence,
                    Stream &stream) override;
  void pipelineRecv(void *buffer, size_t count, ElementType type,
                    PipelinePeer peer, int64_t microBatch, int64_t sequence,
                    Stream &stream) override;
  /// Waits until the step's pipeline sends have been delivered
  /// (Communicator::completeSends); call once the step's streams are idle.
  void completePipelineSends();
  int32_t groupSize(CommGroup group) const override;
  int32_t groupRank(CommGroup group) const override;
  int32_t rank() const override;
  int32_t worldSize() const override;
  bool training() const override { return training_; }
  /// `dsc-run --eval` sets false: training steps stop after the loss.
  void setTraining(bool training) { training_ = training; }
  const int64_t *stepKey() override;
  bool endsOptimizerStep() const override { return endsOptimizerStep_; }
  /// The run's seed (`dsc-run --seed`), the first of stepKey's integers.
  void setSeed(uint64_t seed) { seed_ = seed; }

  /// The job's communicator.
  Communicator &communicator() const { return comm_; }
  const GroupCommunicators &groups() const { return *groups_; }
  /// Calls and bytes sent of the artifact's collectives over `group`, by
  /// CommStats.h's formulas with the group's size and this rank's index in
  /// it: a group's figures whether it has a communicator of its own or
  /// shares the job's.
  const CommStats &groupStats(CommGroup group) const;
  /// allReduceSumStages's figures per set of stages, by the group's name
  /// ("pipeline[0,3]"), with the set's size and this rank's index in it.
  const std::map<std::string, CommStats> &stageGroupStats() const {
    return stageGroupStats_;
  }

private:
  /// A collective that begin() has checked, numbered and counted.
  struct Issued {
    Communicator *comm; // nullptr: a group of one rank, no communicator
    CommDType dtype;
    std::string where; // "step 3, collective 2 (allToAll of 8 f32 ...)"
    std::string label; // the stream task's
  };
  /// Checks and numbers one collective of `kind` (`what` names it in
  /// errors) and counts it in its group's figures, unless `counted` is
  /// false (the caller counts it).
  Issued begin(CollectiveKind kind, const std::string &what, size_t count,
               ElementType type, int64_t sequence, Stream &stream,
               CommGroup group, bool counted = true);
  /// pipelineSend's and pipelineRecv's common part.
  void pipelineTransfer(bool send, void *buffer, size_t count, ElementType type,
                        PipelinePeer peer, int64_t microBatch,
                        int64_t sequence, Stream &stream);
  /// Runs `collective` on the issued collective's communicator, as a task
  /// of `stream` on the CPU, at once on CUDA; its Errors name `where`.
  void run(const Issued &issued, Stream &stream,
           const std::function<void(Communicator &, CommDType)> &collective);
  /// LocalCopy's part of a collective over a group of one rank.
  void copyLocally(const Issued &issued, void *dst, const void *src,
                   size_t bytes, Stream &stream);

  std::vector<void *> states_, inputs_, outputs_;
  void *arena_;
  void *hostArena_ = nullptr;
  std::array<TransferCounters, 2> transfers_{};
  NvmeStore *nvme_ = nullptr;
  TransferCounters nvmeReads_, nvmeWrites_;
  /// Checks an NVMe request for state `i` of `bytes` and counts it.
  void checkNvme(int32_t i, size_t bytes, TransferCounters &counters);
  /// Checks, counts and enqueues a read (into `buffer`) or a write.
  void enqueueNvme(bool read, int32_t i, void *buffer, size_t bytes,
                   Stream &stream);
  Communicator &comm_;
  std::vector<Stream *> streams_;
  int32_t collectiveStream_;
  LocalCopy localCopy_;
  std::unique_ptr<GroupCommunicators> groups_;
  std::array<CommStats, 6> groupStats_{};
  std::map<std::string, CommStats> stageGroupStats_;
  int64_t step_ = 0;
  int64_t firstSample_ = 0;
  uint64_t seed_ = 0;
  std::array<int64_t, 4> key_{};
  int64_t collectivesThisStep_ = 0;
  int64_t lastSequence_ = 0;
  bool training_ = true;
  bool endsOptimizerStep_ = true;
};

//===----------------------------------------------------------------------===//
// Targets: where the buffers live, which communicator sums
//===----------------------------------------------------------------------===//

/// The high-water marks of a target's pools, for the per-rank summary.
struct MemoryUse {
  size_t arena = 0, state = 0, io = 0;
  /// Pinned host memory of ZeRO-Offload: states on the host and the host
  /// arena (pools "host state" and "host arena").
  size_t hostState = 0, hostArena = 0;
  /// Bytes of the states in this rank's NVMe file (ZeRO-Infinity).
  size_t nvmeState = 0;
  /// Where those pools are: "" for host memory (the CPU target), "device"
  /// for GPU memory (CUDA; the summary then says memory=device).
  std::string where;
  /// Pinned host memory for staging inputs, outputs and state (CUDA).
  size_t pinnedHost = 0;
};

/// dsc-run's per-target half: the memory of an artifact's state, inputs,
/// outputs and arena, the copies between it and the host, and the
/// communicator of its collectives. runMain calls, in order: prepare,
/// allocate, one loadStates (setup, where any rank may fail alone), connect
/// (collective over MPI_COMM_WORLD, once every rank's setup succeeded), then
/// for each step the artifact's step on connect()'s context. The CPU target (RunTarget.cpp) keeps everything in host
/// MemoryPools and sums over MPI; the CUDA target (CudaRun.cpp, linked into
/// dsc-run when the runtime is built with CUDA) keeps device pools, stages
/// through pinned host memory and sums over NCCL.
class RunTarget {
public:
  virtual ~RunTarget();
  /// Before anything is read or allocated. CUDA: Device::select(rank).
  virtual void prepare(int rank) = 0;
  /// The inputs and outputs (pool "io", host memory), the arena of
  /// ArtifactInfo::arenaBytes (pool "arena") and the artifact's streams.
  virtual void allocate(const ArtifactInfo &info) = 0;
  /// Every state of `info` (pool "state"), in ArtifactInfo::states order,
  /// from a weights file (as loadStates above) or a checkpoint
  /// (Checkpoint::loadStates), with their Errors.
  virtual void loadStates(const ArtifactInfo &info,
                          const SafeTensorsFile &weights) = 0;
  virtual void loadStates(const ArtifactInfo &info,
                          const Checkpoint &checkpoint) = 0;
  /// After loadStates: allocates the teacher's states (loadStates leaves
  /// them nullptr) and reads its weights (forEachTeacherState) from the
  /// teacher's own weights file. Not called by a run that starts after
  /// staged KD's stop: its teacher's states are never allocated.
  virtual void loadTeacherStates(const ArtifactInfo &info,
                                 const SafeTensorsFile &teacher) = 0;
  /// Staged KD's stop, after connect() and before the first step without
  /// the teacher: releases the teacher's states (the context's pointers to
  /// them become nullptr; the steps without the teacher read none), and
  /// when `arenaBytes` is less than the arena's size, replaces the arena
  /// with one of `arenaBytes` (the largest arena of the variants that
  /// still run). The pools' high-water marks then start over, so that
  /// memoryUse() measures the steps without the teacher. Returns what the
  /// pools released, in MemoryUse's fields.
  virtual MemoryUse releaseTeacher(const ArtifactInfo &info,
                                   size_t arenaBytes) = 0;
  /// Creates the communicator and the context the artifact's steps run on.
  /// Collective over MPI_COMM_WORLD; throws on every rank alike.
  virtual RunStepContext &connect() = 0;
  /// Host memory of input `i` (i64 [micro batch, seq]): dsc-run cuts each
  /// step's batch into it, and the artifact copies it where it needs it.
  virtual void *hostInput(int32_t i) = 0;
  /// Host memory holding output `i` after a step.
  virtual const void *hostOutput(int32_t i) = 0;
  /// The states in host memory, for writeCheckpointShard of `rank` in a job
  /// of `worldSize`: state i where checkpointWritesInStage(info, i, rank,
  /// worldSize) (the others may be nullptr); copies go to `scratch`.
  virtual std::vector<void *> hostStates(const ArtifactInfo &info, int rank,
                                         int worldSize,
                                         MemoryPool &scratch) = 0;
  /// State `i` as this rank holds it (its shard when partitioned), in
  /// host memory: the state itself where it lives on the host, else a copy
  /// in `scratch`; nullptr for a state not allocated (a released teacher).
  virtual const void *hostState(const ArtifactInfo &info, int32_t i,
                                MemoryPool &scratch) = 0;
  virtual MemoryUse memoryUse() const = 0;
  /// The directory of the per-rank NVMe files (dsc-run --nvme-path, or the
  /// artifact's nvme_path), before allocate(); "" when none is given. A
  /// target that holds no state on NVMe ignores it.
  virtual void setNvmePath(const std::string &path) { nvmePath_ = path; }

protected:
  std::string nvmePath_;
};

/// ZeRO-Infinity: the store of this rank's states on NVMe (ids: state
/// indices) in `path`, each state's extent reserved; nullptr when the
/// artifact keeps no state on NVMe. Throws Error when it does and `path`
/// is "" (neither dsc-run --nvme-path nor the artifact's nvme_path), or as
/// NvmeStore does. Both targets create theirs with it.
std::unique_ptr<NvmeStore> makeNvmeStore(const ArtifactInfo &info,
                                         const std::string &path, int rank);

using RunTargetFactory = std::unique_ptr<RunTarget> (*)();

/// Makes `factory` the RunTarget of artifacts for `target`. "cpu" is built
/// in; CudaRun.cpp registers "cuda" during static initialization, in the
/// executables that link it (whole, as dsc-run does when the runtime is
/// built with CUDA).
void registerRunTarget(const std::string &target, RunTargetFactory factory);
/// Whether a RunTarget is registered for `target`.
bool haveRunTarget(const std::string &target);
/// A new RunTarget for `target`; Error when none is registered.
std::unique_ptr<RunTarget> makeRunTarget(const std::string &target);

//===----------------------------------------------------------------------===//
// Per-step log and metrics
//===----------------------------------------------------------------------===//

struct StepRecord {
  int64_t step = 0;      // 1-based
  double loss = 0;
  ElementType lossType = ElementType::F32; // digits: 9 for f32, 17 for f64
  double seconds = 0;    // wall time of the step on rank 0
  double samplesPerSecond = 0;
  double tokensPerSecond = 0;
  /// The learning rate the step used, when the artifact outputs it.
  std::optional<double> lr;
  /// Loss scaling: the scale the step used, and the steps skipped so far
  /// (an overflow), this one included.
  std::optional<double> lossScale;
  std::optional<int64_t> skipped;
  /// The gradients' global 2-norm, when the artifact outputs it.
  std::optional<double> gradNorm;
  /// Rank 0's memory in use (its pools: arena, state, inputs and outputs).
  std::optional<size_t> memoryBytes;
  /// Throughput over the steps run so far (StepLog fills them).
  double averageSamplesPerSecond = 0;
  double averageTokensPerSecond = 0;
  /// Local wall-clock time the step ended, "2025-01-31T12:34:56" (StepLog).
  std::string timestamp;
  /// Samples trained so far, this step's included (DeepSpeed's
  /// global_samples, the csv_monitor files' x-axis).
  int64_t samples = 0;
  /// Mixture of experts, rank 0's last micro-batch: routes dropped by the
  /// capacity in all layers, and each layer's routes per expert before
  /// dropping (DeepSpeed's exp_counts), in FeedPlan::expCountsOutputs order.
  std::optional<int64_t> moeDropped;
  std::vector<std::vector<int64_t>> expCounts;
  /// Data schedules: the sequence length the step ran at (curriculum),
  /// the tokens its random-LTD blocks ran on, and DeepSpeed's consumed
  /// layer tokens so far (random_ltd_consumed_layer_tokens).
  std::optional<int64_t> seqlen;
  std::optional<int64_t> ltdKept;
  std::optional<int64_t> layerTokens;
  /// The loss's terms (FeedPlan::lossTermOutputs), by output name, as the
  /// loss: the last micro-batch's.
  std::vector<std::pair<std::string, double>> lossTerms;
};

/// The outputs a loss's terms may have, in the order they are logged.
inline constexpr const char *kLossTermNames[] = {"lm_loss", "kd_loss",
                                                 "aux_loss"};

/// A record of step `step` from its loss, time and the global batch.
StepRecord makeStepRecord(int64_t step, double loss, ElementType lossType,
                          double seconds, int64_t globalBatch, int64_t seqLen);

/// The loss as printed: "%.9g" for f32 (round-trips every float), "%.17g"
/// for f64.
std::string formatLoss(double loss, ElementType type);

/// "step=1 loss=2.7725887 samples/s=1234.5 tokens/s=5.05e+06
/// step_time_s=0.00324", then for the fields the record has
/// " avg_samples/s=1200 avg_tokens/s=4.9e+06" (once averages are filled),
/// " lr=0.001", " grad_norm=1.5", " loss_scale=65536", " skipped=0",
/// " moe_dropped=3", " mem_gib=0.0123", " seqlen=64 ltd_kept=32
/// layer_tokens=1024" (data schedules) and " time=2025-01-31T12:34:56";
/// a loss's terms follow the loss: "loss=2.9 lm_loss=2.7 kd_loss=0.2".
std::string formatStepLine(const StepRecord &record);

/// The --metrics CSV, written on rank 0 and flushed after every row, so
/// that a run that dies keeps the rows of the steps it finished:
///   step,loss,step_time_s,samples_per_s,tokens_per_s,lr,grad_norm,
///   loss_scale,memory_gib,time
/// (a field the artifact does not output is empty), then, for an artifact
/// with data schedules, seqlen,ltd_kept,layer_tokens, and for a mixture of
/// experts `moe_dropped` and one `exp_counts:<layer>` column per layer,
/// whose cells hold the layer's counts separated by spaces, then a column
/// per loss term (`lm_loss`, `kd_loss`, `aux_loss`) the artifact outputs.
class MetricsCsv {
public:
  /// Creates or truncates `path` and writes the header, with the data
  /// schedules' columns when `dataColumns`, a column for each of
  /// `expertLayers` (none: the model has no experts) and one for each of
  /// `lossTerms`. Throws Error.
  explicit MetricsCsv(const std::string &path, bool dataColumns = false,
                      std::vector<std::string> expertLayers = {},
                      std::vector<std::string> lossTerms = {});
  ~MetricsCsv();
  MetricsCsv(const MetricsCsv &) = delete;
  MetricsCsv &operator=(const MetricsCsv &) = delete;
  void append(const StepRecord &record);
  /// Closes the file, reporting a failed write or close as Error.
  void close();

private:
  std::string path_;
  std::FILE *file_ = nullptr;
  bool experts_ = false;
  bool dataColumns_ = false;
};

/// DeepSpeed's csv_monitor layout: in `directory` one file per metric,
/// named after DeepSpeed's event (`Train/Samples/train_loss` →
/// Train_Samples_train_loss.csv), each of `step,NAME` rows where step is
/// the samples trained so far (DeepSpeed's global_samples). Files are
/// appended to, with the header when new, as DeepSpeed's csvMonitor does.
/// train_loss and lr (when output) as DeepSpeed writes them, loss_scale with
/// loss scaling, and dsc's grad_norm (when output) and memory_gib.
class CsvMonitor {
public:
  /// Creates `directory` (and its parents). Throws Error.
  explicit CsvMonitor(const std::string &directory);
  void append(const StepRecord &record);

private:
  void write(const std::string &name, int64_t samples, const std::string &value);
  std::string directory_;
};

/// Rank 0's per-step output: the step line on stdout every `stepsPerPrint`
/// steps, the first and the last step's always; a row of the metrics CSV
/// and the csv_monitor files every step. Fills each record's running
/// averages (over the steps so far, the first left out once there are
/// others: it warms up), samples and timestamp.
class StepLog {
public:
  StepLog(int64_t stepsPerPrint, int64_t firstStep, int64_t lastStep,
          std::unique_ptr<MetricsCsv> metrics,
          std::unique_ptr<CsvMonitor> monitor);
  ~StepLog();
  /// Whether step `step`'s line is printed.
  bool prints(int64_t step) const;
  /// Logs `record` (and closes the CSV after the last step).
  void add(StepRecord &record);

private:
  int64_t stepsPerPrint_, firstStep_, lastStep_;
  std::unique_ptr<MetricsCsv> metrics_;
  std::unique_ptr<CsvMonitor> monitor_;
  double seconds_ = 0; // since the first step (excluded)
  int64_t samples_ = 0, tokens_ = 0, steps_ = 0;
  double firstSeconds_ = 0;
  int64_t firstSamples_ = 0, firstTokens_ = 0;
};

/// "2025-01-31T12:34:56", the local time now.
std::string localTimestamp();

//===----------------------------------------------------------------------===//
// The whole tool
//===----------------------------------------------------------------------===//

/// --dump-outputs: writes every output of the step that just ran (the loss
/// and, for a --gradients artifact, each parameter's gradient) to the
/// safetensors file `path`, under the outputs' names (atomically).
void dumpOutputs(const std::string &path, const ArtifactInfo &info,
                 RunTarget &target);

/// --dump-states: writes every state this rank holds (its shard where
/// partitioned, under the state's name and the shard's shape; teacher
/// states too, unless released) to the safetensors file `path`.
void dumpStates(const std::string &path, const ArtifactInfo &info,
                RunTarget &target);
/// The file rank `rank` writes for --dump-states PATH: PATH on rank 0,
/// PATH.rank<r> on the others.
std::string dumpStatesPath(const std::string &path, int rank);

/// --dump-ltd-indices: every step's kept positions (dsc.random_ltd_indices)
/// as lines `STEP SAMPLE I0 I1 ...`, one per sample of the global batch.
class LtdIndexDump {
public:
  /// Creates or truncates `path`. Throws Error.
  explicit LtdIndexDump(const std::string &path);
  ~LtdIndexDump();
  LtdIndexDump(const LtdIndexDump &) = delete;
  LtdIndexDump &operator=(const LtdIndexDump &) = delete;
  /// The lines of optimizer step `step` of a run with seed `runSeed`:
  /// `samples` samples drawn as `draw` does (every position when its kept
  /// length is the sequence's: the step drops nothing).
  void append(int64_t step, int64_t samples, const RandomLtdDraw &draw,
              uint64_t runSeed);
  /// Closes the file, reporting a failed write or close as Error.
  void close();

private:
  std::string path_;
  std::FILE *file_ = nullptr;
};

/// dsc-run's main: MPI_Init, the checks and loading on every rank (a
/// failure anywhere is reported once, by rank 0, and every rank exits
/// non-zero), the steps, the per-rank summary, MPI_Finalize. Returns the
/// exit status.
int runMain(int argc, char **argv);

} // namespace dsc::rt

#endif // DSC_RUNTIME_RUN_H
