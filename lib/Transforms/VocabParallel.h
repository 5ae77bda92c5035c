//===- VocabParallel.h - vocabulary-parallel embedding and loss -*- C++ -*-===//
//
// The part of --dsc-tensor-parallel that splits the token embedding, the head
// and the cross-entropy by vocabulary rows (Megatron's VocabParallelEmbedding
// and vocab_parallel_cross_entropy).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_TRANSFORMS_VOCABPARALLEL_H
#define DSC_LIB_TRANSFORMS_VOCABPARALLEL_H

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::dsc {

/// Splits every cross-entropy of `module`, the head whose logits it reads,
/// and the token embeddings of the head's table (or of a table as large)
/// over the `ranks` ranks of a tensor group. Emits a located error and
/// fails where a cross-entropy cannot be split. Each split lookup's sum of
/// the ranks' partial rows over the tensor group is appended to
/// `embeddingSums` (sequence parallelism makes it a reduce-scatter).
LogicalResult splitVocabulary(ModuleOp module, int64_t ranks,
                              SmallVectorImpl<AllReduceOp> &embeddingSums);

/// r · `stride` as a tensor<1x`elem`>, r this rank's index in its tensor
/// group of `ranks`: the local shard over `tensor` of the constant [0,
/// stride, ..., (ranks - 1) · stride] at `func`'s entry, made there once
/// (a later call finds it): the only rank-dependent value the tensor
/// rewrites read (a vocabulary slice's first row, a dropout's part).
Value tensorRankTimes(func::FuncOp func, int64_t ranks, int64_t stride,
                      Type elem);

} // namespace mlir::dsc

#endif // DSC_LIB_TRANSFORMS_VOCABPARALLEL_H
