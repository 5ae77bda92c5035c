//===- PlanMemory.cpp - --dsc-plan-memory ----------------------------------===//

#include "dsc/Analysis/ArenaBuffers.h"
#include "dsc/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_PLANMEMORY
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;

namespace {

struct PlanMemoryPass : public dsc::impl::PlanMemoryBase<PlanMemoryPass> {
  using PlanMemoryBase::PlanMemoryBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    FailureOr<SmallVector<dsc::ArenaBuffer>> buffers =
        dsc::collectArenaBuffers(func);
    if (failed(buffers))
      return signalPassFailure();
    SmallVector<dsc::BufferRequest> requests = llvm::map_to_vector(
        *buffers, [](const dsc::ArenaBuffer &b) { return b.request; });

    std::optional<dsc::BufferPlan> plan =
        dsc::planBuffers(requests, dsc::kArenaAlignment);
    if (!plan) {
      func.emitError() << "memory plan overflows int64";
      return signalPassFailure();
    }
    OpBuilder builder(func.getContext());
    func->setAttr(dscrt::DSCRTDialect::kArenaBytesAttrName,
                  builder.getI64IntegerAttr(plan->arenaBytes));
    for (auto [buffer, offset] : llvm::zip(*buffers, plan->offsets)) {
      dscrt::AllocOp alloc = buffer.alloc;
      builder.setInsertionPoint(alloc);
      auto placed = dscrt::BufferOp::create(builder, alloc.getLoc(),
                                            alloc.getType(), offset);
      alloc.replaceAllUsesWith(placed.getResult());
      alloc.erase();
    }
    if (print)
      llvm::errs() << "dsc-plan-memory: @" << func.getSymName() << ": "
                   << buffers->size() << " buffers, arena " << plan->arenaBytes
                   << " bytes, live-bytes bound " << plan->maxLiveBytes
                   << " bytes\n";
  }
};
} // namespace
