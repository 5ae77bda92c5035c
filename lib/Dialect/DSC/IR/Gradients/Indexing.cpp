//===- Indexing.cpp - gradients of lookups, gathers and scatters -----------===//
//
// The adjoint of reading at indices is adding at the same indices: gathers
// become scatter-adds into zeros and scatter-adds become gathers. Indices
// themselves are integers and never have a cotangent.
//
//===----------------------------------------------------------------------===//

#include "GradientRules.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::grad;

static LogicalResult embeddingGrad(EmbeddingOp op, Gradient &g) {
  // Row i of the table receives the sum of the output rows that read it;
  // the padding row receives nothing (torch.nn.Embedding's padding_idx).
  RankedTensorType table = tensorType(op.getTable());
  RankedTensorType indices = tensorType(op.getIndices());
  int64_t rows = indices.getNumElements(), width = table.getDimSize(1);
  Type elem = table.getElementType(), indexElem = indices.getElementType();
  Value column = ReshapeOp::create(
      g.b, g.loc, RankedTensorType::get({rows, 1}, indexElem), op.getIndices());
  Value dy = ReshapeOp::create(g.b, g.loc, RankedTensorType::get({rows, width}, elem),
                               g.dy());
  if (auto padding = op.getPaddingIdx()) {
    Value isPadding =
        CompareOp::create(g.b, g.loc, ComparisonDirection::eq, column,
                          scalar(g.b, g.loc, indexElem, double(int64_t(*padding))));
    dy = SelectOp::create(g.b, g.loc, isPadding, scalar(g.b, g.loc, elem, 0.0), dy);
  }
  Value index = broadcastTo(g.b, g.loc, column,
                            RankedTensorType::get({rows, width}, indexElem));
  g.set(0, ScatterAddOp::create(g.b, g.loc, zeros(g.b, g.loc, table), index, dy, 0));
  return success();
}

static LogicalResult gatherGrad(GatherOp op, Gradient &g) {
  g.set(0, ScatterAddOp::create(g.b, g.loc, zeros(g.b, g.loc, tensorType(op.getInput())),
                                op.getIndex(), g.dy(), op.getDim()));
  return success();
}

static LogicalResult scatterAddGrad(ScatterAddOp op, Gradient &g) {
  g.set(0, g.dy());
  if (!g.active(2))
    return success();
  // src[p] was added at the index: it reads the cotangent there. Positions
  // of src beyond the index's extent were not added anywhere: zero.
  Value dsrc = GatherOp::create(g.b, g.loc, g.dy(), op.getIndex(), op.getDim());
  RankedTensorType src = tensorType(op.getSrc());
  for (int64_t d = 0; d < src.getRank(); ++d) {
    SmallVector<int64_t> shape(tensorType(dsrc).getShape());
    if (shape[d] == src.getDimSize(d))
      continue;
    shape[d] = src.getDimSize(d) - shape[d];
    Value pad = zeros(g.b, g.loc, RankedTensorType::get(shape, src.getElementType()));
    dsrc = ConcatOp::create(g.b, g.loc, ValueRange{dsrc, pad}, d);
  }
  g.set(2, dsrc);
  return success();
}

static LogicalResult topKGrad(TopKOp op, Gradient &g) {
  // Only the values are differentiable; each goes back to where it was
  // picked from.
  if (!g.dy(0))
    return success();
  g.set(0, ScatterAddOp::create(g.b, g.loc, zeros(g.b, g.loc, tensorType(op.getInput())),
                                op.getIndices(), g.dy(0), op.getDim()));
  return success();
}

void grad::registerIndexingGradients(MLIRContext *context) {
  attach<EmbeddingOp, embeddingGrad>(context);
  attach<GatherOp, gatherGrad>(context);
  attach<ScatterAddOp, scatterAddGrad>(context);
  attach<TopKOp, topKGrad>(context);
}
