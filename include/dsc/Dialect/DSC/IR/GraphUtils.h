//===- GraphUtils.h - queries over a dsc graph ------------------*- C++ -*-===//
//
// Questions that passes and the lowering ask of a graph in the same way, kept
// with the dialect so that no pass depends on another's headers.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_DIALECT_DSC_IR_GRAPHUTILS_H
#define DSC_DIALECT_DSC_IR_GRAPHUTILS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Operation.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::dsc {

/// The last op, in block order, of those that compute `values` and what
/// they depend on (each op counted at `placed(op)`, e.g. where its fused
/// kernel is emitted); null when no op computes them. Everything after it
/// is work the values do not need: the backward pass and the optimizer,
/// after a training graph's loss.
Operation *lastProducer(ValueRange values,
                        llvm::function_ref<Operation *(Operation *)> placed);

/// The index of `func`'s result named `name` (its `dsc.output`), if any.
std::optional<unsigned> findOutput(func::FuncOp func, StringRef name);

/// Appends `value` to `func`'s results (returned by `ret`) as output `name`.
LogicalResult appendOutput(func::FuncOp func, func::ReturnOp ret, Value value,
                           StringRef name);

/// The micro-batch of `func`: the leading dimension of its first graph
/// input (`dsc.input`; every input's leading dimension is the micro-batch),
/// if it has one.
std::optional<int64_t> microBatchOf(func::FuncOp func);

/// `func`'s dsc.step_key without a sample offset, at the start of its body
/// (moved there, or created when it has none), so that it dominates any op
/// of the body.
Value stepKeyOf(func::FuncOp func);

/// What the lowering assumes of a graph function, checked so that bad
/// input is a diagnostic: one block, statically shaped tensors in and out.
LogicalResult verifyLowerableGraph(func::FuncOp graph);

} // namespace mlir::dsc

#endif // DSC_DIALECT_DSC_IR_GRAPHUTILS_H
