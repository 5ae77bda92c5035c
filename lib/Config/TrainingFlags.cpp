//===- TrainingFlags.cpp - dsc-opt's top-level training flags -------------===//
//
// Each flag is a --dsc-pipeline option of the same name, passed on as text,
// so that the types and defaults live in one place (TrainingPipeline.h).
// Each value is first checked against the options' range table
// (OptionRanges.h), so that a bad one is an error naming the flag, and all
// of a command line's bad flags are reported together.
//
//===----------------------------------------------------------------------===//

#include "dsc/Config/TrainingFlags.h"

#include "dsc/Config/DeepSpeedConfig.h"
#include "dsc/Config/OptionRanges.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <deque>

using namespace mlir;
using namespace mlir::dsc;
namespace cl = llvm::cl;

namespace {
cl::OptionCategory category("dsc training step (run as --dsc-pipeline, "
                            "docs/configuration.md)");

struct Flag {
  const char *name;
  const char *help;
  /// The --dsc-pipeline option it sets, when not `name`.
  const char *option = nullptr;
};

// The --dsc-pipeline options users set directly, as DeepSpeed users do.
constexpr Flag kFlags[] = {
    {"world-size", "data-parallel ranks (default 1)"},
    {"step", "train (default), gradients (no update) or eval (forward and loss)"},
    {"precision", "fp32 (default), or bf16/fp16 compute with fp32 master "
                  "weights and optimizer state (DeepSpeed's mixed precision)"},
    {"optimizer", "adamw (default), adam or sgd"},
    {"lr", "learning rate (default 1e-3)"},
    {"betas", "Adam's beta1,beta2 (default 0.9,0.999)"},
    {"eps", "Adam's epsilon (default 1e-8)"},
    {"weight-decay", "weight decay (default 0.01 for adamw as in PyTorch, 0 otherwise)"},
    {"momentum", "SGD momentum (default 0)"},
    {"grad-clip", "clip gradients to this global 2-norm (default 0: off)"},
    {"scheduler", "learning-rate schedule: none (default), warmup-lr, "
                  "warmup-decay-lr or warmup-cosine-lr (DeepSpeed's)"},
    {"warmup-min-lr", "WarmupLR/WarmupDecayLR start lr (default 0)"},
    {"warmup-max-lr", "WarmupLR/WarmupDecayLR peak lr"},
    {"warmup-num-steps", "warmup steps (default 1000)"},
    {"warmup-type", "warmup shape: log (default) or linear"},
    {"total-num-steps", "WarmupDecayLR/WarmupCosineLR total steps"},
    {"warmup-min-ratio", "WarmupCosineLR start ratio of lr (default 0)"},
    {"cos-min-ratio", "WarmupCosineLR end ratio of lr (default 0.0001)"},
    {"grad-accum", "micro-batches per optimizer step (default 1)"},
    {"loss-scaling", "loss scaling also without fp16 (on for --precision=fp16)"},
    {"loss-scale", "static loss scale; 0 (default) is dynamic"},
    {"initial-scale-power", "dynamic loss scaling: the first scale is 2^this (default 16)"},
    {"loss-scale-window", "dynamic: clean steps before the scale doubles (default 1000)"},
    {"hysteresis", "dynamic: overflows tolerated before the scale halves (default 2)"},
    {"min-loss-scale", "dynamic: the scale never halves below this (default 1)"},
    {"curriculum-schedule", "curriculum learning (seqlen): none (default), "
                            "fixed_linear, fixed_root or fixed_discrete"},
    {"curriculum-min", "curriculum min_difficulty: the first sequence length"},
    {"curriculum-max", "curriculum max_difficulty"},
    {"curriculum-total-steps", "curriculum total_curriculum_step"},
    {"curriculum-difficulty-step", "curriculum difficulty_step (default 1)"},
    {"curriculum-root-degree", "curriculum root_degree (fixed_root)"},
    {"curriculum-difficulty", "fixed_discrete's sequence lengths, comma-separated"},
    {"curriculum-max-step", "fixed_discrete's last step of each length but the last"},
    {"ltd-min", "random-LTD min_value: tokens kept at first"},
    {"ltd-max", "random-LTD max_value (default 0: random-LTD off)"},
    {"ltd-require-steps", "random-LTD require_steps"},
    {"ltd-seq-per-step", "random-LTD seq_per_step (default 1)"},
    {"ltd-layers", "random-LTD blocks, comma-separated (default: all but the "
                   "first and the last)"},
    {"ltd-seed", "random-LTD index seed (data_efficiency.seed; default 0)"},
    {"data-variants-budget", "FLOPs the length buckets may add to the exact "
                             "schedules' (default 0.02)"},
    {"data-variants-file", "write the step's variants as JSON (dsc-compile)"},
    {"seqlen", "build the step for this sequence length (default: the inputs')"},
    {"ltd-kept", "build the step with this many tokens in the random-LTD blocks"},
    {"zero-stage", "ZeRO stage of the training step: 0 (default), 1 (optimizer "
                   "state partitioned), 2 (+ gradients), 3 (+ parameters)"},
    {"zero-persistence-threshold", "stage 3: parameters of at most this many "
                                   "elements stay whole (default 1e5)"},
    {"zero-unshard-budget", "stage 3: bytes per rank of parameters kept whole, "
                            "costliest to gather per byte first (default 0)"},
    {"zero-prefetch-bucket-size", "stage 3: elements of parameter gathers issued "
                                  "ahead of use (default 5e7)"},
    {"zero-max-live-parameters", "stage 3: prefetched parameter elements alive "
                                 "at once (default 1e9)"},
    {"zero-overlap-comm", "prefetch parameter gathers (default true)"},
    {"zero-reduce-bucket-size", "elements per bucketed gradient all-reduce or "
                                "reduce-scatter (default 5e8; 0: off)"},
    {"zero-allgather-bucket-size", "elements per bucketed all-gather "
                                   "(default 5e8; 0: off)"},
    {"offload-optimizer", "ZeRO-Offload: none (default), cpu (optimizer state "
                          "and update on the host; ZeRO stage 1-3) or nvme "
                          "(optimizer state in per-rank files; stage 3)"},
    {"offload-param", "ZeRO stage 3: none (default), cpu or nvme (parameter "
                      "partitions on the host or in per-rank files; with "
                      "--eval: every parameter, streamed block by block)"},
    {"offload-param-buffer-count", "NVMe parameter offload: parameter reads "
                                   "in flight ahead of their use (default 5)"},
    {"offload-param-buffer-size", "NVMe parameter offload: elements of a "
                                  "parameter swap buffer (default 1e8)"},
    {"offload-buffer-count", "NVMe offload: sub-groups read ahead of their "
                             "host update (default 4)"},
    {"nvme-path", "NVMe offload: directory of the per-rank files"},
    {"zero-sub-group-size", "ZeRO-Offload: elements of parameters per host "
                            "update, so copies and updates overlap (default 1e9)"},
    {"checkpoint-activations", "recompute every transformer block in the "
                               "backward (activation checkpointing)"},
    {"checkpoint-budget", "recompute only the blocks this per-rank byte budget needs"},
    {"checkpoint-segments", "what a recomputed segment is (blocks)"},
    {"checkpoint-print", "print the recomputed blocks"},
    {"comm-aware-checkpointing", "recomputed blocks keep their collectives' "
                                 "forward outputs, never communicating again "
                                 "(default true)"},
    {"moe-experts", "replace each feed-forward block by this many gated "
                    "experts (mixture of experts; default 0: off)"},
    {"moe-top-k", "experts each token is routed to (default 1)"},
    {"moe-capacity-factor", "expert capacity relative to an even split of "
                            "the tokens (default 1.0)"},
    {"moe-eval-capacity-factor", "the capacity factor of --step=eval (default 1.0)"},
    {"moe-min-capacity", "the least capacity of an expert (default 4)"},
    {"moe-drop-tokens", "drop routes beyond the capacity (default true; false: "
                        "capacity for every token)"},
    {"moe-aux-loss-coef", "weight of the load-balancing loss (default 0.01)"},
    {"moe-every", "replace every N-th feed-forward block, from the first "
                  "(default 1)"},
    {"moe-experts-per-layer", "experts of each replaced block, comma-separated "
                              "(PR-MoE's pyramid)"},
    {"moe-residual", "residual MoE (PR-MoE): keep the dense block beside the "
                     "experts, mixed by a learned coefficient (default false)"},
    {"moe-init", "initial experts: upcycle (copies of the dense block; "
                 "default) or random"},
    {"moe-seed", "key of the generator of the gate's initial weights (default 0)"},
    {"moe-use-rts", "top-1: random token selection, an expert keeps its "
                    "routes of highest random priority (default false)"},
    {"moe-noisy-gate-policy", "none (default), jitter (the gate input times "
                              "U(0.99, 1.01)) or rsample (Gumbel noise on the "
                              "top-1 choice); training only"},
    {"moe-top2-2nd-expert-sampling", "top-2: Gumbel noise on the logits that "
                                     "choose the second expert (default true)"},
    {"distill-from", "the teacher's exported model.mlir: add Mixture-of-Students "
                     "knowledge distillation from it (docs/distillation.md)"},
    {"kd-beta", "weight of the distillation term (default 1)"},
    {"kd-temperature", "softmax temperature of the distillation term (default 1)"},
    {"kd-teacher-precision", "storage of the teacher's weights: fp32 (default) "
                             "or bf16"},
    {"kd-stop-step", "staged KD: distill until this step, then train the "
                     "student alone, in one artifact (default 0: every step)"},
    {"kd-teacher-forward", "build the step with the teacher (default true; "
                           "false: staged KD's step after the stop, dsc-compile)"},
    {"moe-duplicate-token-dropping",
     "experts under tensor parallelism: each rank of a tensor group sends "
     "1/T of the tokens through the all-to-all, an all-gather restores them "
     "(default true)"},
    {"moe-ep-size", "ranks each layer's experts are split over (expert "
                    "parallelism; default 1)"},
    {"tensor-parallel", "ranks that split each attention and feed-forward "
                        "block (Megatron's tensor parallelism; default 1)"},
    {"vocab-parallel", "with --tensor-parallel: split the token embedding and "
                       "the head by vocabulary rows (default false; "
                       "docs/tensor-parallel.md)"},
    {"sequence-parallel", "with --tensor-parallel: hold the activations "
                          "between the split blocks split along the sequence "
                          "(Megatron's sequence parallelism; default false; "
                          "docs/tensor-parallel.md)"},
    {"pipeline-parallel", "pipeline stages (default 1; docs/pipeline-parallel.md)"},
    {"pipeline-stage", "with --pipeline-parallel: the stage to build (default 0)"},
    {"pipeline-schedule", "with --pipeline-parallel: gpipe, 1f1b (default), "
                          "zb-h1 or interleaved"},
    {"pipeline-chunks", "with --pipeline-schedule=interleaved: model chunks "
                        "per rank (Megatron's virtual pipeline size)"},
    {"steps-per-print", "dsc-run prints a step line every N steps "
                        "(compiled into the artifact; default: every step)"},
    {"csv-monitor", "dsc-run writes DeepSpeed csv_monitor files into this "
                    "directory (compiled into the artifact)"},
    {"dsc-report", "print each rank's memory and communication of the step: "
                   "memory, comm or memory,comm (docs/zero.md)", "report"},
    {"dsc-report-format", "the report as text (default) or json", "report-format"},
    {"dsc-report-file", "write the report to this file (default: stderr)",
     "report-file"},
};

struct TrainingFlags {
  cl::opt<std::string> config{
      "config", cl::cat(category), cl::value_desc("ds_config.json"),
      cl::desc("read a DeepSpeed config; the flags below override it")};
  cl::opt<bool> configReport{
      "config-report", cl::cat(category),
      cl::desc("list every key of --config with what dsc did with it (used, "
               "defaulted, no effect, refused)")};
  // cl::opt registers itself and cannot move: a deque keeps them in place.
  std::deque<cl::opt<std::string>> options;

