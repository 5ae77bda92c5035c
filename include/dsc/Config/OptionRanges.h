//===- OptionRanges.h - what each --dsc-pipeline option accepts -*- C++ -*-===//
//
// One table of the values every training-pipeline option accepts: its type,
// its bounds, or its spellings. The top-level flags (`--lr=nan`) and the
// DeepSpeed config (`"weight_decay": -1`) are both checked against it before
// any pass runs, so a bad value is an error at the flag or at the JSON key
// that gave it, never a silent default or a failure deep in a pass.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_CONFIG_OPTIONRANGES_H
#define DSC_CONFIG_OPTIONRANGES_H

#include "mlir/Support/LLVM.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::dsc {

/// More data-parallel ranks than any machine has. With the micro-batch and
/// the accumulation steps bounded alike, the global batch (their product)
/// stays below 2^60, and sizes the passes multiply by the world size stay
/// far from int64's limit.
constexpr int64_t kMaxWorldSize = int64_t(1) << 20;
/// Bound on the micro-batch and on the gradient-accumulation steps (see
/// kMaxWorldSize).
constexpr int64_t kMaxBatchFactor = int64_t(1) << 20;
/// Bound on step counts, element counts and byte budgets: 2^53 is the
/// largest integer a double holds exactly, and the schedules and the
/// config reader compute with doubles.
constexpr int64_t kMaxCount = int64_t(1) << 53;
/// Experts per mixture-of-experts block: far beyond any published model
/// (thousands), small enough that E * capacity * width stays checked.
constexpr int64_t kMaxExperts = int64_t(1) << 20;

/// Checks `value`, the text of pipeline option `option` as a flag or the
/// config gives it. Returns what is wrong with it ("must be >= 0, got -1"),
/// or std::nullopt when it is acceptable. Names outside the table are
/// accepted (the pipeline's parser rejects them).
std::optional<std::string> checkPipelineOption(StringRef option,
                                               StringRef value);

/// Whether `option` is a flag that means `true` when given without a value.
bool isBooleanPipelineOption(StringRef option);

/// Whether `option` takes an integer.
bool isIntegerPipelineOption(StringRef option);

/// The options a learning-rate schedule (`scheduler` option) takes, as
/// DeepSpeed's schedule of that name takes its parameters (their names with
/// `-` for `_`); its constructor rejects any other. Empty for `none`.
ArrayRef<StringLiteral> scheduleOptions(StringRef scheduler);

/// Whether the schedule cannot do without `total-num-steps` (a required
/// argument of DeepSpeed's WarmupDecayLR and WarmupCosineLR).
bool scheduleNeedsTotal(StringRef scheduler);

/// Every option some schedule takes.
ArrayRef<StringLiteral> allScheduleOptions();

} // namespace mlir::dsc

#endif // DSC_CONFIG_OPTIONRANGES_H
