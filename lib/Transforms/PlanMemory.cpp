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
    // The device arena, and the host arena of host buffers (ZeRO-Offload's
    // copies), which the runtime allocates in pinned host memory.
    std::optional<dsc::BufferPlan> plan;
    SmallVector<dsc::ArenaBuffer> planned;
    for (bool host : {false, true}) {
      FailureOr<SmallVector<dsc::ArenaBuffer>> buffers =
          dsc::collectArenaBuffers(func, host);
      if (failed(buffers))
        return signalPassFailure();
      if (host && buffers->empty())
        break;
      SmallVector<dsc::BufferRequest> requests = llvm::map_to_vector(
          *buffers, [](const dsc::ArenaBuffer &b) { return b.request; });
      std::optional<dsc::BufferPlan> placed =
          dsc::planBuffers(requests, dsc::kArenaAlignment);
      if (!placed) {
        func.emitError() << "memory plan overflows int64";
        return signalPassFailure();
      }
      OpBuilder builder(func.getContext());
      func->setAttr(host ? dscrt::DSCRTDialect::kHostArenaBytesAttrName
                         : dscrt::DSCRTDialect::kArenaBytesAttrName,
                    builder.getI64IntegerAttr(placed->arenaBytes));
      for (auto [buffer, offset] : llvm::zip(*buffers, placed->offsets)) {
        dscrt::AllocOp alloc = buffer.alloc;
        builder.setInsertionPoint(alloc);
        auto at = dscrt::BufferOp::create(builder, alloc.getLoc(),
                                          alloc.getType(), offset);
        alloc.replaceAllUsesWith(at.getResult());
        alloc.erase();
      }
      if (!host) {
        plan = placed;
        planned = std::move(*buffers);
      }
    }
    if (print)
      llvm::errs() << "dsc-plan-memory: @" << func.getSymName() << ": "
                   << planned.size() << " buffers, arena " << plan->arenaBytes
                   << " bytes, live-bytes bound " << plan->maxLiveBytes
                   << " bytes\n";
  }
};
} // namespace
