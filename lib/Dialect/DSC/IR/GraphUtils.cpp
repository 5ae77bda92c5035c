//===- GraphUtils.cpp - queries over a dsc graph ---------------------------===//

#include "dsc/Dialect/DSC/IR/GraphUtils.h"

#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace mlir::dsc;

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

std::optional<int64_t> mlir::dsc::microBatchOf(func::FuncOp func) {
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto type = dyn_cast<RankedTensorType>(func.getArgument(i).getType());
    if (func.getArgAttr(i, DSCDialect::kInputAttrName) && type &&
        type.getRank() > 0 && !type.isDynamicDim(0))
      return type.getDimSize(0);
  }
  return std::nullopt;
}

Value mlir::dsc::stepKeyOf(func::FuncOp func) {
  // The call's own key: one with a sample offset names later samples (a
  // pipeline stage's micro-batch).
  StepKeyOp key;
  func.walk([&](StepKeyOp op) {
    if (op.getSampleOffset() != 0)
      return WalkResult::advance();
    key = op;
    return WalkResult::interrupt();
  });
  Block &body = func.getBody().front();
  // It has no operands: at the start it dominates every use.
  if (key) {
    key->moveBefore(&body, body.begin());
    return key;
  }
  auto builder = OpBuilder::atBlockBegin(&body);
  return StepKeyOp::create(
      builder, func.getLoc(),
      RankedTensorType::get({4}, builder.getI64Type()));
}

LogicalResult mlir::dsc::verifyLowerableGraph(func::FuncOp graph) {
  if (!graph.getBody().hasOneBlock())
    return graph.emitError() << "the graph must be one block to lower, it has "
                             << graph.getBody().getBlocks().size();
  auto isStaticTensor = [](Type t) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    return tensor && tensor.hasStaticShape() &&
           tensor.getElementType().isIntOrFloat();
  };
  for (BlockArgument arg : graph.getArguments())
    if (!isStaticTensor(arg.getType()))
      return graph.emitError() << "graph input #" << arg.getArgNumber()
                               << " must be a statically shaped tensor, got "
                               << arg.getType();
  for (auto [i, type] : llvm::enumerate(graph.getResultTypes()))
    if (!isStaticTensor(type))
      return graph.emitError() << "graph output #" << i
                               << " must be a statically shaped tensor, got "
                               << type;
  return success();
}
