//===- StepBuilder.h - building the training step's arithmetic --*- C++ -*-===//
//
// The optimizer step, the learning-rate schedule, gradient accumulation and
// loss scaling are built as dsc ops at one insertion point, mostly on
// scalars of the parameters' float type. StepBuilder spells them briefly.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_TRANSFORMS_STEPBUILDER_H
#define DSC_LIB_TRANSFORMS_STEPBUILDER_H

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::dsc {

struct StepBuilder {
  OpBuilder &b;
  Location loc;
  Type elem; // the float type of scalars built by c()

  RankedTensorType scalarType() const { return RankedTensorType::get({}, elem); }
  Value c(double v) {
    return ConstantOp::create(
        b, loc, DenseElementsAttr::get(scalarType(), b.getFloatAttr(elem, v)));
  }
  Value load(StateOp state) {
    return LoadOp::create(b, loc, state.getTensorType(), state.getSymName());
  }
  void store(Value value, StateOp state) {
    StoreOp::create(b, loc, value, state.getSymName());
  }
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return MinimumOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return MaximumOp::create(b, loc, x, y); }
  Value log(Value x) { return LogOp::create(b, loc, x); }
  Value cos(Value x) { return CosOp::create(b, loc, x); }
  Value cmp(ComparisonDirection d, Value x, Value y) {
    return CompareOp::create(b, loc, d, x, y);
  }
  Value select(Value cond, Value onTrue, Value onFalse) {
    return SelectOp::create(b, loc, cond, onTrue, onFalse);
  }
  /// An i1 scalar.
  Value boolean(bool v) {
    return ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(RankedTensorType::get({}, b.getI1Type()), v));
  }
  /// The f32 sum of squares of `tensors` (each element times `scale`, when
  /// given): one dsc.sum_squares per element type among them (one in
  /// practice), their sums added in the order the types first appear.
  Value sumSquares(ArrayRef<Value> tensors, Value scale) {
    SmallVector<Type> types;
    SmallVector<SmallVector<Value>> groups;
    for (Value t : tensors) {
      Type type = cast<RankedTensorType>(t.getType()).getElementType();
      auto *it = llvm::find(types, type);
      if (it == types.end()) {
        types.push_back(type);
        groups.emplace_back();
        it = std::prev(types.end());
      }
      groups[it - types.begin()].push_back(t);
    }
    Value total;
    for (ArrayRef<Value> group : groups) {
      Value sum = SumSquaresOp::create(
          b, loc, RankedTensorType::get({}, b.getF32Type()), group, scale);
      total = total ? add(total, sum) : sum;
    }
    return total;
  }
  /// sumSquares over the gradients of a whole model whose `experts` are
  /// split over the ranks of each expert group, and whose `slices` over the
  /// ranks of each tensor group (the others `replicated` on every rank of
  /// those groups): each split share is summed over its group, so that
  /// every rank holds the same total. `expertSlices` are split over both
  /// (experts under tensor parallelism): summed over the one, then the
  /// other.
  Value sumSquaresOverRanks(ArrayRef<Value> replicated, ArrayRef<Value> experts,
                            Value scale, ArrayRef<Value> slices = {},
                            ArrayRef<Value> expertSlices = {}) {
    Value total = replicated.empty() ? Value() : sumSquares(replicated, scale);
    for (auto [split, over] : {std::pair(experts, CollectiveGroup::expert),
                               std::pair(slices, CollectiveGroup::tensor)}) {
      if (split.empty())
        continue;
      Value local = sumSquares(split, scale);
      Value group = AllReduceOp::create(b, loc, local, over);
      total = total ? add(total, group) : group;
    }
    if (!expertSlices.empty()) {
      Value local = sumSquares(expertSlices, scale);
      Value experts = AllReduceOp::create(b, loc, local, CollectiveGroup::expert);
      Value both = AllReduceOp::create(b, loc, experts, CollectiveGroup::tensor);
      total = total ? add(total, both) : both;
    }
    // A pipeline stage holds its blocks' gradients only: the stages' sums
    // add up to the model's (the caller leaves a weight tied between
    // stages to one of them), the same on every stage.
    if (lookupPipelineParallelSize(b.getInsertionBlock()->getParentOp()) > 1)
      total = AllReduceOp::create(b, loc, total ? total : c(0),
                                  CollectiveGroup::pipeline);
    return total;
  }
  /// Logical and / or / not of i1 tensors, as selects.
  Value logicalAnd(Value x, Value y) { return select(x, y, x); }
  Value logicalOr(Value x, Value y) { return select(x, x, y); }
};

} // namespace mlir::dsc

#endif // DSC_LIB_TRANSFORMS_STEPBUILDER_H
