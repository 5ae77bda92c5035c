//===- OptionRanges.cpp - what each --dsc-pipeline option accepts ---------===//
//
// Values are checked as text, before the pipeline's option parser reads
// them: that parser splits its option string at white space (so
// `--precision='fp32 '` would read as fp32), takes `0.9,` as a list of one,
// and reads `nan`, `inf` and `1e400` as doubles.
//
//===----------------------------------------------------------------------===//

#include "dsc/Config/OptionRanges.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <cstdio>
#include <limits>

using namespace mlir;
using namespace mlir::dsc;

namespace {
enum class Kind {
  Real,     // a finite double within [low, high] (or open ends)
  Integer,  // a decimal int64 within [low, high]
  Boolean,  // true/false/1/0, as llvm::cl reads a bool
  Choice,   // one of `choices`
  Choices,  // a comma-separated list of `choices`
  Reals,    // `count` comma-separated Reals
  Integers, // a non-empty comma-separated list of Integers
  Path,     // a non-empty file name without white space
};

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Range {
  StringLiteral option;
  Kind kind;
  double low = 0, high = kInf;
  bool lowOpen = false, highOpen = false;
  StringLiteral choices = "";
  unsigned count = 0;
};

Range real(StringLiteral option, double low, double high = kInf,
           bool lowOpen = false, bool highOpen = false) {
  return {option, Kind::Real, low, high, lowOpen, highOpen};
}
Range integer(StringLiteral option, int64_t low, int64_t high) {
  return {option, Kind::Integer, double(low), double(high)};
}
Range choice(StringLiteral option, StringLiteral choices,
             Kind kind = Kind::Choice) {
  return {option, kind, 0, 0, false, false, choices};
}
Range boolean(StringLiteral option) { return {option, Kind::Boolean}; }

// Every option of TrainingPipelineOptions. Bounds are DeepSpeed's and
// PyTorch's where they have one (Adam's betas in [0, 1), eps > 0, ZeRO
// stages 0-3, a 2^power loss scale that fits a float); otherwise the
// finite, non-negative values the optimizer can use, and counts bounded as
// OptionRanges.h says.
const Range kRanges[] = {
    choice("step", "train|gradients|eval"),
    integer("world-size", 1, kMaxWorldSize),
    integer("micro-batch", 0, kMaxBatchFactor),
    choice("precision", "fp32|bf16|fp16"),
    choice("optimizer", "adamw|adam|sgd"),
    real("lr", 0),
    {"betas", Kind::Reals, 0, 1, false, /*highOpen=*/true, "", /*count=*/2},
    real("eps", 0, kInf, /*lowOpen=*/true),
    real("weight-decay", 0),
    real("momentum", 0),
    real("grad-clip", 0),
    choice("scheduler", "none|warmup-lr|warmup-decay-lr|warmup-cosine-lr"),
    real("warmup-min-lr", 0),
    real("warmup-max-lr", 0),
    integer("warmup-num-steps", 1, kMaxCount),
    choice("warmup-type", "log|linear"),
    integer("total-num-steps", 1, kMaxCount),
    real("warmup-min-ratio", 0, 1),
    real("cos-min-ratio", 0, 1),
    integer("grad-accum", 1, kMaxBatchFactor),
    boolean("loss-scaling"),
    real("loss-scale", 0),
    integer("initial-scale-power", 0, 127),
    integer("loss-scale-window", 1, kMaxCount),
    integer("hysteresis", 1, kMaxCount),
    real("min-loss-scale", 0, kInf, /*lowOpen=*/true),
    integer("zero-stage", 0, 3),
    integer("zero-persistence-threshold", 0, kMaxCount),
    integer("zero-unshard-budget", 0, kMaxCount),
    integer("zero-prefetch-bucket-size", 0, kMaxCount),
    integer("zero-max-live-parameters", 0, kMaxCount),
    integer("zero-reduce-bucket-size", 0, kMaxCount),
    integer("zero-allgather-bucket-size", 0, kMaxCount),
    boolean("zero-overlap-comm"),
    boolean("vocab-parallel"),
    boolean("sequence-parallel"),
    choice("offload-optimizer", "none|cpu|nvme"),
    integer("zero-sub-group-size", 1, kMaxCount),
    integer("offload-buffer-count", 1, 1024),
    choice("offload-param", "none|cpu|nvme"),
    integer("offload-param-buffer-count", 1, 1024),
    integer("offload-param-buffer-size", 1, kMaxCount),
    {"nvme-path", Kind::Path},
    boolean("checkpoint-activations"),
    boolean("comm-aware-checkpointing"),
    choice("checkpoint-segments", "blocks"),
    integer("checkpoint-budget", 0, kMaxCount),
    boolean("checkpoint-print"),
    choice("report", "memory|comm|estimate", Kind::Choices),
    choice("report-format", "text|json"),
    {"report-file", Kind::Path},
    integer("steps-per-print", 1, kMaxCount),
    {"csv-monitor", Kind::Path},
    integer("moe-experts", 0, kMaxExperts),
    integer("moe-top-k", 1, kMaxExperts),
    real("moe-capacity-factor", 0, kInf, /*lowOpen=*/true),
    real("moe-eval-capacity-factor", 0, kInf, /*lowOpen=*/true),
    integer("moe-min-capacity", 0, kMaxCount),
    boolean("moe-drop-tokens"),
    boolean("moe-residual"),
    real("moe-aux-loss-coef", 0),
    integer("moe-every", 1, kMaxCount),
    {"moe-experts-per-layer", Kind::Integers, 1, double(kMaxExperts)},
    choice("moe-init", "upcycle|random"),
    integer("moe-seed", 0, kMaxCount),
    boolean("moe-use-rts"),
    boolean("moe-duplicate-token-dropping"),
    choice("moe-noisy-gate-policy", "none|jitter|rsample"),
    boolean("moe-top2-2nd-expert-sampling"),
    integer("moe-ep-size", 1, kMaxExperts),
    integer("tensor-parallel", 1, kMaxWorldSize),
    integer("pipeline-parallel", 1, kMaxWorldSize),
    integer("pipeline-stage", 0, kMaxWorldSize - 1),
    choice("pipeline-schedule", "gpipe|1f1b|zb-h1|interleaved"),
    integer("pipeline-chunks", 1, kMaxWorldSize),
    {"distill-from", Kind::Path},
    real("kd-beta", 0),
    real("kd-temperature", 0, kInf, /*lowOpen=*/true),
    choice("kd-teacher-precision", "fp32|bf16"),
    integer("kd-stop-step", 0, kMaxCount),
    boolean("kd-teacher-forward"),
    choice("curriculum-schedule", "none|fixed_linear|fixed_root|fixed_discrete"),
    integer("curriculum-min", 1, kMaxCount),
    integer("curriculum-max", 1, kMaxCount),
    integer("curriculum-total-steps", 1, kMaxCount),
    integer("curriculum-difficulty-step", 1, kMaxCount),
    real("curriculum-root-degree", 1),
    {"curriculum-difficulty", Kind::Integers, 1, double(kMaxCount)},
    {"curriculum-max-step", Kind::Integers, 1, double(kMaxCount)},
    integer("ltd-min", 0, kMaxCount),
    integer("ltd-max", 0, kMaxCount),
    integer("ltd-require-steps", 1, kMaxCount),
    integer("ltd-seq-per-step", 1, kMaxCount),
    {"ltd-layers", Kind::Integers, 0, double(kMaxCount)},
    integer("ltd-seed", 0, kMaxCount),
    real("data-variants-budget", 0),
    {"data-variants-file", Kind::Path},
    integer("seqlen", 0, kMaxCount),
    integer("ltd-kept", 0, kMaxCount),
};

std::string format(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

std::string quoted(StringRef text) { return ("'" + text + "'").str(); }

/// "must be in [0, 1), got 2"; "must be >= 0, got -1".
std::string outOfRange(const Range &range, StringRef got) {
  std::string bounds;
  if (range.high == kInf)
    bounds = (range.lowOpen ? "> " : ">= ") + format(range.low);
  else
    bounds = std::string("in ") + (range.lowOpen ? "(" : "[") +
             format(range.low) + ", " + format(range.high) +
             (range.highOpen ? ")" : "]");
  return "must be " + bounds + ", got " + got.str();
}

std::optional<std::string> checkReal(const Range &range, StringRef text) {
  // strtod also skips leading white space and reads hexadecimal floats,
  // nan and inf; a number here is what a person writes.
  double value;
  bool plain = !text.empty() &&
               llvm::all_of(text, [](char c) {
                 return llvm::isDigit(c) || StringRef("+-.eE").contains(c);
               });
  StringRef magnitude = text.drop_front(text.starts_with("-") || text.starts_with("+"));
  if (llvm::is_contained({"nan", "inf", "infinity"}, magnitude.lower()))
    return quoted(text) + " is not a finite number";
  if (!plain || !llvm::to_float(text, value))
    return quoted(text) + " is not a number";
  // 1e400 reads as inf.
  if (!std::isfinite(value))
    return quoted(text) + " is not a finite number";
  bool aboveLow = range.lowOpen ? value > range.low : value >= range.low;
  bool belowHigh = range.highOpen ? value < range.high : value <= range.high;
  if (!aboveLow || !belowHigh)
    return outOfRange(range, text);
  return std::nullopt;
}

std::optional<std::string> checkInteger(const Range &range, StringRef text) {
  int64_t value;
  if (!llvm::to_integer(text, value, 10)) {
    // All digits, but beyond int64.
    StringRef digits = text.drop_front(text.starts_with("-"));
    if (!digits.empty() && llvm::all_of(digits, llvm::isDigit))
      return outOfRange(range, text);
    return quoted(text) + " is not an integer";
  }
  if (double(value) < range.low || double(value) > range.high)
    return outOfRange(range, text);
  return std::nullopt;
}

std::optional<std::string> checkChoice(const Range &range, StringRef text) {
  SmallVector<StringRef> choices;
  StringRef(range.choices).split(choices, '|');
  if (llvm::is_contained(choices, text))
    return std::nullopt;
  return quoted(text) + " is not one of " + llvm::join(choices, ", ");
}

std::optional<std::string> check(const Range &range, StringRef text) {
  switch (range.kind) {
  case Kind::Real:
    return checkReal(range, text);
  case Kind::Integer:
    return checkInteger(range, text);
  case Kind::Boolean:
    if (llvm::is_contained({"true", "false", "1", "0"}, text))
      return std::nullopt;
    return quoted(text) + " is not true or false";
  case Kind::Choice:
    return checkChoice(range, text);
  case Kind::Choices:
  case Kind::Integers:
  case Kind::Reals: {
    SmallVector<StringRef> items;
    text.split(items, ',');
    bool emptyItem = llvm::is_contained(items, StringRef());
    if (range.kind != Kind::Reals && emptyItem)
      return "expected a comma-separated list, got " + quoted(text);
    if (range.kind == Kind::Reals && (items.size() != range.count || emptyItem))
      return "expected " + std::to_string(range.count) +
             " comma-separated numbers, got " + quoted(text);
    Range item = range;
    item.kind = range.kind == Kind::Reals      ? Kind::Real
                : range.kind == Kind::Integers ? Kind::Integer
                                               : Kind::Choice;
    for (StringRef value : items)
      if (std::optional<std::string> error = check(item, value))
        return error;
    return std::nullopt;
  }
  case Kind::Path:
    if (text.empty())
      return std::string("expected a file name, got nothing");
    if (llvm::any_of(text, llvm::isSpace))
      return quoted(text) + ": file names with white space are not supported";
    return std::nullopt;
  }
  llvm_unreachable("unknown option kind");
}
} // namespace

static const Range *find(StringRef option) {
  for (const Range &range : kRanges)
    if (range.option == option)
      return &range;
  return nullptr;
}

bool mlir::dsc::isBooleanPipelineOption(StringRef option) {
  const Range *range = find(option);
  return range && range->kind == Kind::Boolean;
}

bool mlir::dsc::isIntegerPipelineOption(StringRef option) {
  const Range *range = find(option);
  return range && range->kind == Kind::Integer;
}

namespace {
constexpr StringLiteral kWarmupLR[] = {"warmup-min-lr", "warmup-max-lr",
                                       "warmup-num-steps", "warmup-type"};
constexpr StringLiteral kWarmupDecayLR[] = {"warmup-min-lr", "warmup-max-lr",
                                            "warmup-num-steps", "warmup-type",
                                            "total-num-steps"};
constexpr StringLiteral kWarmupCosineLR[] = {
    "warmup-min-ratio", "cos-min-ratio", "warmup-num-steps", "warmup-type",
    "total-num-steps"};
constexpr StringLiteral kAnySchedule[] = {
    "warmup-min-lr", "warmup-max-lr",    "warmup-num-steps", "warmup-type",
    "total-num-steps", "warmup-min-ratio", "cos-min-ratio"};
} // namespace

ArrayRef<StringLiteral> mlir::dsc::scheduleOptions(StringRef scheduler) {
  if (scheduler == "warmup-lr")
    return kWarmupLR;
  if (scheduler == "warmup-decay-lr")
    return kWarmupDecayLR;
  if (scheduler == "warmup-cosine-lr")
    return kWarmupCosineLR;
  return {};
}

bool mlir::dsc::scheduleNeedsTotal(StringRef scheduler) {
  return scheduler == "warmup-decay-lr" || scheduler == "warmup-cosine-lr";
}

ArrayRef<StringLiteral> mlir::dsc::allScheduleOptions() { return kAnySchedule; }

std::optional<std::string> mlir::dsc::checkPipelineOption(StringRef option,
                                                          StringRef value) {
  if (const Range *range = find(option))
    return check(*range, value);
  return std::nullopt;
}
