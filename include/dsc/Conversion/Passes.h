//===- Passes.h - dsc conversion passes -------------------------*- C++ -*-===//

#ifndef DSC_CONVERSION_PASSES_H
#define DSC_CONVERSION_PASSES_H

#include "dsc/Dialect/DSCRT/IR/DSCRTDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dsc {

#define GEN_PASS_DECL
#include "dsc/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dsc/Conversion/Passes.h.inc"

/// Elementwise dsc ops: one output element from the operand elements at the
/// same (broadcast) position. The lowering fuses chains of them.
bool isElementwise(Operation *op);

/// The last op, in block order, of those that compute `values` and what
/// they depend on (each op counted at `placed(op)`, e.g. where its fused
/// kernel is emitted); null when no op computes them. Everything after it
/// is work the values do not need: the backward pass and the optimizer,
/// after a training graph's loss.
Operation *lastProducer(ValueRange values,
                        llvm::function_ref<Operation *(Operation *)> placed);

} // namespace mlir::dsc

#endif // DSC_CONVERSION_PASSES_H
