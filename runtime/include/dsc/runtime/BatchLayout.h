//===- BatchLayout.h - which samples a rank takes in a batch ----*- C++ -*-===//
//
// Every data format cuts a step's batch the same way, so that a run's
// samples do not depend on the format or on how many ranks share them:
// with B = globalBatch and N = worldSize, sample j of batch `step` is
// (step*B + j) mod count, and rank r takes the j in [r*B/N, (r+1)*B/N).
// python/dsc/data.py's sample_rows() is the same layout, for the golden
// PyTorch runs.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_BATCHLAYOUT_H
#define DSC_RUNTIME_BATCHLAYOUT_H

#include <cstdint>
#include <string>

namespace dsc::rt {

/// Rank `rank`'s rows of batch `step` (0-based) of `globalBatch` samples
/// among `worldSize` ranks.
class BatchShare {
public:
  /// Throws Error "WHERE: ..." when the step is negative, a size is not
  /// positive, the rank is out of range, or B % N != 0.
  BatchShare(const std::string &where, int64_t step, int64_t globalBatch,
             int rank, int worldSize);

  /// B / N.
  uint64_t rows() const { return rows_; }
  /// The index, among `count` samples (> 0), of row `row` (< rows()):
  /// (step*B + r*B/N + row) mod count, computed in 128 bits so that step*B
  /// never overflows, as Python's integers do not.
  uint64_t sample(uint64_t row, uint64_t count) const;

private:
  int64_t step_, globalBatch_;
  uint64_t first_, rows_;
};

} // namespace dsc::rt

#endif // DSC_RUNTIME_BATCHLAYOUT_H