  TrainingFlags() {
    // A flag without a value (--checkpoint-activations) is `true`.
    for (const Flag &flag : kFlags)
      options.emplace_back(llvm::StringRef(flag.name), cl::cat(category),
                           cl::desc(flag.help), cl::value_desc("value"),
                           cl::ValueOptional);
  }
};

TrainingFlags *flags = nullptr;
} // namespace

void mlir::dsc::registerTrainingFlags() {
  static TrainingFlags instance;
  flags = &instance;
}

namespace {
/// A ds_config.json is a few kilobytes; this bounds what a mistyped
/// `--config` (a log, a core dump) makes dsc-opt read.
constexpr uint64_t kMaxConfigBytes = 1 << 20;

LogicalResult configError(const Twine &message) {
  llvm::errs() << "dsc-opt: error: --config: " << message << "\n";
  return failure();
}

/// Reads `path`, which must be a regular file of at most kMaxConfigBytes:
/// /dev/zero or a FIFO would be read for ever (or never).
FailureOr<std::unique_ptr<llvm::MemoryBuffer>> readConfigFile(StringRef path) {
  namespace fs = llvm::sys::fs;
  // By name first: opening a FIFO blocks until someone writes to it.
  fs::file_status status;
  if (std::error_code error = fs::status(path, status))
    return configError("cannot open '" + path + "': " + error.message());
  if (status.type() != fs::file_type::regular_file)
    return configError("'" + path + "' is not a regular file");
  llvm::Expected<fs::file_t> file = fs::openNativeFileForRead(path);
  if (!file)
    return configError("cannot open '" + path +
                       "': " + llvm::toString(file.takeError()));
  llvm::scope_exit close([&] { fs::closeFile(*file); });
  // Again on what was opened, which may have changed since.
  if (std::error_code error = fs::status(*file, status))
    return configError("cannot read '" + path + "': " + error.message());
  if (status.type() != fs::file_type::regular_file)
    return configError("'" + path + "' is not a regular file");
  if (status.getSize() > kMaxConfigBytes)
    return configError("'" + path + "' is " + Twine(status.getSize()) +
                       " bytes; a DeepSpeed config is at most " +
                       Twine(kMaxConfigBytes));
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getOpenFile(*file, path, status.getSize());
  if (!buffer)
    return configError("cannot read '" + path + "': " +
                       buffer.getError().message());
  return std::move(*buffer);
}
} // namespace

