//===- OffloadOptimizer.cpp - --dsc-offload (ZeRO-Offload) -----------------===//
//
// Moves the optimizer's state and update to the host: DeepSpeed's
// ZeRO-Offload, decided at compile time; with optimizer=nvme the state
// lives in per-rank files instead (ZeRO-Infinity). The pass only places states and
// copies (dsc.state ... on host, dsc.transfer); where each op then runs
// follows from the tiers of its operands (MemoryTiers.h), and the lowering
// puts the copies on copy streams and the host ops on a host stream.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Dialect/DSC/IR/MemoryTiers.h"
#include "dsc/Transforms/Passes.h"

#include "BlockNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/MapVector.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_OFFLOADOPTIMIZER
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

namespace {

/// Element count of a tensor type.
static int64_t numel(Type type) {
  return cast<RankedTensorType>(type).getNumElements();
}

/// Consecutive tensors of `update` (indices into its params), each group at
/// most `limit` elements unless a single tensor is larger.
static SmallVector<SmallVector<unsigned>>
subGroups(MultiTensorUpdateOpInterface update, int64_t limit) {
  Operation *op = update;
  auto sizes = op->getAttrOfType<DenseI32ArrayAttr>("operandSegmentSizes");
  unsigned n = sizes[0]; // params come first
  SmallVector<SmallVector<unsigned>> groups;
  int64_t filled = 0;
  for (unsigned i = 0; i < n; ++i) {
    int64_t elements = numel(op->getOperand(i).getType());
    if (groups.empty() || filled + elements > limit) {
      groups.emplace_back();
      filled = 0;
    }
    groups.back().push_back(i);
    filled += elements;
  }
  return groups;
}

/// The update of the tensors `group` of `op` alone: every per-tensor
/// operand and result segment (of `n` entries, or none) cut to the group,
/// the scalar segments kept.
static Operation *cloneSubGroup(OpBuilder &b, Operation *op,
                                ArrayRef<unsigned> group, unsigned n,
                                SmallVectorImpl<Value> &oldResults) {
  auto operandSizes = op->getAttrOfType<DenseI32ArrayAttr>("operandSegmentSizes");
  auto resultSizes = op->getAttrOfType<DenseI32ArrayAttr>("resultSegmentSizes");
  unsigned tensorOperands =
      cast<MultiTensorUpdateOpInterface>(op).getNumTensorOperands();
  OperationState state(op->getLoc(), op->getName());
  SmallVector<int32_t> newOperandSizes, newResultSizes;
  unsigned at = 0;
  for (int32_t size : operandSizes.asArrayRef()) {
    if (at < tensorOperands && size == int32_t(n)) {
      for (unsigned i : group)
        state.operands.push_back(op->getOperand(at + i));
      newOperandSizes.push_back(group.size());
    } else {
      for (int32_t i = 0; i < size; ++i)
        state.operands.push_back(op->getOperand(at + i));
      newOperandSizes.push_back(size);
    }
    at += size;
  }
  at = 0;
  for (int32_t size : resultSizes.asArrayRef()) {
    for (unsigned i : group)
      if (size == int32_t(n)) {
        state.types.push_back(op->getResult(at + i).getType());
        oldResults.push_back(op->getResult(at + i));
      }
    newResultSizes.push_back(size == int32_t(n) ? int32_t(group.size()) : size);
    at += size;
  }
  state.attributes = op->getAttrDictionary();
  state.attributes.set("operandSegmentSizes",
                       b.getDenseI32ArrayAttr(newOperandSizes));
  state.attributes.set("resultSegmentSizes",
                       b.getDenseI32ArrayAttr(newResultSizes));
  return b.create(state);
}

struct OffloadOptimizerPass
    : public dsc::impl::OffloadOptimizerBase<OffloadOptimizerPass> {
  using OffloadOptimizerBase::OffloadOptimizerBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (optimizer == "none" && param == "none")
      return;
    SmallVector<MultiTensorUpdateOpInterface> updates;
    module.walk([&](MultiTensorUpdateOpInterface u) { updates.push_back(u); });
    // Errors at the optimizer's update, or at the module without one.
    Operation *at = updates.empty() ? module.getOperation() : updates.front();
    if (optimizer != "none" && optimizer != "cpu" && optimizer != "nvme") {
      at->emitError() << "--dsc-offload: optimizer must be none, cpu or "
                         "nvme, got '" << optimizer << "'";
      return signalPassFailure();
    }
    if (param != "none" && param != "cpu" && param != "nvme") {
      at->emitError() << "--dsc-offload: param must be none, cpu or nvme, "
                         "got '" << param << "'";
      return signalPassFailure();
    }
    if (subGroupSize < 1) {
      at->emitError() << "--dsc-offload: sub-group-size must be at least 1, "
                         "got " << subGroupSize;
      return signalPassFailure();
    }
    for (auto [name, value] : {std::pair{"buffer-count", int64_t(bufferCount)},
                               {"param-buffer-count", int64_t(paramBufferCount)},
                               {"param-buffer-size", int64_t(paramBufferSize)}})
      if (value < 1) {
        at->emitError() << "--dsc-offload: " << name
                        << " must be at least 1, got " << value;
        return signalPassFailure();
      }
    auto stage = module->getAttrOfType<IntegerAttr>(DSCDialect::kZeroStageAttrName);
    int64_t zeroStage = stage ? stage.getInt() : 0;
    Builder b(module.getContext());
    if (optimizer == "nvme" || param == "nvme") {
      if (!nvmePath.empty())
        module->setAttr(DSCDialect::kNvmePathAttrName,
                        b.getStringAttr(nvmePath));
    }
    auto graphs = llvm::to_vector(module.getOps<func::FuncOp>());
    if (updates.empty()) {
      // No optimizer in this step: an evaluation step streams its weights
      // from the host or NVMe (ZeRO-Inference); gradients keep them.
      if (param == "none" || graphs.size() != 1 || graphs[0].isExternal() ||
          !graphs[0].getOps<StoreOp>().empty())
        return;
      if (failed(streamParameters(module, graphs[0].front())))
        return signalPassFailure();
      if (failed(MemoryTiers::compute(graphs[0].front())))
        return signalPassFailure();
      return;
    }
    if (optimizer != "none" && zeroStage < 1) {
      at->emitError() << "ZeRO-Offload needs ZeRO stage 1, 2 or 3 (as in "
                         "DeepSpeed), the step is at stage " << zeroStage;
      return signalPassFailure();
    }
    if (param != "none") {
      if (zeroStage != 3) {
        at->emitError() << "parameter offload needs ZeRO stage 3 (as in "
                           "DeepSpeed), the step is at stage " << zeroStage;
        return signalPassFailure();
      }
      if (failed(offloadParameters(module, *updates.front()->getBlock())))
        return signalPassFailure();
    }
    if (optimizer == "nvme") {
      if (zeroStage != 3) {
        at->emitError() << "NVMe optimizer offload (ZeRO-Infinity) needs ZeRO "
                           "stage 3 (as in DeepSpeed), the step is at stage "
                        << zeroStage;
        return signalPassFailure();
      }
      module->setAttr(DSCDialect::kNvmeBufferCountAttrName,
                      b.getI64IntegerAttr(bufferCount));
    }
    Block *body = updates.front()->getBlock();
    if (optimizer != "none") {
      for (MultiTensorUpdateOpInterface update : updates)
        if (failed(offload(module, update)))
          return signalPassFailure();
      copyBucketsToHost(*body);
    } else {
      // The update runs on the device (DeepSpeed's offload_param without
      // offload_optimizer): its new partitions go to their host or NVMe
      // states by one copy each.
      copyStoresToHost(module, *body);
    }
    if (failed(MemoryTiers::compute(*body)))
      return signalPassFailure();
  }

