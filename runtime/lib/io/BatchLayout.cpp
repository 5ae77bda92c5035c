//===- BatchLayout.cpp - which samples a rank takes in a batch ------------===//

#include "dsc/runtime/BatchLayout.h"

#include "dsc/runtime/Error.h"

namespace dsc::rt {

BatchShare::BatchShare(const std::string &where, int64_t step,
                       int64_t globalBatch, int rank, int worldSize)
    : step_(step), globalBatch_(globalBatch) {
  check(step >= 0, where + ": step " + std::to_string(step) + " < 0");
  check(globalBatch > 0 && worldSize > 0,
        where + ": batch " + std::to_string(globalBatch) + " and " +
            std::to_string(worldSize) + " ranks must both be positive");
  check(rank >= 0 && rank < worldSize,
        where + ": rank " + std::to_string(rank) + " out of range for " +
            std::to_string(worldSize) + " ranks");
  check(globalBatch % worldSize == 0,
        where + ": batch " + std::to_string(globalBatch) +
            " does not divide among " + std::to_string(worldSize) + " ranks");
  rows_ = static_cast<uint64_t>(globalBatch / worldSize);
  first_ = static_cast<uint64_t>(rank) * rows_;
}

uint64_t BatchShare::sample(uint64_t row, uint64_t count) const {
  unsigned __int128 global =
      static_cast<unsigned __int128>(step_) *
          static_cast<uint64_t>(globalBatch_) +
      first_ + row;
  return static_cast<uint64_t>(global % count);
}

} // namespace dsc::rt
