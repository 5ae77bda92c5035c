//===- Philox.h - the counter-based generator of random ops -----*- C++ -*-===//
//
// Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers:
// as easy as 1, 2, 3", SC 2011): four 32-bit words from a 128-bit counter
// and a 64-bit key, ten rounds. A draw is a pure function of (counter,
// key), so any thread, rank or recomputation gets the same numbers for the
// same element without a generator state to carry. Used on the host and in
// CUDA kernels alike; python/dsc/philox.py computes the same words.
//
// How dsc's random ops fill the counter and the key is documented with
// each op (DropoutSite, Random.h).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_PHILOX_H
#define DSC_KERNELS_PHILOX_H

#include <cstdint>

#ifdef __CUDACC__
#define DSC_PHILOX_HD __host__ __device__
#else
#define DSC_PHILOX_HD
#endif

namespace dsc::kernels {

struct PhiloxWords {
  uint32_t w[4];
};

/// Philox4x32-10 of `counter` under `key`.
DSC_PHILOX_HD inline PhiloxWords philox4x32(PhiloxWords counter, uint32_t key0,
                                            uint32_t key1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kBump0 = 0x9E3779B9u, kBump1 = 0xBB67AE85u;
  uint32_t *c = counter.w;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += kBump0;
      key1 += kBump1;
    }
    const uint64_t p0 = uint64_t(kMul0) * c[0], p1 = uint64_t(kMul1) * c[2];
    const uint32_t n0 = uint32_t(p1 >> 32) ^ c[1] ^ key0, n1 = uint32_t(p1);
    const uint32_t n2 = uint32_t(p0 >> 32) ^ c[3] ^ key1, n3 = uint32_t(p0);
    c[0] = n0;
    c[1] = n1;
    c[2] = n2;
    c[3] = n3;
  }
  return counter;
}

} // namespace dsc::kernels

#endif // DSC_KERNELS_PHILOX_H