FailureOr<std::optional<TrainingPipelineRequest>>
mlir::dsc::trainingPipelineFromFlags() {
  TrainingFlags &f = *flags;
  PipelineSettings given;
  bool valid = true;
  for (auto [option, flag] : llvm::zip(f.options, kFlags)) {
    if (!option.getNumOccurrences())
      continue;
    StringRef name = flag.option ? flag.option : flag.name;
    // `--checkpoint-activations` is `true`; `--lr=` is an empty value.
    std::string value = option.getValue();
    if (value.empty() && isBooleanPipelineOption(name))
      value = "true";
    if (std::optional<std::string> error = checkPipelineOption(name, value)) {
      llvm::errs() << "dsc-opt: error: --" << flag.name << ": " << *error
                   << "\n";
      valid = false;
    }
    given[name.str()] = value;
  }
  if (!valid)
    return failure();
  if (given.empty() && !f.config.getNumOccurrences())
    return std::optional<TrainingPipelineRequest>();

  // Checked above, before the config's batch rules divide by it.
  int64_t worldSize = 1;
  if (auto it = given.find("world-size"); it != given.end())
    llvm::to_integer(it->second, worldSize, 10);
  MeshFlags mesh;
  if (auto it = given.find("tensor-parallel"); it != given.end())
    llvm::to_integer(it->second, mesh.tensor, 10);
  if (auto it = given.find("pipeline-parallel"); it != given.end())
    llvm::to_integer(it->second, mesh.pipeline, 10);
  PipelineSettings settings;
  TrainingPipelineRequest request;
  if (f.config.getNumOccurrences()) {
    FailureOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
        readConfigFile(f.config);
    if (failed(buffer))
      return failure();
    llvm::SourceMgr sourceMgr;
    unsigned id = sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
    ConfigAccount account;
    FailureOr<PipelineSettings> fromConfig = readDeepSpeedConfig(
        sourceMgr, id, worldSize, mesh, &request.fromConfig, &account);
    // Also after errors: the account says which keys were fine.
    if (f.configReport || succeeded(fromConfig))
      printConfigAccount(llvm::errs(), account, f.configReport);
    if (failed(fromConfig))
      return failure();
    settings = std::move(*fromConfig);
  }
  // Flags given on the command line win over the config.
  for (auto &[name, value] : given) {
    settings[name] = value;
    request.fromConfig.erase(name);
  }
  // Schedule options the schedule does not take (DeepSpeed's constructors
  // reject them) or a total it needs, named as the user gave them.
  auto scheduler = settings.find("scheduler");
  std::string schedule =
      scheduler == settings.end() ? std::string("none") : scheduler->second;
  std::string scheduleSource =
      given.count("scheduler") || scheduler == settings.end()
          ? "--scheduler=" + schedule
          : "the config's scheduler (" + schedule + ")";
  bool scheduleValid = true;
  for (StringRef option : allScheduleOptions()) {
    if (!settings.count(option.str()) ||
        llvm::is_contained(scheduleOptions(schedule), option))
      continue;
    // From the config, when --scheduler replaced the config's schedule.
    auto origin = request.fromConfig.find(option.str());
    if (origin != request.fromConfig.end())
      llvm::errs() << origin->second.file << ":" << origin->second.line << ":"
                   << origin->second.column << ": error: '"
                   << origin->second.key << "' does not apply to "
                   << scheduleSource << "\n";
    else
      llvm::errs() << "dsc-opt: error: --" << option << " does not apply to "
                   << scheduleSource << "\n";
    scheduleValid = false;
  }
  if (scheduleNeedsTotal(schedule) && !settings.count("total-num-steps")) {
    llvm::errs() << "dsc-opt: error: " << scheduleSource
                 << " needs --total-num-steps\n";
    scheduleValid = false;
  }
  if (!scheduleValid)
    return failure();
  // A report file without a report would be silently left unwritten.
  for (const char *option : {"report-file", "report-format"})
    if (settings.count(option) && !settings.count("report")) {
      llvm::errs() << "dsc-opt: error: --dsc-" << option
                   << " needs --dsc-report=memory, comm or memory,comm\n";
      return failure();
    }
  // ZeRO partitions the optimizer step, which only a training step has.
  auto zero = settings.find("zero-stage");
  auto step = settings.find("step");
  if (zero != settings.end() && zero->second != "0" && step != settings.end() &&
      step->second != "train") {
    llvm::errs() << "dsc-opt: error: ZeRO stage " << zero->second
                 << " partitions the training step; it does not apply to --step="
                 << step->second << "\n";
    return failure();
  }

  for (const auto &[name, value] : settings)
    request.options += (request.options.empty() ? "" : " ") + name + "=" + value;
  return std::optional<TrainingPipelineRequest>(std::move(request));
}
