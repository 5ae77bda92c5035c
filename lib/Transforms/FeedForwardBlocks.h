//===- FeedForwardBlocks.h - dense feed-forward blocks, by structure -*- C++ -*-===//
//
// The rewrites that replace or split a model's feed-forward blocks (mixture
// of experts, tensor parallelism) find them by their structure, not by
// names: a linear map whose input is an elementwise chain of one or two
// linear maps of one value, every weight and bias a parameter.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_TRANSFORMS_FEEDFORWARDBLOCKS_H
#define DSC_LIB_TRANSFORMS_FEEDFORWARDBLOCKS_H

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/SetVector.h"

#include <optional>

namespace mlir::dsc {

/// The ranked tensor type of a dsc value (every dsc value has one).
inline RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// A dense feed-forward block: the linear maps that read its input (one, or
/// two for a gated unit such as SwiGLU), the elementwise chain after them
/// and the linear map that ends it.
struct FeedForward {
  Value input;
  SmallVector<LinearOp, 2> first;
  llvm::SetVector<Operation *> chain;
  LinearOp last;
};

/// The state a value loads, when it is a load of a parameter.
StateOp parameterLoaded(Value v, SymbolTable &symbols);

/// A linear map whose weight (and bias, if any) are parameters.
bool isParameterLinear(LinearOp linear, SymbolTable &symbols);

/// The feed-forward block `last` ends, if it ends one: its input is an
/// elementwise chain (reshapes and activations, used by nothing else) of
/// one or two parameter linear maps of one value x, and its output is as
/// wide as x.
std::optional<FeedForward> matchFeedForward(LinearOp last,
                                            SymbolTable &symbols);

} // namespace mlir::dsc

#endif // DSC_LIB_TRANSFORMS_FEEDFORWARDBLOCKS_H
