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
  //
  // In a 16-bit type the chain runs in f32, its results rounded once, as
  // PyTorch's layer_norm backward accumulates in float for bf16 and f16:
  // xhat and the products rounded to 8 or 11 bits before the reductions
  // over the tokens and the features would carry several units of noise in
  // the last place into every gradient, which PyTorch's does not.
  OpBuilder &b = g.b;
  Location loc = g.loc;
  Value x = op.getInput(), dy = g.dy(), weight = op.getWeight();
  RankedTensorType type = tensorType(x);
  Type narrow = type.getElementType();
  bool widen = narrow.isBF16() || narrow.isF16();
  auto toF32 = [&](Value v) -> Value {
    if (!widen || !v)
      return v;
    return ConvertOp::create(b, loc, tensorType(v).clone(b.getF32Type()), v);
  };
  auto rounded = [&](Value v) -> Value {
    if (!widen)
      return v;
    return ConvertOp::create(b, loc, tensorType(v).clone(narrow), v);
  };
  x = toF32(x);
  dy = toF32(dy);
  weight = toF32(weight);
  type = tensorType(x);
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
    Value dxhat = weight ? MulOp::create(b, loc, dy, weight).getResult() : dy;
    Value t = SubOp::create(b, loc, dxhat, mean(dxhat));
    t = SubOp::create(b, loc, t,
                      MulOp::create(b, loc, xhat,
                                    mean(MulOp::create(b, loc, dxhat, xhat))));
    g.set(0, rounded(MulOp::create(b, loc, rstd, t)));
  }
  if (weightIndex >= 0 && g.active(weightIndex))
    g.set(weightIndex,
          rounded(sumToShape(b, loc, MulOp::create(b, loc, dy, xhat),
                             tensorType(weight).getShape())));
  if (biasIndex >= 0 && g.active(biasIndex))
    g.set(biasIndex, rounded(sumToShape(b, loc, dy,
                                        tensorType(op.getBias()).getShape())));
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
