//===- FormKernels.cpp - --dsc-form-kernels -------------------------------===//
//
// The fusion decision, made on the graph and recorded in it: which chains
// of elementwise ops run as one kernel, so that their intermediate values
// never reach memory. The decision is an attribute on the ops (IREE forms
// dispatch regions the same way, before converting them) so that a test
// sees it and the conversion only follows it.
//
//===----------------------------------------------------------------------===//

#include "dsc/Conversion/Passes.h"
#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Dialect/DSC/IR/DSCTraits.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/EquivalenceClasses.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_FORMKERNELS
#include "dsc/Conversion/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

/// Whether every use of `value` but those by `user` stores it: then
/// `value` joins `user`'s kernel as one more output of it, which the
/// stores copy (an optimizer's new moments are stored and read by the
/// parameter's update: one kernel computes all three).
static bool onlyStoredBesides(Value value, Operation *user) {
  return llvm::all_of(value.getUsers(), [&](Operation *u) {
    return u == user || isa<StoreOp>(u);
  });
}

namespace {
struct FormKernelsPass : public dsc::impl::FormKernelsBase<FormKernelsPass> {
  using FormKernelsBase::FormKernelsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    StringRef attrName = DSCDialect::kFusionGroupAttrName;
    // The decision is this pass's alone: an earlier one is dropped.
    func.walk([&](Operation *op) { op->removeAttr(attrName); });
    if (!fuseElementwise || func.isExternal())
      return;
    for (Block &block : func.getBody())
      formGroups(block);
  }

  /// Joins each elementwise op of `body` with the elementwise producers of
  /// its operands that it alone reads (stores aside) at its shape, on the
  /// same side of the optimizer boundary and of every pipeline transfer,
  /// and numbers the groups of two or more ops in the order of their last
  /// op.
  void formGroups(Block &body) {
    auto boundaries = body.getOps<OptimizerBoundaryOp>();
    Operation *boundary =
        boundaries.empty() ? nullptr : *boundaries.begin();
    // A group is emitted at its last op: one on both sides of the boundary
    // would run its earlier ops once per optimizer step only.
    auto perUpdate = [&](Operation *op) {
      return boundary && boundary->isBeforeInBlock(op);
    };
    // A group runs at its last op: one across a pipeline transfer would
    // move its earlier ops into a later action of the stage's schedule
    // (a weight gradient's running sum over the micro-batches into the
    // last one's backward, keeping every micro-batch's part until then).
    DenseMap<Operation *, unsigned> action;
    unsigned transfers = 0;
    for (Operation &op : body) {
      if (isa<PipelineSendOp, PipelineRecvOp>(op))
        ++transfers;
      action[&op] = transfers;
    }
    llvm::EquivalenceClasses<Operation *> classes;
    for (Operation &op : body) {
      classes.insert(&op);
      if (!isElementwise(&op))
        continue;
      auto shape = cast<RankedTensorType>(op.getResult(0).getType()).getShape();
      for (Value operand : op.getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || def->getBlock() != &body || !isElementwise(def) ||
            !onlyStoredBesides(operand, &op) ||
            perUpdate(def) != perUpdate(&op) ||
            action.lookup(def) != action.lookup(&op))
          continue;
        if (cast<RankedTensorType>(operand.getType()).getShape() != shape)
          continue;
        classes.unionSets(def, &op);
      }
    }
    DenseMap<Operation *, unsigned> position;
    for (Operation &op : body)
      position[&op] = position.size();
    // Each group of two or more ops, by the position of its last op.
    SmallVector<std::pair<unsigned, SmallVector<Operation *>>> groups;
    for (auto it = classes.begin(); it != classes.end(); ++it) {
      if (!(*it)->isLeader())
        continue;
      SmallVector<Operation *> members(classes.member_begin(**it),
                                       classes.member_end());
      if (members.size() < 2)
        continue;
      unsigned last = 0;
      for (Operation *member : members)
        last = std::max(last, position.lookup(member));
      groups.push_back({last, std::move(members)});
    }
    llvm::sort(groups, llvm::less_first());
    Builder builder(&getContext());
    for (auto [id, group] : llvm::enumerate(groups))
      for (Operation *member : group.second)
        member->setAttr(DSCDialect::kFusionGroupAttrName,
                        builder.getI64IntegerAttr(int64_t(id)));
  }
};
} // namespace
