//===- GradientRules.h - helpers of the gradient rules ----------*- C++ -*-===//
//
// The rules of GradientOpInterface live in one file per op family
// (Elementwise, Linalg, Normalization, Shape, Indexing, Loss, Attention,
// Moe). Each is a function `LogicalResult rule(OpT, Gradient &)` attached
// to its op as an external model by the dialect's initialize(). Rules build their results
// with dsc ops only, so the lowering, fusion and emitters handle backward
// graphs like forward ones.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_DIALECT_DSC_IR_GRADIENTS_GRADIENTRULES_H
#define DSC_LIB_DIALECT_DSC_IR_GRADIENTS_GRADIENTRULES_H

#include "dsc/Dialect/DSC/IR/DSCInterfaces.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"

namespace mlir::dsc::grad {

/// What a rule reads and writes: the builder, the results' cotangents, and
/// the operands that want one.
struct Gradient {
  OpBuilder &b;
  Location loc;
  ArrayRef<Value> resultCotangents;
  ArrayRef<bool> activeOperands;
  SmallVectorImpl<Value> &operandCotangents;

  /// The cotangent of result `i` (null when it has none).
  Value dy(unsigned i = 0) const { return resultCotangents[i]; }
  bool active(unsigned i) const { return activeOperands[i]; }
  /// Sets operand `i`'s cotangent when it is active.
  void set(unsigned i, Value cotangent) {
    if (activeOperands[i])
      operandCotangents[i] = cotangent;
  }
};

template <typename OpT, LogicalResult (*Rule)(OpT, Gradient &)>
struct GradientModel
    : GradientOpInterface::ExternalModel<GradientModel<OpT, Rule>, OpT> {
  LogicalResult buildOperandCotangents(Operation *op, OpBuilder &builder,
                                       ArrayRef<Value> resultCotangents,
                                       ArrayRef<bool> activeOperands,
                                       SmallVectorImpl<Value> &cotangents) const {
    Gradient g{builder, op->getLoc(), resultCotangents, activeOperands,
               cotangents};
    return Rule(cast<OpT>(op), g);
  }
};

/// Attaches `Rule` to `OpT` as its GradientOpInterface.
template <typename OpT, LogicalResult (*Rule)(OpT, Gradient &)>
void attach(MLIRContext *context) {
  OpT::template attachInterface<GradientModel<OpT, Rule>>(*context);
}

// One registration function per family file.
void registerElementwiseGradients(MLIRContext *context);
void registerLinalgGradients(MLIRContext *context);
void registerNormalizationGradients(MLIRContext *context);
void registerShapeGradients(MLIRContext *context);
void registerReductionGradients(MLIRContext *context);
void registerIndexingGradients(MLIRContext *context);
void registerLossGradients(MLIRContext *context);
void registerAttentionGradients(MLIRContext *context);
void registerMoeGradients(MLIRContext *context);

// --- building blocks ------------------------------------------------------

RankedTensorType tensorType(Value v);

/// A rank-0 constant `value` of `elementType`.
Value scalar(OpBuilder &b, Location loc, Type elementType, double value);

/// A zero tensor of `type` (a scalar broadcast: no large constant).
Value zeros(OpBuilder &b, Location loc, RankedTensorType type);

/// `v` broadcast to `type` (v's shape broadcasts to it by NumPy rules).
Value broadcastTo(OpBuilder &b, Location loc, Value v, RankedTensorType type);

/// The adjoint of a NumPy broadcast of a `shape`-shaped tensor to v's shape:
/// sums v over the leading dimensions `shape` lacks and over those where
/// `shape` is 1, then reshapes to `shape`. `v` itself when shapes match.
Value sumToShape(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape);

/// `condition` (i1) as 0/1 of `elementType`.
Value toFloat(OpBuilder &b, Location loc, Value condition, Type elementType);

/// `v` with size-1 dimensions inserted at `dims` (the reduced dimensions of
/// a reduction without keep_dims), so it broadcasts against the input.
Value keepDims(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> inputShape,
               ArrayRef<int64_t> dims);

} // namespace mlir::dsc::grad

#endif // DSC_LIB_DIALECT_DSC_IR_GRADIENTS_GRADIENTRULES_H
