//===- Linalg.cpp - gradients of matmul and linear -------------------------===//

#include "GradientRules.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::grad;

static LogicalResult matmulGrad(MatmulOp op, Gradient &g) {
  // C = A' B' with A' = A or A^T, B' = B or B^T:
  // dA' = dC B'^T and dB' = A'^T dC, transposed back where the operand was.
  // Both products have C's batch; sumToShape undoes the batch broadcast.
  Value a = op.getLhs(), b = op.getRhs(), dc = g.dy();
  bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
  if (g.active(0)) {
    Value da = ta ? MatmulOp::create(g.b, g.loc, b, dc, tb, true)
                  : MatmulOp::create(g.b, g.loc, dc, b, false, !tb);
    g.set(0, sumToShape(g.b, g.loc, da, tensorType(a).getShape()));
  }
  if (g.active(1)) {
    Value db = tb ? MatmulOp::create(g.b, g.loc, dc, a, true, ta)
                  : MatmulOp::create(g.b, g.loc, a, dc, !ta, false);
    g.set(1, sumToShape(g.b, g.loc, db, tensorType(b).getShape()));
  }
  return success();
}

static LogicalResult linearGrad(LinearOp op, Gradient &g) {
  // y[M, out] = x[M, in] W[out, in]^T + b, with M every leading dimension.
  RankedTensorType xType = tensorType(op.getInput());
  RankedTensorType wType = tensorType(op.getWeight());
  int64_t in = wType.getDimSize(1), out = wType.getDimSize(0);
  int64_t rows = xType.getNumElements() / in;
  Type elem = xType.getElementType();
  auto flat = [&](Value v, int64_t cols) -> Value {
    auto type = RankedTensorType::get({rows, cols}, elem);
    return tensorType(v) == type ? v : ReshapeOp::create(g.b, g.loc, type, v);
  };
  Value dy = flat(g.dy(), out);
  if (g.active(0)) {
    Value dx = MatmulOp::create(g.b, g.loc, dy, op.getWeight());
    g.set(0, tensorType(dx) == xType ? dx : ReshapeOp::create(g.b, g.loc, xType, dx));
  }
  if (g.active(1))
    g.set(1, MatmulOp::create(g.b, g.loc, dy, flat(op.getInput(), in),
                              /*transpose_lhs=*/true));
  if (op.getBias() && g.active(2))
    g.set(2, ReduceSumOp::create(g.b, g.loc, dy, ArrayRef<int64_t>{0}));
  return success();
}

void grad::registerLinalgGradients(MLIRContext *context) {
  attach<MatmulOp, matmulGrad>(context);
  attach<LinearOp, linearGrad>(context);
}
