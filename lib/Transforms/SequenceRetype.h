//===- SequenceRetype.h - a graph's ops at a shorter sequence ---*- C++ -*-===//
//
// Curriculum learning runs the whole forward graph on the first S tokens of
// each sequence; random-LTD runs chosen blocks on K of them. Both are the
// same rewrite: clone the ops that read the sequence with the sequence
// dimension shortened, deriving every result type from the new operands.
// The exported graph has no symbolic dimensions, so the sequence dimension
// is followed by data flow from the values the caller shortens, not found
// by its size: inferred types where an op infers them, the reshape rule
// below where it does not.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_TRANSFORMS_SEQUENCERETYPE_H
#define DSC_LIB_TRANSFORMS_SEQUENCERETYPE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::dsc {

/// Makes `operand`, a value the sequence does not flow into (a position
/// table, a mask buffer), fit `user`, an elementwise op whose other operands
/// were shortened: a value of `shape` (the operand's own rank), or a
/// diagnostic and failure.
using FitOperand = llvm::function_ref<FailureOr<Value>(
    OpBuilder &, Operation *user, Value operand, ArrayRef<int64_t> shape)>;

class SequenceRetyper {
public:
  explicit SequenceRetyper(FitOperand fit) : fit(fit) {}

  /// `full` is replaced by `shortened` in the ops retype() clones.
  void map(Value full, Value shortened) { mapping.map(full, shortened); }
  /// The shortened counterpart of `full`, or null.
  Value lookup(Value full) const { return mapping.lookupOrNull(full); }

  /// When `op` reads a shortened value: clones it before itself with the
  /// shortened operands and the result types they give, maps its results to
  /// the clone's, and returns the clone. Otherwise returns null (the op
  /// stays as it is). Fails with a diagnostic on `op` when a result type
  /// cannot be derived.
  FailureOr<Operation *> retype(Operation *op);

private:
  FailureOr<SmallVector<Type>> resultTypes(Operation *op, Operation *clone);

  FitOperand fit;
  IRMapping mapping;
};

/// The result shape of a reshape from `from` to `to` when its input becomes
/// `newFrom` (dimensions of `from` changed in size, the others kept): each
/// changed input dimension scales the output dimension that holds it, or
/// the last dimension of those it is split into. Nothing when no output
/// dimension holds it whole.
std::optional<SmallVector<int64_t>> reshapeForLength(ArrayRef<int64_t> from,
                                                     ArrayRef<int64_t> newFrom,
                                                     ArrayRef<int64_t> to);

} // namespace mlir::dsc

#endif // DSC_LIB_TRANSFORMS_SEQUENCERETYPE_H
