//===- Recomputation.h - marks of activation checkpointing's clones -------===//
//
// Activation checkpointing clones forward ops into the backward; the
// pipeline schedule must tell those clones from the forward ops they copy.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_TRANSFORMS_RECOMPUTATION_H
#define DSC_LIB_TRANSFORMS_RECOMPUTATION_H

#include "llvm/ADT/StringRef.h"

namespace mlir::dsc {
/// Marks the clones that activation checkpointing places in the backward,
/// which also keeps --cse from folding them back into the forward ops they
/// repeat. A clone of a pipeline stage's forward op keeps its
/// `dsc.micro_batch` but runs in that micro-batch's backward: the schedule
/// reads this mark.
constexpr llvm::StringLiteral kRecomputedAttrName = "dsc.recomputed";
} // namespace mlir::dsc

#endif // DSC_LIB_TRANSFORMS_RECOMPUTATION_H
