//===- IndexCheck.h - bad indices found inside a parallel loop --*- C++ -*-===//
//
// A kernel that reads at run-time indices (embedding ids, gather and
// scatter indices) checks each one inside its OpenMP loop, where it may not
// throw. It records the position of the bad index, skips the element, and
// throws after the loop. The position kept is the lowest one found (an
// atomic minimum), so the message names the same index whatever the number
// of threads.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_INDEXCHECK_H
#define DSC_KERNELS_INDEXCHECK_H

#include <atomic>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace dsc::kernels::cpu {

class IndexCheck {
public:
  /// True (and the position recorded) when `index` is outside [0, size).
  bool bad(int64_t index, int64_t size, int64_t position) {
    if (index >= 0 && index < size)
      return false;
    int64_t seen = first.load(std::memory_order_relaxed);
    while (position < seen &&
           !first.compare_exchange_weak(seen, position, std::memory_order_relaxed))
      ;
    return true;
  }

  /// After the loop: throws std::out_of_range "<what>: index I is outside
  /// [0, size)" for the lowest recorded position, whose index `indexAt`
  /// reads back.
  template <typename IndexAt>
  void raise(const char *what, int64_t size, IndexAt indexAt) const {
    int64_t position = first.load(std::memory_order_relaxed);
    if (position == kNone)
      return;
    throw std::out_of_range(std::string(what) + ": index " +
                            std::to_string(indexAt(position)) + " is outside [0, " +
                            std::to_string(size) + ")");
  }

private:
  static constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  std::atomic<int64_t> first{kNone};
};

} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_INDEXCHECK_H
