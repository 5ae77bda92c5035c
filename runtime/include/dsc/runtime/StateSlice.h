//===- StateSlice.h - which elements of a tensor a rank holds ---*- C++ -*-===//
//
// The elements of a whole flattened tensor that one rank holds of a
// partitioned state, or that one piece of a checkpoint holds: shared by
// the loading of weights files (Run.h, stateSlice) and the checkpoints'
// pieces (Checkpoint.h), so that a piece is written and read back with the
// arithmetic that placed it.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_STATESLICE_H
#define DSC_RUNTIME_STATESLICE_H

#include <algorithm>
#include <cstdint>

namespace dsc::rt {

/// `blocks` ranges of `count` elements of the whole, `stride` apart:
/// [begin + b * stride, begin + b * stride + count) for b < blocks, held one
/// after the other (one range for a ZeRO shard of a whole tensor; one per
/// block of a tensor-parallel slice). Of that sequence, the holder keeps
/// `size` elements from the `first`: ZeRO's shard of a slice, a run that
/// may start and end inside a block (size < 0: all of them).
struct StateSlice {
  int64_t begin = 0, count = 0;
  int64_t blocks = 1, stride = 0;
  int64_t first = 0, size = -1;
  /// Elements held: `size`, or all blocks * count.
  int64_t total() const { return size >= 0 ? size : blocks * count; }
  /// The whole tensor's index of the `i`-th element held.
  int64_t whole(int64_t i) const {
    int64_t j = first + i;
    return begin + (j / count) * stride + j % count;
  }
  /// Calls `run(wholeBegin, held, n)` for each range of whole elements
  /// held, in order: n elements from `wholeBegin`, the `held`-th element
  /// held the first of them.
  template <typename Run> void forEachRun(Run &&run) const {
    int64_t end = first + total();
    for (int64_t j = first; j < end;) {
      int64_t n = std::min(end, (j / count + 1) * count) - j;
      run(whole(j - first), j - first, n);
      j += n;
    }
  }
};

} // namespace dsc::rt

#endif // DSC_RUNTIME_STATESLICE_H
