//===- BufferPlan.cpp - static buffer assignment with reuse ----------------===//

#include "dsc/Analysis/BufferPlan.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

using namespace mlir::dsc;

static bool overlapInTime(const BufferRequest &a, const BufferRequest &b) {
  return a.firstUse <= b.lastUse && b.firstUse <= a.lastUse;
}

/// Bytes alive at the busiest schedule position and the first such
/// position (sweep over range ends).
static std::optional<std::pair<int64_t, int64_t>>
maxLive(llvm::ArrayRef<BufferRequest> requests,
        llvm::ArrayRef<int64_t> sizes) {
  std::map<int64_t, int64_t> delta; // position -> change in live bytes
  for (auto [r, size] : llvm::zip(requests, sizes)) {
    delta[r.firstUse] += size;
    delta[r.lastUse + 1] -= size;
  }
  int64_t live = 0, best = 0, bestPosition = 0;
  for (auto &[pos, d] : delta) {
    if (llvm::AddOverflow(live, d, live))
      return std::nullopt;
    if (live > best) {
      best = live;
      bestPosition = pos;
    }
  }
  return std::make_pair(best, bestPosition);
}

std::optional<BufferPlan>
mlir::dsc::planBuffers(llvm::ArrayRef<BufferRequest> requests,
                       int64_t alignment) {
  if (alignment <= 0 || !llvm::isPowerOf2_64(alignment))
    return std::nullopt;
  llvm::SmallVector<int64_t> sizes;
  for (const BufferRequest &r : requests) {
    if (r.bytes < 0 || r.lastUse < r.firstUse)
      return std::nullopt;
    int64_t rounded;
    if (llvm::AddOverflow(r.bytes, alignment - 1, rounded))
      return std::nullopt;
    sizes.push_back(rounded & ~(alignment - 1));
  }

  // Largest first; ties by earlier start, then index, for determinism.
  llvm::SmallVector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  llvm::sort(order, [&](size_t a, size_t b) {
    if (sizes[a] != sizes[b])
      return sizes[a] > sizes[b];
    if (requests[a].firstUse != requests[b].firstUse)
      return requests[a].firstUse < requests[b].firstUse;
    return a < b;
  });

  BufferPlan plan;
  plan.offsets.assign(requests.size(), 0);
  llvm::SmallVector<size_t> placed;
  for (size_t i : order) {
    // Intervals [offset, offset + size) of placed buffers alive with i.
    llvm::SmallVector<std::pair<int64_t, int64_t>> busy;
    for (size_t j : placed)
      if (sizes[j] > 0 && overlapInTime(requests[i], requests[j]))
        busy.push_back({plan.offsets[j], plan.offsets[j] + sizes[j]});
    llvm::sort(busy);
    int64_t best = -1, bestGap = 0, cursor = 0;
    for (auto [begin, end] : busy) {
      int64_t gap = begin - cursor;
      if (gap >= sizes[i] && (best < 0 || gap < bestGap)) {
        best = cursor;
        bestGap = gap;
      }
      cursor = std::max(cursor, end);
    }
    plan.offsets[i] = best >= 0 ? best : cursor;
    int64_t end;
    if (llvm::AddOverflow(plan.offsets[i], sizes[i], end))
      return std::nullopt;
    plan.arenaBytes = std::max(plan.arenaBytes, end);
    placed.push_back(i);
  }
  auto live = maxLive(requests, sizes);
  if (!live)
    return std::nullopt;
  std::tie(plan.maxLiveBytes, plan.busiestPosition) = *live;
  return plan;
}
