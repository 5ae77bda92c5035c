//===- VocabParallel.h - vocabulary-parallel embedding and loss -*- C++ -*-===//
//
// The part of --dsc-tensor-parallel that splits the token embedding, the head
// and the cross-entropy by vocabulary rows (Megatron's VocabParallelEmbedding
// and vocab_parallel_cross_entropy).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_TRANSFORMS_VOCABPARALLEL_H
#define DSC_LIB_TRANSFORMS_VOCABPARALLEL_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir::dsc {

/// Splits every cross-entropy of `module`, the head whose logits it reads,
/// and the token embeddings of the head's table (or of a table as large)
/// over the `ranks` ranks of a tensor group. Emits a located error and
/// fails where a cross-entropy cannot be split.
LogicalResult splitVocabulary(ModuleOp module, int64_t ranks);

} // namespace mlir::dsc

#endif // DSC_LIB_TRANSFORMS_VOCABPARALLEL_H
