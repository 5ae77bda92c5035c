//===- SequenceParallel.h - Megatron's sequence parallelism -----*- C++ -*-===//
//
// The part of --dsc-tensor-parallel that, with `sequence-parallel`, holds
// the activations between the split blocks split along the sequence over
// the tensor group (Megatron-LM's --sequence-parallel): each block's sum of
// partial products becomes a reduce-scatter of the sequence, its input an
// all-gather of it, and the token-wise work between the blocks (norms,
// residual adds, biases) runs on the rank's 1/T of the tokens.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_TRANSFORMS_SEQUENCEPARALLEL_H
#define DSC_LIB_TRANSFORMS_SEQUENCEPARALLEL_H

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::dsc {
/// The ops by which --dsc-tensor-parallel split one block: the f on its
/// input and the g on its output.
struct SplitBlockEnds {
  ReplicateOp input;
  AllReduceOp output;
};

/// Splits the sequence of `func`'s activations between the blocks `ends`
/// over the `ranks` ranks of a tensor group. The sequence is the second
/// dimension of the function's inputs ([batch, seq, ...]); the activations
/// are [batch, seq, ...] or [batch * seq, ...]. `embeddingSums` are the
/// sums over the tensor group of vocabulary-parallel lookups: each whose
/// readers all work token by token becomes a reduce-scatter along the
/// sequence, where the region then begins. Emits a located error and fails
/// where the sequence does not divide over the ranks.
LogicalResult splitSequence(func::FuncOp func, ArrayRef<SplitBlockEnds> ends,
                            ArrayRef<AllReduceOp> embeddingSums,
                            int64_t ranks);

/// Makes `dropout`, whose input has become this rank's part of each sample
/// of the whole input (the r-th of `ranks` equal contiguous parts, r the
/// rank's index in the tensor group), draw that part of the whole input's
/// mask: `part %r of ranks`, %r taken at the function's entry.
void drawTensorPart(DropoutOp dropout, int64_t ranks);
} // namespace mlir::dsc

#endif // DSC_LIB_TRANSFORMS_SEQUENCEPARALLEL_H
