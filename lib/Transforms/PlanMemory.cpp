//===- PlanMemory.cpp - --dsc-plan-memory ----------------------------------===//

#include "dsc/Analysis/BufferPlan.h"
#include "dsc/Support/TensorSize.h"
#include "dsc/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_PLANMEMORY
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;

/// Where a buffer a collective uses may be reused. Buffers are first written
/// on the compute stream (by a kernel or a copy), and the collective runs on
/// another one: its buffer stays live until the first wait for an event
/// recorded on the collective's stream after it (or to the end of the step).
static int64_t releasedAt(Operation *collective,
                          const DenseMap<Operation *, int64_t> &position) {
  Value stream = dscrt::getCollectiveStream(collective);
  Operation *op = collective;
  while ((op = op->getNextNode())) {
    auto wait = dyn_cast<dscrt::WaitOp>(op);
    auto record = wait ? wait.getEvent().getDefiningOp<dscrt::RecordOp>()
                       : dscrt::RecordOp();
    if (record && record.getStream() == stream &&
        position.lookup(record) > position.lookup(collective))
      return position.lookup(wait);
  }
  return position.size();
}

namespace {

struct PlanMemoryPass : public dsc::impl::PlanMemoryBase<PlanMemoryPass> {
  using PlanMemoryBase::PlanMemoryBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &body = func.getBody().front();
    DenseMap<Operation *, int64_t> position;
    for (Operation &op : body)
      position[&op] = position.size();

    SmallVector<dscrt::AllocOp> allocs;
    SmallVector<dsc::BufferRequest> requests;
    for (auto alloc : body.getOps<dscrt::AllocOp>()) {
      MemRefType type = alloc.getType();
      std::optional<int64_t> bytes = dsc::checkedByteSize(
          type.getShape(), type.getElementType().getIntOrFloatBitWidth());
      if (!bytes) {
        alloc.emitError() << "buffer size overflows int64";
        return signalPassFailure();
      }
      dsc::BufferRequest request;
      request.bytes = *bytes;
      request.firstUse = request.lastUse = position[alloc];
      // Follow views: they alias the allocation.
      SmallVector<Value> worklist = {alloc.getResult()};
      while (!worklist.empty()) {
        Value value = worklist.pop_back_val();
        for (Operation *user : value.getUsers()) {
          Operation *top = body.findAncestorOpInBlock(*user);
          request.lastUse = std::max(request.lastUse, position[top]);
          if (dscrt::getCollectiveStream(top))
            request.lastUse =
                std::max(request.lastUse, releasedAt(top, position));
          if (auto view = dyn_cast<dscrt::ViewOp>(user))
            worklist.push_back(view.getResult());
        }
      }
      allocs.push_back(alloc);
      requests.push_back(request);
    }

    std::optional<dsc::BufferPlan> plan = dsc::planBuffers(requests, 256);
    if (!plan) {
      func.emitError() << "memory plan overflows int64";
      return signalPassFailure();
    }
    OpBuilder builder(func.getContext());
    func->setAttr(dscrt::DSCRTDialect::kArenaBytesAttrName,
                  builder.getI64IntegerAttr(plan->arenaBytes));
    for (auto [alloc, offset] : llvm::zip(allocs, plan->offsets)) {
      builder.setInsertionPoint(alloc);
      auto buffer = dscrt::BufferOp::create(builder, alloc.getLoc(),
                                            alloc.getType(), offset);
      alloc.replaceAllUsesWith(buffer.getResult());
      alloc.erase();
    }
    if (print)
      llvm::errs() << "dsc-plan-memory: @" << func.getSymName() << ": "
                   << allocs.size() << " buffers, arena " << plan->arenaBytes
                   << " bytes, live-bytes bound " << plan->maxLiveBytes
                   << " bytes\n";
  }
};
} // namespace