  /// The tier parameters offloaded with `param` live on.
  MemoryTier paramTier() const {
    return param == "nvme" ? MemoryTier::nvme : MemoryTier::host;
  }

  /// The state a load or store names, when it is an offloaded parameter (or
  /// teacher weight).
  static StateOp offloadedParameter(ModuleOp module, FlatSymbolRefAttr name) {
    auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(module, name);
    if (!state ||
        (state.getRole() != StateRole::parameter &&
         state.getRole() != StateRole::teacher) ||
        state.getTier() == MemoryTier::device)
      return {};
    return state;
  }

  /// Records the NVMe parameter read-ahead on the module, once every
  /// offloaded parameter is known to fit one of DeepSpeed's swap buffers
  /// (offload_param.buffer_size elements; DeepSpeed refuses larger ones).
  LogicalResult recordParameterBuffers(ModuleOp module) {
    if (param != "nvme")
      return success();
    for (auto state : module.getOps<StateOp>())
      if ((state.getRole() == StateRole::parameter ||
           state.getRole() == StateRole::teacher) &&
          state.getTier() == MemoryTier::nvme &&
          numel(state.getType()) > paramBufferSize)
        return state.emitError()
               << "@" << state.getSymName() << " has " << numel(state.getType())
               << " elements, more than a parameter swap buffer holds "
                  "(offload_param.buffer_size, --offload-param-buffer-size = "
               << int64_t(paramBufferSize) << ")";
    module->setAttr(kNvmeParamBufferCountAttrName,
                    Builder(module.getContext())
                        .getI64IntegerAttr(paramBufferCount));
    return success();
  }

