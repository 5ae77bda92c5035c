//===- DSCDialect.cpp - the dsc dialect ------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "Gradients/GradientRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::dsc;

#include "dsc/Dialect/DSC/IR/DSCEnums.cpp.inc"
#include "dsc/Dialect/DSC/IR/DSCOpsDialect.cpp.inc"

#define GET_OP_CLASSES
#include "dsc/Dialect/DSC/IR/DSCOps.cpp.inc"

void DSCDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dsc/Dialect/DSC/IR/DSCOps.cpp.inc"
      >();
  // Every differentiable op's GradientOpInterface (Gradients/).
  MLIRContext *context = getContext();
  grad::registerElementwiseGradients(context);
  grad::registerLinalgGradients(context);
  grad::registerNormalizationGradients(context);
  grad::registerShapeGradients(context);
  grad::registerReductionGradients(context);
  grad::registerIndexingGradients(context);
  grad::registerLossGradients(context);
  grad::registerAttentionGradients(context);
  grad::registerMoeGradients(context);
}

Operation *DSCDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}

/// `dsc.input` / `dsc.output` name a graph input or output: a non-empty
/// string, unique among the function's arguments (resp. results), because the
/// runtime feeds inputs and reports outputs by these names.
static LogicalResult verifyIONameAttr(Operation *op, unsigned index,
                                      NamedAttribute attr, bool isInput) {
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (!name || name.getValue().empty())
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' must be a non-empty string, got "
                           << attr.getValue();
  // Argument and result attributes exist only on function-like ops.
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return success();
  unsigned count = isInput ? func.getNumArguments() : func.getNumResults();
  for (unsigned other = 0; other < index && other < count; ++other) {
    Attribute otherName =
        isInput ? func.getArgAttr(other, attr.getName())
                : func.getResultAttr(other, attr.getName());
    if (otherName == name)
      return op->emitError() << "graph " << (isInput ? "input" : "output")
                             << " name " << name << " is used by "
                             << (isInput ? "arguments " : "results ") << other
                             << " and " << index;
  }
  return success();
}

LogicalResult DSCDialect::verifyRegionArgAttribute(Operation *op,
                                                   unsigned regionIndex,
                                                   unsigned argIndex,
                                                   NamedAttribute attr) {
  if (attr.getName() == kInputAttrName)
    return verifyIONameAttr(op, argIndex, attr, /*isInput=*/true);
  return op->emitError() << "unknown dsc argument attribute '"
                         << attr.getName().getValue() << "'";
}

LogicalResult DSCDialect::verifyRegionResultAttribute(Operation *op,
                                                      unsigned regionIndex,
                                                      unsigned resultIndex,
                                                      NamedAttribute attr) {
  if (attr.getName() == kOutputAttrName)
    return verifyIONameAttr(op, resultIndex, attr, /*isInput=*/false);
  if (attr.getName() == kGradientOfAttrName) {
    if (!isa<FlatSymbolRefAttr>(attr.getValue()))
      return op->emitError() << "'" << kGradientOfAttrName.str()
                             << "' must name a dsc.state, got " << attr.getValue();
    return success();
  }
  return op->emitError() << "unknown dsc result attribute '"
                         << attr.getName().getValue() << "'";
}
