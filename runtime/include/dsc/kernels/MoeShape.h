//===- MoeShape.h - the shape of a routed mixture-of-experts layer -*- C++ -*-===//
//
// What the routing kernels (Moe.h, cuda/Moe.cuh) take besides pointers: a
// plain aggregate, so the emitter writes it as a literal
// (`dsc::kernels::MoeShape{S, k, M, E, C}`) and a CUDA kernel receives it
// by value; and the summation order of moeRouteDot, which both targets
// follow so that their results are the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_MOESHAPE_H
#define DSC_KERNELS_MOESHAPE_H

#include <cstdint>

#ifdef __CUDACC__
#define DSC_MOE_HD __host__ __device__
#else
#define DSC_MOE_HD
#endif

namespace dsc::kernels {

/// S tokens of width M routed to E experts of capacity C, k choices each.
struct MoeShape {
  int64_t tokens;   // S
  int64_t choices;  // k
  int64_t width;    // M
  int64_t experts;  // E
  int64_t capacity; // C
  DSC_MOE_HD int64_t routeCount() const { return tokens * choices; }
  DSC_MOE_HD int64_t slotCount() const { return experts * capacity; }
};

/// Elements of T per 16-byte chunk (a vector load on CUDA): chunk c of a
/// row adds into moeRouteDot's partial sum c % kMoeLanes.
template <typename T> constexpr int64_t kMoeChunk = 16 / int64_t(sizeof(T));
constexpr int kMoeLanes = 32;

} // namespace dsc::kernels

#endif // DSC_KERNELS_MOESHAPE_H