  /// The state `operand` loads, when `result` (of the update `part` of
  /// `whole`, the new value of `operand`) is stored into it and nothing but
  /// the update reads the load: a master weight or moment the update alone
  /// touches.
  static StateOp ownedState(ModuleOp module, Operation *whole, Operation *part,
                            Value operand, Value result) {
    auto load = operand.getDefiningOp<LoadOp>();
    if (!load || llvm::any_of(load->getUsers(), [&](Operation *user) {
          return user != whole && user != part;
        }))
      return {};
    auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(
        module, load.getStateAttr());
    if (!state || (state.getRole() != StateRole::optimizer &&
                   state.getRole() != StateRole::master))
      return {};
    for (Operation *user : result.getUsers())
      if (auto store = dyn_cast<StoreOp>(user);
          store && store.getStateAttr() == load.getStateAttr())
        return state;
    return {};
  }

  /// ZeRO-Infinity's parameter offload (offload_param, stage 3): each
  /// parameter partition lives on the host or NVMe; every read of it on the
  /// device (the all-gathers before its use) reads a copy made right after
  /// its load, which the prefetch schedule already placed ahead of the
  /// gather. A host update reads the load itself and writes the new
  /// partition into the state in place of the copy back; a device update
  /// reads the copy (copyStoresToHost). A distillation teacher's partitions
  /// (frozen, partitioned as parameters are) live on the parameters' tier:
  /// read the same way, never written.
  LogicalResult offloadParameters(ModuleOp module, Block &body) {
    for (auto state : module.getOps<StateOp>())
      if (state.getPartitionOf() &&
          (state.getRole() == StateRole::parameter ||
           state.getRole() == StateRole::teacher))
        state.setTier(paramTier());
    if (failed(recordParameterBuffers(module)))
      return failure();
    bool hostUpdate = optimizer != "none";
    for (auto load : llvm::make_early_inc_range(body.getOps<LoadOp>())) {
      if (!offloadedParameter(module, load.getStateAttr()))
        continue;
      OpBuilder b(load->getContext());
      b.setInsertionPointAfter(load);
      Value device = TransferOp::create(b, load.getLoc(), load.getResult(),
                                        MemoryTier::device);
      load.getResult().replaceUsesWithIf(device, [&](OpOperand &use) {
        return use.getOwner() != device.getDefiningOp() &&
               !(hostUpdate &&
                 isa<MultiTensorUpdateOpInterface>(use.getOwner()));
      });
    }
    return success();
  }

  /// A device update's new parameter partitions, stored into offloaded
  /// parameters: each copied to the host right before its store.
  static void copyStoresToHost(ModuleOp module, Block &body) {
    for (auto store : llvm::make_early_inc_range(body.getOps<StoreOp>())) {
      if (!offloadedParameter(module, store.getStateAttr()))
        continue;
      OpBuilder b(store);
      store.getValueMutable().assign(TransferOp::create(
          b, store.getLoc(), store.getValue(), MemoryTier::host));
    }
  }

