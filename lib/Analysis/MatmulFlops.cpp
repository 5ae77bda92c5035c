//===- MatmulFlops.cpp - the FLOPs of a graph's matrix products -----------===//

#include "dsc/Analysis/MatmulFlops.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dsc;

static double numel(Value v) {
  return double(cast<RankedTensorType>(v.getType()).getNumElements());
}

static int64_t dim(Value v, int64_t fromEnd) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getDimSize(type.getRank() - fromEnd);
}

/// Attention over `q` [.., T, D] and `k` [.., S, D] with values of width
/// Dv: `perQk` products of width D and `perV` of width Dv per (query, key)
/// pair, two FLOPs per multiply-add.
static double attentionFlops(Value q, Value k, Value v, int perQk, int perV) {
  return 2 * numel(q) / double(dim(q, 1)) * double(dim(k, 2)) *
         double(perQk * dim(q, 1) + perV * dim(v, 1));
}

double mlir::dsc::matmulFlops(Operation *root) {
  double flops = 0;
  root->walk([&](Operation *op) {
    flops += llvm::TypeSwitch<Operation *, double>(op)
                 .Case([](LinearOp l) {
                   return 2 * numel(l.getInput()) * double(dim(l.getWeight(), 2));
                 })
                 .Case([](MatmulOp m) {
                   int64_t k = m.getTransposeLhs() ? dim(m.getLhs(), 2)
                                                   : dim(m.getLhs(), 1);
                   return 2 * numel(m.getResult()) * double(k);
                 })
                 // QK^T and PV.
                 .Case([](AttentionOp a) {
                   return attentionFlops(a.getQuery(), a.getKey(), a.getValue(), 1, 1);
                 })
                 // The backward recomputes QK^T and forms dQ and dK (width
                 // D), dP and dV (width Dv).
                 .Case([](AttentionGradOp a) {
                   return attentionFlops(a.getQuery(), a.getKey(), a.getValue(), 3, 2);
                 })
                 .Default(0.0);
  });
  return flops;
}
