//===- DataParallel.cpp - --dsc-data-parallel ------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_DATAPARALLEL
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

namespace {
struct DataParallelPass : public dsc::impl::DataParallelBase<DataParallelPass> {
  using DataParallelBase::DataParallelBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (worldSize < 1) {
      module.emitError() << "world-size must be >= 1, got " << int64_t(worldSize);
      return signalPassFailure();
    }
    if (gradAccum < 1) {
      module.emitError() << "grad-accum must be at least 1, got "
                         << int64_t(gradAccum);
      return signalPassFailure();
    }
    if (microBatch < 0) {
      module.emitError() << "micro-batch must be >= 0, got " << int64_t(microBatch);
      return signalPassFailure();
    }
    if (microBatch > 0 && failed(checkMicroBatch(module)))
      return signalPassFailure();
    if (failed(checkMesh(module)))
      return signalPassFailure();
    OpBuilder builder(module.getContext());
    module->setAttr(kWorldSizeAttrName,
                    builder.getI64IntegerAttr(int64_t(worldSize)));
    if (tensorParallel > 1)
      module->setAttr(kTensorParallelSizeAttrName,
                      builder.getI64IntegerAttr(int64_t(tensorParallel)));
    if (pipelineParallel > 1)
      module->setAttr(kPipelineParallelSizeAttrName,
                      builder.getI64IntegerAttr(int64_t(pipelineParallel)));
    group = dataParallelGroup(module);
    replicas = worldSize / (tensorParallel * pipelineParallel);
    if (replicas == 1)
      return;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
      builder.setInsertionPoint(ret);
      for (OpOperand &operand : ret->getOpOperands())
        operand.set(globalize(builder, operand.get()));
      // The rank-local values the outputs were computed from (a mean
      // cross-entropy) are dead now.
      for (Operation &op : llvm::make_early_inc_range(
               llvm::reverse(func.getBody().front())))
        if (isOpTriviallyDead(&op))
          op.erase();
    }
  }

  /// The mesh: T * P divides the world.
  LogicalResult checkMesh(ModuleOp module) {
    if (tensorParallel < 1 || pipelineParallel < 1)
      return module.emitError()
             << "tensor-parallel and pipeline-parallel must be at least 1, got "
             << int64_t(tensorParallel) << " and " << int64_t(pipelineParallel);
    int64_t mesh = tensorParallel * pipelineParallel;
    if (worldSize % mesh != 0)
      return module.emitError()
             << "the world of " << int64_t(worldSize)
             << " ranks does not divide into tensor-parallel groups of "
             << int64_t(tensorParallel) << " times " << int64_t(pipelineParallel)
             << " pipeline stages";
    return success();
  }

  /// Every graph input's leading dimension is the micro-batch.
  LogicalResult checkMicroBatch(ModuleOp module) {
    for (auto func : module.getOps<func::FuncOp>()) {
      for (unsigned i = 0; i < func.getNumArguments(); ++i) {
        auto name = func.getArgAttrOfType<StringAttr>(i, "dsc.input");
        auto type = dyn_cast<RankedTensorType>(func.getArgument(i).getType());
        if (!name || !type)
          continue;
        if (type.getRank() == 0 || type.getDimSize(0) != microBatch)
          return func.emitError()
                 << "input '" << name.getValue() << "' is " << type
                 << ", but the micro-batch per rank is " << int64_t(microBatch)
                 << "; export the model with that batch size";
      }
    }
    return success();
  }

  CollectiveGroup group = CollectiveGroup::world; // the data-parallel ranks
  int64_t replicas = 1;                          // how many there are

  /// `value` (one rank's) made global over the data-parallel ranks.
  Value globalize(OpBuilder &b, Value value) {
    Location loc = value.getLoc();
    auto type = cast<RankedTensorType>(value.getType());
    auto ce = value.getDefiningOp<CrossEntropyOp>();
    // With accumulation the global count would be needed by every
    // micro-batch's backward: each rank's own mean is averaged instead.
    if (ce && ce.getReduction() == LossReduction::mean && gradAccum == 1) {
      // sum of per-token losses and count of counted tokens, both global.
      b.setInsertionPointAfter(ce);
      auto sum = CrossEntropyOp::create(b, loc, ce.getLogits(), ce.getTargets(),
                                        ce.getIgnoreIndex(), LossReduction::sum);
      Value count = ce.buildCountedTargets(b);
      auto globalSum = AllReduceOp::create(b, loc, sum, group);
      auto globalCount = AllReduceOp::create(b, loc, count, group);
      return DivOp::create(b, loc, globalSum, globalCount);
    }
    auto total = AllReduceOp::create(b, loc, value, group);
    auto n = ConstantOp::create(
        b, loc, DenseElementsAttr::get(
                    RankedTensorType::get({}, type.getElementType()),
                    isa<FloatType>(type.getElementType())
                        ? Attribute(b.getFloatAttr(type.getElementType(), replicas))
                        : Attribute(b.getIntegerAttr(type.getElementType(), replicas))));
    return DivOp::create(b, loc, total, n);
  }
};
} // namespace