  /// ZeRO-Inference: an evaluation step's parameters live on the host or
  /// NVMe and stream to the device block by block. Each load moves, with
  /// its copy to the device, to just before the first reader of the block
  /// before the one that reads it (the blocks: the model's repeated blocks,
  /// by their state names, and each other parameter alone, in the order the
  /// step first reads them), so the copy of block k + 1 runs while the
  /// device computes block k, and the device holds the weights of two
  /// blocks at a time (a copy's buffer lives from its copy to its last
  /// read), not the model's.
  LogicalResult streamParameters(ModuleOp module, Block &body) {
    SmallVector<LoadOp> loads;
    for (auto load : body.getOps<LoadOp>()) {
      auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(
          module, load.getStateAttr());
      if (state && state.getRole() == StateRole::parameter)
        loads.push_back(load);
    }
    if (loads.empty())
      return success();
    for (LoadOp load : loads)
      SymbolTable::lookupNearestSymbolFrom<StateOp>(module, load.getStateAttr())
          .setTier(paramTier());
    if (failed(recordParameterBuffers(module)))
      return failure();
    // Each load's first reader, in program order.
    DenseMap<Operation *, unsigned> position;
    for (Operation &op : body)
      position[&op] = position.size();
    auto firstUser = [&](LoadOp load) -> Operation * {
      Operation *first = nullptr;
      for (Operation *user : load->getUsers()) {
        Operation *op = body.findAncestorOpInBlock(*user);
        if (op && (!first || position[op] < position[first]))
          first = op;
      }
      return first;
    };
    SmallVector<std::pair<Operation *, LoadOp>> byUse;
    for (LoadOp load : loads)
      if (Operation *user = firstUser(load))
        byUse.push_back({user, load});
    llvm::stable_sort(byUse, [&](auto &x, auto &y) {
      return position[x.first] < position[y.first];
    });
    // The blocks in the order the step reads them: a new one starts at the
    // first reader of a parameter of another block (parameters outside
    // the repeated blocks, embeddings and the head, are blocks of their
    // own).
    SmallVector<StringRef> names;
    for (LoadOp load : loads)
      names.push_back(load.getStateAttr().getValue());
    BlockNames blocks(names);
    SmallVector<Operation *> blockStart; // each block's first reader
    SmallVector<unsigned> blockOf;       // byUse entry -> its block
    StringRef current;
    for (auto &[user, load] : byUse) {
      StringRef name = load.getStateAttr().getValue();
      StringRef block = blocks.blockOf(name);
      if (blockStart.empty() || block.empty() || block != current)
        blockStart.push_back(user);
      current = block.empty() ? name : block;
      blockOf.push_back(blockStart.size() - 1);
    }
    for (auto [i, entry] : llvm::enumerate(byUse)) {
      auto [user, load] = entry;
      Operation *before = blockStart[blockOf[i] > 0 ? blockOf[i] - 1 : 0];
      load->moveBefore(before);
      OpBuilder b(before);
      Value device = TransferOp::create(b, load.getLoc(), load.getResult(),
                                        MemoryTier::device);
      load.getResult().replaceAllUsesExcept(device, device.getDefiningOp());
    }
    return success();
  }

  LogicalResult offload(ModuleOp module, MultiTensorUpdateOpInterface update) {
    Operation *op = update;
    auto sizes = op->getAttrOfType<DenseI32ArrayAttr>("operandSegmentSizes");
    unsigned n = sizes[0];
    OpBuilder b(op);
    // Each operand copied once, right after the op that computes it.
    DenseMap<Value, Value> onHost;
    auto toHost = [&](Value v) -> Value {
      if (Value h = onHost.lookup(v))
        return h;
      // A load of a state on the host (an offloaded parameter) is there.
      if (auto load = v.getDefiningOp<LoadOp>())
        if (offloadedParameter(module, load.getStateAttr()))
          return v;
      OpBuilder at(module.getContext());
      if (Operation *def = v.getDefiningOp())
        at.setInsertionPointAfter(def);
      else
        at.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
      Value h = TransferOp::create(at, v.getLoc(), v, MemoryTier::host);
      onHost[v] = h;
      return h;
    };
    for (ArrayRef<unsigned> group : subGroups(update, subGroupSize)) {
      SmallVector<Value> oldResults;
      Operation *part = cloneSubGroup(b, op, group, n, oldResults);
      auto partUpdate = cast<MultiTensorUpdateOpInterface>(part);
      for (auto [old, result] : llvm::zip(oldResults, part->getResults()))
        old.replaceAllUsesWith(result);
      // The states the update owns move to the host; every other operand
      // is copied there.
      DenseSet<unsigned> owned;
      for (auto [i, result] : llvm::enumerate(part->getResults()))
        if (Value operand = partUpdate.getUpdatedOperand(i))
          if (StateOp state = ownedState(module, op, part, operand, result)) {
            state.setTier(optimizer == "nvme" ? MemoryTier::nvme
                                              : MemoryTier::host);
            for (OpOperand &use : operand.getUses())
              if (use.getOwner() == part)
                owned.insert(use.getOperandNumber());
          }
      for (OpOperand &use : part->getOpOperands())
        if (!owned.contains(use.getOperandNumber()))
          use.set(toHost(use.get()));
      // Results read on the device go back there.
      b.setInsertionPointAfter(part);
      llvm::MapVector<Type, SmallVector<std::pair<Value, SmallVector<OpOperand *>>>>
          backByType;
      for (Value result : part->getResults()) {
        SmallVector<OpOperand *> deviceUses;
        for (OpOperand &use : result.getUses()) {
          auto store = dyn_cast<StoreOp>(use.getOwner());
          auto state = store ? SymbolTable::lookupNearestSymbolFrom<StateOp>(
                                   module, store.getStateAttr())
                             : StateOp();
          if (!state || state.getTier() == MemoryTier::device)
            deviceUses.push_back(&use);
        }
        if (!deviceUses.empty())
          backByType[cast<RankedTensorType>(result.getType()).getElementType()]
              .push_back({result, deviceUses});
      }
      for (auto &[element, results] : backByType)
        copyBack(b, op->getLoc(), results);
    }
    op->erase();
    return success();
  }

