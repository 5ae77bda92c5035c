//===- BufferPlan.h - static buffer assignment with reuse -------*- C++ -*-===//
//
// Assigns every buffer of a straight-line program an offset in one arena so
// that buffers alive at the same time never overlap, and reports the arena's
// size: the per-rank peak memory the compiler promises and the runtime's
// allocator high-water mark must match. The algorithm knows nothing of any
// IR: the lowering describes buffers by size and live range (first and last
// position in its schedule) and reads back offsets.
//
// Placement is greedy best-fit in decreasing size order (the classic
// heuristic for static memory planning, as in TFLite's arena planner): a
// buffer goes in the smallest gap between buffers already placed whose live
// ranges intersect its own, else after the highest of them. The result is
// deterministic, so every rank computes the same plan.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_ANALYSIS_BUFFERPLAN_H
#define DSC_ANALYSIS_BUFFERPLAN_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>

namespace mlir::dsc {

struct BufferRequest {
  int64_t bytes = 0;
  /// Live range [firstUse, lastUse] in schedule positions, inclusive.
  int64_t firstUse = 0;
  int64_t lastUse = 0;
};

struct BufferPlan {
  /// offsets[i] is the arena offset of request i, a multiple of alignment.
  llvm::SmallVector<int64_t> offsets;
  /// Arena size: the highest end offset of any buffer.
  int64_t arenaBytes = 0;
  /// Lower bound no plan can beat: the most bytes (rounded to the alignment)
  /// alive at one schedule position.
  int64_t maxLiveBytes = 0;
  /// The first schedule position where maxLiveBytes are alive: where to look
  /// for what fills the arena.
  int64_t busiestPosition = 0;
};

/// Plans `requests` with every buffer's size rounded up to `alignment` (a
/// power of two). Returns nullopt when a request is malformed (negative size,
/// lastUse < firstUse) or a size or offset would overflow int64.
std::optional<BufferPlan> planBuffers(llvm::ArrayRef<BufferRequest> requests,
                                      int64_t alignment = 256);

} // namespace mlir::dsc

#endif // DSC_ANALYSIS_BUFFERPLAN_H
