//===- FeedForwardBlocks.cpp - dense feed-forward blocks, by structure -----===//

#include "FeedForwardBlocks.h"

#include "dsc/Dialect/DSC/IR/DSCTraits.h"

using namespace mlir;
using namespace mlir::dsc;

/// The state a value loads, when it is a load of a parameter.
StateOp mlir::dsc::parameterLoaded(Value v, SymbolTable &symbols) {
  auto load = v.getDefiningOp<LoadOp>();
  if (!load)
    return nullptr;
  auto state = symbols.lookup<StateOp>(load.getState());
  return state && state.getRole() == StateRole::parameter ? state : nullptr;
}

/// A linear map whose weight (and bias, if any) are parameters.
bool mlir::dsc::isParameterLinear(LinearOp linear, SymbolTable &symbols) {
  return parameterLoaded(linear.getWeight(), symbols) &&
         (!linear.getBias() || parameterLoaded(linear.getBias(), symbols));
}

/// Walks up from `v`, a value only the block reads, collecting the chain
/// and the first linear maps. Operands of rank 0 (scalar constants) are
/// taken as they are.
static bool traceChain(Value v, FeedForward &block, SymbolTable &symbols) {
  Operation *def = v.getDefiningOp();
  if (!def || !v.hasOneUse())
    return false;
  if (auto linear = dyn_cast<LinearOp>(def)) {
    if (!isParameterLinear(linear, symbols) || block.first.size() == 2)
      return false;
    block.first.push_back(linear);
    return true;
  }
  if (isa<ReshapeOp>(def)) {
    if (!traceChain(def->getOperand(0), block, symbols))
      return false;
    block.chain.insert(def);
    return true;
  }
  if (!isElementwise(def) || def->getNumResults() != 1)
    return false;
  bool traced = false;
  for (Value operand : def->getOperands()) {
    if (tensorOf(operand).getRank() == 0)
      continue;
    if (!traceChain(operand, block, symbols))
      return false;
    traced = true;
  }
  if (!traced)
    return false;
  block.chain.insert(def);
  return true;
}

/// The feed-forward block `last` ends, if it ends one.
std::optional<FeedForward> mlir::dsc::matchFeedForward(LinearOp last, SymbolTable &symbols) {
  if (!isParameterLinear(last, symbols))
    return std::nullopt;
  FeedForward block;
  block.last = last;
  if (!traceChain(last.getInput(), block, symbols) || block.first.empty())
    return std::nullopt;
  // An activation between the maps, not only reshapes.
  if (llvm::all_of(block.chain, [](Operation *op) { return isa<ReshapeOp>(op); }))
    return std::nullopt;
  block.input = block.first[0].getInput();
  int64_t width = tensorOf(block.input).getShape().back();
  for (LinearOp linear : block.first)
    if (linear.getInput() != block.input)
      return std::nullopt;
  if (tensorOf(last.getResult()).getShape().back() != width)
    return std::nullopt;
  return block;
}

