//===- Run.h - dsc-run: execute a step artifact on every rank ---*- C++ -*-===//
//
// The pieces of dsc-run (docs/running.md), each testable on its own, and
// runMain, which puts them together: the command line, the checks of an
// artifact against the job (world size, batch, sequence length), loading
// its state from safetensors, the StepContext that generated code talks to,
// and the per-step log and metrics file.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_RUN_H
#define DSC_RUNTIME_RUN_H

#include "dsc/runtime/Artifact.h"
#include "dsc/runtime/Error.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace dsc::rt {

class Communicator;
class MemoryPool;
class SafeTensorsFile;
enum class DType;

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
  std::string data;
  int64_t batch = 0; // global batch, all ranks together
  int64_t seq = 0;
  int64_t steps = 0;
  bool eval = false;
  std::string metrics; // empty: no CSV
  std::string save;    // checkpoint root to save into; empty: no saving
  int64_t saveInterval = 0; // also save every K steps; 0: at the end only
  std::string resume;  // checkpoint root or step directory; empty: none
  bool help = false;
};

/// Parses dsc-run's arguments (without argv[0]). Options take their value
/// as the next argument or after '='. Throws UsageError for an unknown
/// option, a missing value or required option (--weights is required only
/// without --resume), a number that is not a positive decimal integer, an
/// empty --save/--resume directory, or --save-interval without --save.
/// With --help or -h anywhere, returns at once with `help` set.
RunOptions parseRunOptions(const std::vector<std::string> &args);

/// The --help text.
std::string runUsage();

//===----------------------------------------------------------------------===//
// The artifact against the job
//===----------------------------------------------------------------------===//

/// Where the batch goes and the loss comes from.
struct FeedPlan {
  int32_t tokensInput = -1;  // index in ArtifactInfo::inputs, -1 if absent
  int32_t targetsInput = -1;
  int32_t lossOutput = -1;
  int64_t microBatch = 0; // per rank
  int64_t seqLen = 0;
};

/// Throws Error unless the artifact fits the job: compiled for target
/// "cpu" and `worldSize` ranks; inputs named "tokens" and/or "targets" only,
/// int64 [micro batch, seq] and agreeing with each other;
/// options.batch == micro batch * worldSize and options.seq == seq; an
/// output "loss" of f32 or f64 holding one element.
FeedPlan planFeeds(const ArtifactInfo &info, const RunOptions &options,
                   int worldSize);

/// The safetensors dtype that stores `type` (I1 is one byte, as BOOL).
DType storageDType(ElementType type);

/// Throws Error "WHERE: no tensor 'NAME'; the artifact needs it as f32 [16]"
/// unless `present`.
void checkStatePresent(bool present, const std::string &where,
                       const TensorDesc &state);
/// Throws Error "WHERE: tensor 'NAME' is F32 [16, 9], but the artifact
/// expects F32 [16, 8]" unless `dtype` and `shape` store `state`.
void checkStateMatches(const std::string &where, const TensorDesc &state,
                       DType dtype, const std::vector<int64_t> &shape);

/// Reads every state of `info` from `weights` into buffers from `pool`, in
/// ArtifactInfo::states order. Throws Error naming the tensor when the file
/// lacks it or holds it with another dtype or shape (both shapes in the
/// message). Tensors of the file that no state names are ignored.
std::vector<void *> loadStates(const ArtifactInfo &info,
                               const SafeTensorsFile &weights,
                               MemoryPool &pool);

//===----------------------------------------------------------------------===//
// What generated code calls
//===----------------------------------------------------------------------===//

/// dsc-run's StepContext: fixed buffers, and collectives on a Communicator.
class RunStepContext final : public StepContext {
public:
  RunStepContext(std::vector<void *> states, std::vector<void *> inputs,
                 std::vector<void *> outputs, void *arena,
                 Communicator &comm);

  /// Starts step `step` (1-based, as printed): sequence numbers start over.
  void beginStep(int64_t step);
  /// Collectives the artifact issued in the current step.
  int64_t collectivesThisStep() const { return collectivesThisStep_; }

  void *state(int32_t i) override;
  const void *input(int32_t i) override;
  void *output(int32_t i) override;
  void *arena() override { return arena_; }
  /// Goes to Communicator::allReduce (in place, sum), which numbers,
  /// counts and watches it. `sequence` must grow within a step (it
  /// numbers the step's collectives in program order); a sequence that
  /// does not, or a type MPI cannot reduce (f16, i1), is an Error naming
  /// the step and the sequence, as is any error of the communicator.
  void allReduceSum(void *buffer, size_t count, ElementType type,
                    int64_t sequence) override;
  int32_t rank() const override;
  int32_t worldSize() const override;

private:
  std::vector<void *> states_, inputs_, outputs_;
  void *arena_;
  Communicator &comm_;
  int64_t step_ = 0;
  int64_t collectivesThisStep_ = 0;
  int64_t lastSequence_ = 0;
};

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
};

/// A record of step `step` from its loss, time and the global batch.
StepRecord makeStepRecord(int64_t step, double loss, ElementType lossType,
                          double seconds, int64_t globalBatch, int64_t seqLen);

/// The loss as printed: "%.9g" for f32 (round-trips every float), "%.17g"
/// for f64.
std::string formatLoss(double loss, ElementType type);

/// "step=1 loss=2.7725887 samples/s=1234.5 tokens/s=5.05e+06
/// step_time_s=0.00324".
std::string formatStepLine(const StepRecord &record);

/// The --metrics CSV, written on rank 0 and flushed after every row, so
/// that a run that dies keeps the rows of the steps it finished:
///   step,loss,step_time_s,samples_per_s,tokens_per_s
class MetricsCsv {
public:
  /// Creates or truncates `path` and writes the header. Throws Error.
  explicit MetricsCsv(const std::string &path);
  ~MetricsCsv();
  MetricsCsv(const MetricsCsv &) = delete;
  MetricsCsv &operator=(const MetricsCsv &) = delete;
  void append(const StepRecord &record);
  /// Closes the file, reporting a failed write or close as Error.
  void close();

private:
  std::string path_;
  std::FILE *file_ = nullptr;
};

//===----------------------------------------------------------------------===//
// The whole tool
//===----------------------------------------------------------------------===//

/// dsc-run's main: MPI_Init, the checks and loading on every rank (a
/// failure anywhere is reported once, by rank 0, and every rank exits
/// non-zero), the steps, the per-rank summary, MPI_Finalize. Returns the
/// exit status.
int runMain(int argc, char **argv);

} // namespace dsc::rt

#endif // DSC_RUNTIME_RUN_H
