//===- Normalization.cpp - gradients of norms, softmax and masks -----------===//

#include "GradientRules.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::grad;

static LogicalResult layerNormGrad(LayerNormOp op, Gradient &g) {
  // Recomputes the normalized input xhat = (x - mean) * rstd, then
  //   dxhat = dy * weight,
  //   dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)),
  //   dweight = sum(dy * xhat), dbias = sum(dy) over the leading dimensions.
  OpBuilder &b = g.b;
  Location loc = g.loc;
  Value x = op.getInput(), dy = g.dy();
  RankedTensorType type = tensorType(x);
  Type elem = type.getElementType();
  SmallVector<int64_t> dims;
  for (int64_t d = type.getRank() - op.getNormalizedRank(); d < type.getRank(); ++d)
    dims.push_back(d);
  auto mean = [&](Value v) -> Value {
    return ReduceMeanOp::create(b, loc, v, dims, /*keep_dims=*/true);
  };
  Value xc = SubOp::create(b, loc, x, mean(x));
  Value var = mean(MulOp::create(b, loc, xc, xc));
  Value eps = scalar(b, loc, elem, op.getEpsilon().convertToDouble());
  Value rstd = RsqrtOp::create(b, loc, AddOp::create(b, loc, var, eps));
  Value xhat = MulOp::create(b, loc, xc, rstd);

  unsigned next = 1;
  int weightIndex = op.getWeight() ? int(next++) : -1;
  int biasIndex = op.getBias() ? int(next++) : -1;
  if (g.active(0)) {
    Value dxhat = op.getWeight() ? MulOp::create(b, loc, dy, op.getWeight()).getResult()
                                 : dy;
    Value t = SubOp::create(b, loc, dxhat, mean(dxhat));
    t = SubOp::create(b, loc, t,
                      MulOp::create(b, loc, xhat,
                                    mean(MulOp::create(b, loc, dxhat, xhat))));
    g.set(0, MulOp::create(b, loc, rstd, t));
  }
  if (weightIndex >= 0 && g.active(weightIndex))
    g.set(weightIndex, sumToShape(b, loc, MulOp::create(b, loc, dy, xhat),
                                  tensorType(op.getWeight()).getShape()));
  if (biasIndex >= 0 && g.active(biasIndex))
    g.set(biasIndex, sumToShape(b, loc, dy, tensorType(op.getBias()).getShape()));
  return success();
}

static LogicalResult softmaxGrad(SoftmaxOp op, Gradient &g) {
  // dx = (dy - sum(dy * y)) * y along dim
  Value y = op.getResult(), dy = g.dy();
  int64_t dim = op.getDim();
  Value s = ReduceSumOp::create(g.b, g.loc, MulOp::create(g.b, g.loc, dy, y),
                                ArrayRef<int64_t>{dim}, /*keep_dims=*/true);
  g.set(0, MulOp::create(g.b, g.loc, SubOp::create(g.b, g.loc, dy, s), y));
  return success();
}

static LogicalResult logSoftmaxGrad(LogSoftmaxOp op, Gradient &g) {
  // dx = dy - exp(y) * sum(dy) along dim
  Value y = op.getResult(), dy = g.dy();
  int64_t dim = op.getDim();
  Value s = ReduceSumOp::create(g.b, g.loc, dy, ArrayRef<int64_t>{dim},
                                /*keep_dims=*/true);
  g.set(0, SubOp::create(g.b, g.loc, dy,
                         MulOp::create(g.b, g.loc, ExpOp::create(g.b, g.loc, y), s)));
  return success();
}

static LogicalResult causalMaskGrad(CausalMaskOp op, Gradient &g) {
  // Masked positions are constants: their cotangent is dropped.
  g.set(0, CausalMaskOp::create(g.b, g.loc, g.dy(), g.b.getF64FloatAttr(0.0)));
  return success();
}

void grad::registerNormalizationGradients(MLIRContext *context) {
  attach<LayerNormOp, layerNormGrad>(context);
  attach<SoftmaxOp, softmaxGrad>(context);
  attach<LogSoftmaxOp, logSoftmaxGrad>(context);
  attach<CausalMaskOp, causalMaskGrad>(context);
}
