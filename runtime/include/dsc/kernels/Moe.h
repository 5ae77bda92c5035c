//===- Moe.h - expert slots, dispatch, combine, route dot -------*- C++ -*-===//
//
// Index-based routing of mixture-of-experts layers (dsc.moe_slots,
// dsc.moe_dispatch, dsc.moe_combine, dsc.moe_route_dot). S tokens of width
// M are routed to E experts of capacity C, k choices per token; route (s, j)
// is position s * k + j of the [S, k] index tensors. A kept route has slot
// expert * C + location, a dropped one slot -1 (any negative slot is
// dropped). Dispatch and combine move rows by slot, so they cost the routed
// rows, not GShard's S x E x C one-hot products, and they are each other's
// adjoints.
//
// Determinism: every result is a function of the inputs alone, the same on
// any number of threads and bitwise the same on the CUDA target
// (cuda/Moe.cuh): sums are float (16-bit data widened), every product and
// sum rounded (no contraction), in the orders documented per function.
//
// Bad indices throw std::out_of_range "<op>: index I is outside [0, N)"
// after the kernel, for the lowest bad position (IndexCheck.h): an expert
// outside [0, E) in moeSlots (the route is not counted and gets slot -1), a
// slot at or above E * C in the others (the route is skipped).
//
// Instantiated for float, bf16 and f16 in the runtime library.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_MOE_H
#define DSC_KERNELS_MOE_H

#include "dsc/kernels/MoeShape.h"
#include "dsc/kernels/Queue.h"
#include "dsc/runtime/Float16.h"

#include <cstdint>

namespace dsc::kernels::cpu {

/// counts[e] = the routes with experts[s, j] == e; slots[s, j] = the slot of
/// route (s, j) or -1 (dsc.moe_slots). Without `priority` (null), each
/// expert numbers its routes in (j, s) order (every first choice before any
/// second choice) and keeps numbers below C. With `priority` ([S, k]), each
/// expert keeps the C routes of highest priority (NaN above every number;
/// ties to the lower position) and numbers the kept ones in (s, j) order.
/// Uses shape.tokens, choices, experts and capacity.
void moeSlots(Queue, const int64_t *experts, const float *priority, int64_t *slots,
              int64_t *counts, MoeShape shape);

/// out[slot / C, slot % C, :] = x[s, :] * weights[s, j] for every kept
/// route (s, j) (a copy without weights, null), zeros in the slots no route
/// fills; out is [E, C, M]. Each row of out is written once: from the
/// route with the highest position naming its slot (slots from moeSlots
/// are distinct).
template <typename T>
void moeDispatch(Queue, const T *x, const int64_t *slots, const T *weights, T *out,
                 MoeShape shape);

/// out[s, :] = sum over j = 0..k-1 with a kept slot of
/// in[slot, :] * weights[s, j] (no product without weights, null): float
/// sums from 0 in that order, rounded once to T; zeros for a token with no
/// kept route.
template <typename T>
void moeCombine(Queue, const T *in, const int64_t *slots, const T *weights, T *out,
                MoeShape shape);

/// out[s, j] = sum_m rows[s, m] * slotted[slot, m] for a kept route, 0 for a
/// dropped one. The order: chunk c (kMoeChunk<T> elements) of the row adds,
/// element by element, into float partial c % 32; then partial l += partial
/// l + h for h = 16, 8, 4, 2, 1 (l < h); the result is partial 0.
template <typename T>
void moeRouteDot(Queue, const T *rows, const T *slotted, const int64_t *slots, T *out,
                 MoeShape shape);

#define DSC_MOE_DECLARE(T)                                                     \
  extern template void moeDispatch<T>(Queue, const T *, const int64_t *, const T *, T *, \
                                      MoeShape);                               \
  extern template void moeCombine<T>(Queue, const T *, const int64_t *, const T *, T *, \
                                     MoeShape);                                \
  extern template void moeRouteDot<T>(Queue, const T *, const T *, const int64_t *, T *, \
                                      MoeShape);
DSC_MOE_DECLARE(float)
DSC_MOE_DECLARE(dsc::rt::BFloat16)
DSC_MOE_DECLARE(dsc::rt::Half)
#undef DSC_MOE_DECLARE

} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_MOE_H
