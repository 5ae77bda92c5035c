//===- StateOps.cpp - dsc.state, dsc.load, dsc.constant --------------------===//

#include "InferError.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Support/TensorSize.h"

using namespace mlir;
using namespace mlir::dsc;

LogicalResult StateOp::verify() {
  RankedTensorType type = getTensorType();
  if (!checkedByteSize(type.getShape(),
                       type.getElementType().getIntOrFloatBitWidth()))
    return emitOpError() << "@" << getSymName() << " of type " << type
                         << " has more elements or bytes than fit in int64";
  return success();
}

LogicalResult LoadOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  Operation *symbol =
      symbolTable.lookupNearestSymbolFrom(*this, getStateAttr());
  if (!symbol)
    return emitOpError() << "reads " << getStateAttr()
                         << ", which is not declared";
  auto state = dyn_cast<StateOp>(symbol);
  if (!state)
    return emitOpError() << "reads " << getStateAttr() << ", which is a '"
                         << symbol->getName() << "', not a 'dsc.state'";
  if (state.getType() != getType())
    return emitOpError() << "result type " << getType()
                         << " differs from the declared type "
                         << state.getType() << " of " << getStateAttr();
  return success();
}

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> location,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  auto value = adaptor.getValueAttr();
  if (!value)
    return InferError(location, getOperationName())(
        "requires an elements attribute 'value'");
  inferred.push_back(value.getType());
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }
