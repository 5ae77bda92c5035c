//===- PipelineStages.cpp - cutting a model into balanced stages ----------===//
//
// The linear partition problem, solved exactly by dynamic programming over
// (stages used, blocks covered): O(P·n²) for n blocks, a few milliseconds
// for GPT-3's 96 blocks.
//
//===----------------------------------------------------------------------===//

#include "dsc/Analysis/PipelineStages.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir::dsc::pipeline;
using llvm::SmallVector;

double StageCut::maxStageCost() const {
  double most = 0;
  for (double cost : stageCost)
    most = std::max(most, cost);
  return most;
}

static llvm::Error cutError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<StageCut>
mlir::dsc::pipeline::balanceStages(llvm::ArrayRef<double> blockCosts,
                                   int64_t stages, double prologue,
                                   double epilogue) {
  const int64_t n = blockCosts.size();
  if (stages < 1 || stages > n)
    return cutError(llvm::formatv("cannot cut {0} blocks into {1} non-empty "
                                  "pipeline stages",
                                  n, stages));
  // (The ends in an array of their own: a braced list inside the loop's
  // range expression would be gone before the loop reads it.)
  const double ends[] = {prologue, epilogue};
  for (double cost : llvm::concat<const double>(blockCosts, llvm::ArrayRef(ends)))
    if (!std::isfinite(cost) || cost < 0)
      return cutError(llvm::formatv("a block cost of {0} cannot be balanced", cost));

  SmallVector<double> prefix(n + 1, 0.0);
  for (int64_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + blockCosts[i];
  // The cost of blocks [j, i) as stage s of `stages`.
  auto stageCost = [&](int64_t s, int64_t j, int64_t i) {
    return prefix[i] - prefix[j] + (s == 0 ? prologue : 0) +
           (s == stages - 1 ? epilogue : 0);
  };

  const double inf = std::numeric_limits<double>::infinity();
  // best[s][i]: the smallest largest cost of blocks [0, i) in stages 0..s;
  // start[s][i]: where stage s begins in that cut.
  SmallVector<SmallVector<double>> best(stages, SmallVector<double>(n + 1, inf));
  SmallVector<SmallVector<int64_t>> start(stages, SmallVector<int64_t>(n + 1, 0));
  for (int64_t i = 1; i <= n; ++i)
    best[0][i] = stageCost(0, 0, i);
  for (int64_t s = 1; s < stages; ++s)
    for (int64_t i = s + 1; i <= n; ++i)
      for (int64_t j = s; j < i; ++j) {
        double cost = std::max(best[s - 1][j], stageCost(s, j, i));
        if (cost <= best[s][i]) { // `<=`: the latest start wins a tie
          best[s][i] = cost;
          start[s][i] = j;
        }
      }

  StageCut cut;
  cut.firstBlock.assign(stages, 0);
  cut.stageCost.assign(stages, 0);
  for (int64_t s = stages - 1, end = n; s >= 0; --s) {
    int64_t begin = s == 0 ? 0 : start[s][end];
    cut.firstBlock[s] = begin;
    cut.stageCost[s] = stageCost(s, begin, end);
    end = begin;
  }
  return cut;
}
