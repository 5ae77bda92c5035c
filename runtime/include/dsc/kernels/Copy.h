//===- Copy.h - buffer copies on the CPU ------------------------*- C++ -*-===//
//
// A store into a state, the copy before an in-place all-reduce, a graph
// output: the step copies whole buffers often, and large ones (a 124M
// parameter model's gradients) are worth more than one core's bandwidth.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_COPY_H
#define DSC_KERNELS_COPY_H

#include "dsc/kernels/Queue.h"

#include <cstdint>

namespace dsc::kernels::cpu {

/// Copies `bytes` bytes from `src` to `dst` (which do not overlap): in
/// parallel chunks of at least 1 MiB across the OpenMP threads when the
/// buffer is large enough, one memcpy otherwise.
void copy(Queue, const void *src, void *dst, int64_t bytes);

} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_COPY_H
