//===- PipelineStages.h - cutting a model into balanced stages --*- C++ -*-===//
//
// Pipeline parallelism cuts the model's sequence of blocks into P contiguous
// stages. The step runs at the pace of the slowest stage, so the cut
// minimises the largest stage cost; the first stage also carries what runs
// before the first block (embeddings) and the last what runs after the last
// (final norm, head, loss), which is why GPT-2's last stage takes fewer
// blocks than the others at a large vocabulary. Megatron divides the layers
// evenly and DeepSpeed's PipelineModule balances parameter counts; a
// compiler knows each block's FLOPs and balances those.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_ANALYSIS_PIPELINESTAGES_H
#define DSC_ANALYSIS_PIPELINESTAGES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace mlir::dsc::pipeline {

struct StageCut {
  /// firstBlock[s]: the first block of stage s; stage s holds blocks
  /// [firstBlock[s], firstBlock[s + 1]) (the last up to the end).
  llvm::SmallVector<int64_t> firstBlock;
  /// Each stage's cost, the prologue and epilogue included.
  llvm::SmallVector<double> stageCost;
  double maxStageCost() const;
};

/// The cut of `blockCosts` (non-negative, in model order) into `stages`
/// contiguous non-empty stages with the smallest largest stage cost, where
/// `prologue` is added to the first stage and `epilogue` to the last. Among
/// cuts with the same largest cost, the one whose stages are earliest filled
/// (lexicographically largest first stages) is returned, so the choice is
/// deterministic. An error when there are fewer blocks than stages.
llvm::Expected<StageCut> balanceStages(llvm::ArrayRef<double> blockCosts,
                                       int64_t stages, double prologue = 0,
                                       double epilogue = 0);

} // namespace mlir::dsc::pipeline

#endif // DSC_ANALYSIS_PIPELINESTAGES_H