  /// Copies `results` (host tensors of one element type, each with the
  /// uses on the device it is for) to the device in one transfer: packed
  /// flat on the host, copied, cut and reshaped on the device. A sub-group
  /// then costs one copy back, whatever its number of tensors.
  static void copyBack(
      OpBuilder &b, Location loc,
      ArrayRef<std::pair<Value, SmallVector<OpOperand *>>> results) {
    auto flatType = [](Value v, int64_t n) {
      return RankedTensorType::get(
          {n}, cast<RankedTensorType>(v.getType()).getElementType());
    };
    if (results.size() == 1) {
      Value back = TransferOp::create(b, loc, results[0].first, MemoryTier::device);
      for (OpOperand *use : results[0].second)
        use->set(back);
      return;
    }
    SmallVector<Value> flats;
    for (auto &[result, uses] : results) {
      auto type = cast<RankedTensorType>(result.getType());
      flats.push_back(type.getRank() == 1
                          ? result
                          : ReshapeOp::create(b, loc, flatType(result, type.getNumElements()),
                                              result)
                                .getResult());
    }
    Value packed = ConcatOp::create(b, loc, flats, 0);
    Value back = TransferOp::create(b, loc, packed, MemoryTier::device);
    int64_t offset = 0;
    for (auto &[result, uses] : results) {
      auto type = cast<RankedTensorType>(result.getType());
      int64_t n = type.getNumElements();
      Value part = SliceOp::create(b, loc, back, 0, offset, offset + n, 1);
      offset += n;
      if (type.getRank() != 1)
        part = ReshapeOp::create(b, loc, type, part);
      for (OpOperand *use : uses)
        use->set(part);
    }
  }

  /// One copy to the host per reduced bucket rather than per tensor: where
  /// every use of a bucketed reduction's result is a slice that is copied
  /// to the host (a gradient partition; the device may read it too, for the
  /// clipping norm), the result is copied once, right after the reduction,
  /// and sliced on the host.
  static void copyBucketsToHost(Block &body) {
    llvm::MapVector<Value, SmallVector<TransferOp>> byBucket;
    for (auto transfer : body.getOps<TransferOp>()) {
      auto slice = transfer.getInput().getDefiningOp<SliceOp>();
      if (transfer.getTier() == MemoryTier::host && slice &&
          isa_and_nonnull<ReduceScatterOp, AllReduceOp>(
              slice.getInput().getDefiningOp()))
        byBucket[slice.getInput()].push_back(transfer);
    }
    for (auto &entry : byBucket) {
      Value bucket = entry.first;
      ArrayRef<TransferOp> transfers = entry.second;
      bool onlyCopied = llvm::all_of(bucket.getUsers(), [&](Operation *user) {
        return isa<SliceOp>(user) &&
               llvm::any_of(transfers, [&](TransferOp t) {
                 return t.getInput().getDefiningOp() == user;
               });
      });
      if (!onlyCopied || transfers.size() < 2)
        continue;
      OpBuilder b(bucket.getContext());
      b.setInsertionPointAfterValue(bucket);
      Value whole = TransferOp::create(b, bucket.getLoc(), bucket, MemoryTier::host);
      for (TransferOp transfer : transfers) {
        auto slice = transfer.getInput().getDefiningOp<SliceOp>();
        b.setInsertionPoint(transfer);
        Operation *onHost = b.clone(*slice);
        onHost->setOperand(0, whole);
        transfer.replaceAllUsesWith(onHost->getResult(0));
        transfer.erase();
        if (slice->use_empty())
          slice.erase();
      }
    }
  }
};
} // namespace
