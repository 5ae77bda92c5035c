//===- Reduction.cpp - gradients of reductions and prefix sums -------------===//

#include "GradientRules.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::grad;

/// The cotangent of a reduction's result, with the reduced dimensions back
/// as size 1 so it broadcasts against the input.
template <typename OpT>
static Value restored(OpT op, Gradient &g, Value v) {
  ArrayRef<int64_t> shape = tensorType(op.getInput()).getShape();
  return keepDims(g.b, g.loc, v, shape, op.getDims());
}

static LogicalResult reduceSumGrad(ReduceSumOp op, Gradient &g) {
  g.set(0, broadcastTo(g.b, g.loc, restored(op, g, g.dy()),
                       tensorType(op.getInput())));
  return success();
}

static LogicalResult reduceMeanGrad(ReduceMeanOp op, Gradient &g) {
  RankedTensorType type = tensorType(op.getInput());
  int64_t count = 1;
  for (int64_t d : op.getDims())
    count *= type.getDimSize(d);
  Value n = scalar(g.b, g.loc, type.getElementType(), double(count));
  g.set(0, DivOp::create(g.b, g.loc,
                         broadcastTo(g.b, g.loc, restored(op, g, g.dy()), type), n));
  return success();
}

static LogicalResult reduceMaxGrad(ReduceMaxOp op, Gradient &g) {
  // torch.amax: the cotangent is split evenly among the elements that equal
  // the maximum.
  RankedTensorType type = tensorType(op.getInput());
  Value isMax = CompareOp::create(g.b, g.loc, ComparisonDirection::eq,
                                  op.getInput(), restored(op, g, op.getResult()));
  Value mask = toFloat(g.b, g.loc, isMax, type.getElementType());
  Value count = ReduceSumOp::create(g.b, g.loc, mask, op.getDims(), /*keep_dims=*/true);
  Value share = DivOp::create(g.b, g.loc, restored(op, g, g.dy()), count);
  g.set(0, MulOp::create(g.b, g.loc, share, mask));
  return success();
}

/// `v` reversed along `dim`: a gather with indices size-1, ..., 0.
static Value flip(OpBuilder &b, Location loc, Value v, int64_t dim) {
  RankedTensorType type = tensorType(v);
  int64_t n = type.getDimSize(dim);
  SmallVector<int64_t> reversed;
  for (int64_t i = n - 1; i >= 0; --i)
    reversed.push_back(i);
  SmallVector<int64_t> shape(type.getRank(), 1);
  shape[dim] = n;
  auto indexType = RankedTensorType::get(shape, b.getI64Type());
  Value index = ConstantOp::create(
      b, loc, DenseElementsAttr::get(indexType, ArrayRef<int64_t>(reversed)));
  index = broadcastTo(b, loc, index,
                      RankedTensorType::get(type.getShape(), b.getI64Type()));
  return GatherOp::create(b, loc, v, index, dim);
}

static LogicalResult cumsumGrad(CumsumOp op, Gradient &g) {
  // The suffix sum of the cotangent: flip, prefix-sum, flip (as PyTorch).
  int64_t dim = op.getDim();
  Value reversed = CumsumOp::create(g.b, g.loc, flip(g.b, g.loc, g.dy(), dim), dim);
  g.set(0, flip(g.b, g.loc, reversed, dim));
  return success();
}

void grad::registerReductionGradients(MLIRContext *context) {
  attach<ReduceSumOp, reduceSumGrad>(context);
  attach<ReduceMeanOp, reduceMeanGrad>(context);
  attach<ReduceMaxOp, reduceMaxGrad>(context);
  attach<CumsumOp, cumsumGrad>(context);
}
