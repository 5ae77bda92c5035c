//===- GraphUtils.cpp - queries over a dsc graph ---------------------------===//

#include "dsc/Dialect/DSC/IR/GraphUtils.h"

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
