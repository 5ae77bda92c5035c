//===- GraphUtils.cpp - queries over a dsc graph ---------------------------===//

#include "dsc/Dialect/DSC/IR/GraphUtils.h"

#include "dsc/Dialect/DSC/IR/DSCDialect.h"

#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;

Operation *mlir::dsc::lastProducer(
    ValueRange values, llvm::function_ref<Operation *(Operation *)> placed) {
  Operation *last = nullptr;
  SmallVector<Operation *> stack;
  llvm::SmallPtrSet<Operation *, 32> seen;
  for (Value v : values)
    if (Operation *def = v.getDefiningOp())
      stack.push_back(def);
  while (!stack.empty()) {
    Operation *op = stack.pop_back_val();
    if (!seen.insert(op).second)
      continue;
    Operation *at = placed(op);
    if (!last || last->isBeforeInBlock(at))
      last = at;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        stack.push_back(def);
  }
  return last;
}

std::optional<unsigned> mlir::dsc::findOutput(func::FuncOp func,
                                              StringRef name) {
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (auto attr = func.getResultAttrOfType<StringAttr>(
            i, DSCDialect::kOutputAttrName);
        attr && attr.getValue() == name)
      return i;
  return std::nullopt;
}

LogicalResult mlir::dsc::appendOutput(func::FuncOp func, func::ReturnOp ret,
                                      Value value, StringRef name) {
  MLIRContext *context = func.getContext();
  unsigned index = func.getNumResults();
  NamedAttribute attr(StringAttr::get(context, DSCDialect::kOutputAttrName),
                      StringAttr::get(context, name));
  if (failed(func.insertResult(index, value.getType(),
                               DictionaryAttr::get(context, attr))))
    return func.emitError() << "cannot add the output '" << name << "'";
  ret->insertOperands(index, value);
  return success();
}
