//===- ExpertTokens.h - duplicate token dropping (DeepSpeed-TED) -*- C++ -*-===//
//
// Under tensor parallelism the tokens an MoE layer dispatches are the same
// on the T ranks of a tensor group, so sending all of them through the
// expert all-to-all sends every token T times. Duplicate token dropping
// sends each rank's 1/T of every expert's capacity slots instead and
// restores the rest with all-gathers over the tensor group (whose traffic
// stays on the fastest links): the all-to-alls' bytes fall by T.
//
// Slot c of an expert's capacity C goes with tensor rank c / (C / T); the
// tensors the collectives move are flat, the tensor rank's part outermost.
// Each helper is built from explicit ops (dsc.local_shard, dsc.all_gather,
// dsc.reduce_scatter and shape ops), whose gradient rules give the
// backward.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_TRANSFORMS_EXPERTTOKENS_H
#define DSC_LIB_TRANSFORMS_EXPERTTOKENS_H

#include "mlir/IR/Builders.h"

namespace mlir::dsc {

/// This rank's 1/T of the dispatched tokens [E, C, M], alike on its tensor
/// group: [E, C / T, M], the slots [t * C / T, (t + 1) * C / T) of every
/// expert (t its index in the group). No communication.
Value dropDuplicateTokens(OpBuilder &b, Location loc, Value dispatched,
                          int64_t ranks);

/// What an all-to-all over the expert group of P ranks delivered to this
/// rank, [P, E / P, C / T, M] as [E, C / T, M] (its E / P experts' slots
/// from each of the group's ranks), gathered over the tensor group into
/// the experts' input [E / P, P * C, M], the slots of each expert in the
/// order of the exchange without dropping.
Value gatherExpertTokens(OpBuilder &b, Location loc, Value received,
                         int64_t experts, int64_t ranks);

/// The experts' partial outputs [E / P, P * C, N] (a row-parallel product:
/// each rank of the tensor group holds a share of every slot's sum),
/// summed over the tensor group with each rank keeping its 1/T of the
/// slots: [P, E / P, C / T, N], block j for the expert group's rank j.
Value scatterExpertOutputs(OpBuilder &b, Location loc, Value partial,
                           int64_t experts, int64_t ranks);

/// The outputs an all-to-all returned, [E, C / T, N] (this rank's 1/T of
/// every expert's slots), gathered over the tensor group into [E, C, N].
/// What reads them is alike on the group's ranks (`alike`): the
/// gradient takes each rank's part of the cotangent, without a sum.
Value restoreDroppedTokens(OpBuilder &b, Location loc, Value returned,
                           int64_t ranks);

} // namespace mlir::dsc

#endif // DSC_LIB_TRANSFORMS_EXPERTTOKENS_H
