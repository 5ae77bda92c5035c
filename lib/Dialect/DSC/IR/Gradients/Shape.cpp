//===- Shape.cpp - gradients of shape manipulation -------------------------===//

#include "GradientRules.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::grad;

static LogicalResult reshapeGrad(ReshapeOp op, Gradient &g) {
  g.set(0, ReshapeOp::create(g.b, g.loc, op.getInput().getType(), g.dy()));
  return success();
}

static LogicalResult transposeGrad(TransposeOp op, Gradient &g) {
  g.set(0, TransposeOp::create(g.b, g.loc, g.dy(), op.getDim0(), op.getDim1()));
  return success();
}

static LogicalResult permuteGrad(PermuteOp op, Gradient &g) {
  ArrayRef<int64_t> perm = op.getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = int64_t(i);
  g.set(0, PermuteOp::create(g.b, g.loc, g.dy(), inverse));
  return success();
}

static LogicalResult broadcastGrad(BroadcastOp op, Gradient &g) {
  g.set(0, sumToShape(g.b, g.loc, g.dy(), tensorType(op.getInput()).getShape()));
  return success();
}

static LogicalResult concatGrad(ConcatOp op, Gradient &g) {
  int64_t dim = op.getDim(), start = 0;
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    int64_t size = tensorType(input).getDimSize(dim);
    if (g.active(i))
      g.set(i, SliceOp::create(g.b, g.loc, g.dy(), dim, start, start + size, 1));
    start += size;
  }
  return success();
}

static LogicalResult sliceGrad(SliceOp op, Gradient &g) {
  // The cotangent padded with zeros before and after the slice.
  if (op.getStep() != 1)
    return op.emitOpError("has no gradient with step ")
           << op.getStep() << " (only step 1 is differentiable)";
  RankedTensorType type = tensorType(op.getInput());
  int64_t dim = op.getDim(), start = op.getStart(), end = op.getEnd();
  auto pad = [&](int64_t size) {
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] = size;
    return zeros(g.b, g.loc, RankedTensorType::get(shape, type.getElementType()));
  };
  SmallVector<Value> parts;
  if (start > 0)
    parts.push_back(pad(start));
  parts.push_back(g.dy());
  if (end < type.getDimSize(dim))
    parts.push_back(pad(type.getDimSize(dim) - end));
  g.set(0, parts.size() == 1 ? parts[0]
                             : ConcatOp::create(g.b, g.loc, parts, dim).getResult());
  return success();
}

void grad::registerShapeGradients(MLIRContext *context) {
  attach<ReshapeOp, reshapeGrad>(context);
  attach<TransposeOp, transposeGrad>(context);
  attach<PermuteOp, permuteGrad>(context);
  attach<BroadcastOp, broadcastGrad>(context);
  attach<ConcatOp, concatGrad>(context);
  attach<SliceOp, sliceGrad>(context);
}
