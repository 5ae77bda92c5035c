//===- Copy.cpp - buffer copies on the CPU ---------------------------------===//

#include "dsc/kernels/Copy.h"

#include <algorithm>
#include <cstring>

void dsc::kernels::cpu::copy(Queue, const void *src, void *dst, int64_t bytes) {
  // Below two chunks one thread is as fast: a parallel region costs more
  // than it saves.
  constexpr int64_t kChunk = int64_t(1) << 20;
  if (bytes < 2 * kChunk) {
    if (bytes > 0)
      std::memcpy(dst, src, static_cast<size_t>(bytes));
    return;
  }
  const int64_t chunks = (bytes + kChunk - 1) / kChunk;
  const char *from = static_cast<const char *>(src);
  char *to = static_cast<char *>(dst);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * kChunk;
    std::memcpy(to + begin, from + begin,
                static_cast<size_t>(std::min(kChunk, bytes - begin)));
  }
}
