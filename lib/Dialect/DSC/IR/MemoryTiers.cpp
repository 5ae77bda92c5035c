//===- MemoryTiers.cpp - where each tensor of a graph lives ---------------===//

#include "dsc/Dialect/DSC/IR/MemoryTiers.h"
#include "dsc/Dialect/DSC/IR/DSCTraits.h"

#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::dsc;

/// The tier of the tensors a state's loads yield and its stores take: an
/// NVMe state is read into and written from host memory.
static MemoryTier stateTier(Operation *user, FlatSymbolRefAttr name) {
  auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(user, name);
  if (!state)
    return MemoryTier::device;
  return state.getTier() == MemoryTier::nvme ? MemoryTier::host
                                             : state.getTier();
}

FailureOr<MemoryTiers> MemoryTiers::compute(Block &body) {
  MemoryTiers tiers;
  for (Operation &op : body) {
    if (auto load = dyn_cast<LoadOp>(op)) {
      if (stateTier(load, load.getStateAttr()) == MemoryTier::host) {
        tiers.onHost.insert(load.getResult());
        tiers.hostOps.insert(load);
      }
      continue;
    }
    if (auto transfer = dyn_cast<TransferOp>(op)) {
      if (tiers.of(transfer.getInput()) == transfer.getTier())
        return transfer.emitOpError()
               << "moves a tensor to the " << stringifyMemoryTier(transfer.getTier())
               << ", where it already is";
      if (transfer.getTier() == MemoryTier::host)
        tiers.onHost.insert(transfer.getResult());
      continue;
    }
    if (auto store = dyn_cast<StoreOp>(op)) {
      MemoryTier want = stateTier(store, store.getStateAttr());
      if (tiers.of(store.getValue()) != want)
        return store.emitOpError()
               << "stores a " << stringifyMemoryTier(tiers.of(store.getValue()))
               << " tensor into " << store.getStateAttr() << ", which lives on the "
               << stringifyMemoryTier(want) << "; copy it with dsc.transfer";
      if (want == MemoryTier::host)
        tiers.hostOps.insert(store);
      continue;
    }
    bool anyHost = false, anyDevice = false;
    for (Value operand : op.getOperands())
      (tiers.onHost.contains(operand) ? anyHost : anyDevice) = true;
    if (!anyHost)
      continue;
    if (anyDevice)
      return op.emitOpError()
             << "reads tensors on the host and on the device; copy them to "
                "one tier with dsc.transfer";
    if (isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
            LocalShardOp>(op) ||
        op.hasTrait<::mlir::OpTrait::IsTerminator>())
      return op.emitOpError() << "reads a host tensor, but runs on the device";
    tiers.hostOps.insert(&op);
    for (Value result : op.getResults())
      tiers.onHost.insert(result);
  }
  return tiers;
}
