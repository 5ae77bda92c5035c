//===- BoundedTensorSize.cpp - int64 bound on tensor sizes -----------------===//

#include "dsc/Dialect/DSC/IR/DSCTraits.h"
#include "dsc/Support/TensorSize.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

static LogicalResult checkType(Operation *op, Type type, StringRef kind,
                               unsigned index) {
  auto shaped = dyn_cast<RankedTensorType>(type);
  // Unranked, dynamic and non-numeric tensors are the type constraints' to
  // reject; they have no size to check here.
  if (!shaped || !shaped.hasStaticShape() ||
      !shaped.getElementType().isIntOrFloat())
    return success();
  unsigned bits = shaped.getElementType().getIntOrFloatBitWidth();
  if (dsc::checkedByteSize(shaped.getShape(), bits))
    return success();
  return op->emitOpError() << kind << " #" << index << " of type " << type
                           << " has more elements or bytes than fit in int64";
}

LogicalResult mlir::dsc::verifyBoundedTensorSizes(Operation *op) {
  for (auto [i, type] : llvm::enumerate(op->getOperandTypes()))
    if (failed(checkType(op, type, "operand", i)))
      return failure();
  for (auto [i, type] : llvm::enumerate(op->getResultTypes()))
    if (failed(checkType(op, type, "result", i)))
      return failure();
  return success();
}
