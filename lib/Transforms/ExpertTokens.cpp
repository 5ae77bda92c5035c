//===- ExpertTokens.cpp - duplicate token dropping (DeepSpeed-TED) --------===//
//
// ExpertTokens.h says what each step does and why.
//
//===----------------------------------------------------------------------===//

#include "ExpertTokens.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"

using namespace mlir;
using namespace mlir::dsc;

namespace {
RankedTensorType typed(ArrayRef<int64_t> shape, Value like) {
  return RankedTensorType::get(
      shape, cast<RankedTensorType>(like.getType()).getElementType());
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

int64_t numel(Value v) {
  return cast<RankedTensorType>(v.getType()).getNumElements();
}

Value reshape(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  return ReshapeOp::create(b, loc, typed(shape, v), v);
}

Value permute(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> order) {
  return PermuteOp::create(b, loc, v, order);
}
} // namespace

Value mlir::dsc::dropDuplicateTokens(OpBuilder &b, Location loc,
                                     Value dispatched, int64_t ranks) {
  ArrayRef<int64_t> shape = shapeOf(dispatched);
  int64_t experts = shape[0], part = shape[1] / ranks, width = shape[2];
  // [E, T, C/T, M] -> [T, E, C/T, M]: tensor rank t's part is block t.
  Value parts = permute(
      b, loc, reshape(b, loc, dispatched, {experts, ranks, part, width}),
      {1, 0, 2, 3});
  Value flat = reshape(b, loc, parts, {numel(dispatched)});
  Value mine = LocalShardOp::create(b, loc, typed({numel(dispatched) / ranks}, flat),
                                    flat, CollectiveGroup::tensor);
  return reshape(b, loc, mine, {experts, part, width});
}

Value mlir::dsc::gatherExpertTokens(OpBuilder &b, Location loc, Value received,
                                    int64_t experts, int64_t ranks) {
  ArrayRef<int64_t> shape = shapeOf(received);
  int64_t local = shape[0] / experts, part = shape[1], width = shape[2];
  Value flat = reshape(b, loc, received, {numel(received)});
  Value all = AllGatherOp::create(b, loc, typed({numel(received) * ranks}, flat),
                                  flat, CollectiveGroup::tensor);
  // [T, P, E/P, C/T, M] -> [E/P, P, T, C/T, M]: each expert's slots from
  // group rank j, capacity slot t * C/T + c, as the exchange without
  // dropping orders them.
  Value byExpert = permute(
      b, loc, reshape(b, loc, all, {ranks, experts, local, part, width}),
      {2, 1, 0, 3, 4});
  return reshape(b, loc, byExpert, {local, experts * ranks * part, width});
}

Value mlir::dsc::scatterExpertOutputs(OpBuilder &b, Location loc, Value partial,
                                      int64_t experts, int64_t ranks) {
  ArrayRef<int64_t> shape = shapeOf(partial);
  int64_t local = shape[0], part = shape[1] / (experts * ranks),
          width = shape[2];
  // [E/P, P, T, C/T, N] -> [T, P, E/P, C/T, N]: tensor rank t's slots
  // outermost, each in the block order of the return exchange.
  Value parts = permute(
      b, loc, reshape(b, loc, partial, {local, experts, ranks, part, width}),
      {2, 1, 0, 3, 4});
  Value flat = reshape(b, loc, parts, {numel(partial)});
  Value mine = ReduceScatterOp::create(
      b, loc, typed({numel(partial) / ranks}, flat), flat, CollectiveGroup::tensor);
  return reshape(b, loc, mine, {experts, local, part, width});
}

Value mlir::dsc::restoreDroppedTokens(OpBuilder &b, Location loc,
                                      Value returned, int64_t ranks) {
  ArrayRef<int64_t> shape = shapeOf(returned);
  int64_t experts = shape[0], part = shape[1], width = shape[2];
  Value flat = reshape(b, loc, returned, {numel(returned)});
  Value all = AllGatherOp::create(b, loc, typed({numel(returned) * ranks}, flat),
                                  flat, CollectiveGroup::tensor,
                                  /*alike=*/true);
  // [T, E, C/T, N] -> [E, T, C/T, N] = [E, C, N].
  Value slots = permute(
      b, loc, reshape(b, loc, all, {ranks, experts, part, width}), {1, 0, 2, 3});
  return reshape(b, loc, slots, {experts, ranks * part, width});
}
