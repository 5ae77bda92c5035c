//===- CollectiveOps.cpp - dsc.all_gather, dsc.reduce_scatter, dsc.local_shard
//
// The partitioned collectives relate a flat whole tensor of W * S elements
// to its shards of S elements, W being the module's dsc.world_size: the
// verifiers check that relation, which the types alone cannot say.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::dsc;

std::optional<int64_t> mlir::dsc::lookupWorldSize(Operation *op) {
  auto module = isa<ModuleOp>(op) ? cast<ModuleOp>(op)
                                  : op->getParentOfType<ModuleOp>();
  if (!module)
    return std::nullopt;
  if (auto attr = module->getAttrOfType<IntegerAttr>(kWorldSizeAttrName))
    return attr.getInt();
  return std::nullopt;
}

/// Rank-invariant order: a collective runs once per step on every rank only
/// at the top level of a single-block function; in a nested region (a
/// kernel body, a branch, a loop) ranks could issue it a different number
/// of times, or in another order, and hang.
static LogicalResult verifyRankInvariantPlacement(Operation *op) {
  Operation *parent = op->getParentOp();
  if (!parent || !isa<FunctionOpInterface>(parent))
    return op->emitOpError()
           << "is nested in '" << (parent ? parent->getName().getStringRef() : "")
           << "': collectives must be at the top level of a graph, where every "
              "rank issues them in the same order";
  if (!op->getParentRegion()->hasOneBlock())
    return op->emitOpError()
           << "is in a graph of "
           << op->getParentRegion()->getBlocks().size()
           << " blocks: collectives need a single-block graph, where every "
              "rank issues them in the same order";
  return success();
}

LogicalResult AllReduceOp::verify() { return verifyRankInvariantPlacement(*this); }

/// Checks that `shard` and `whole` are 1-D and that `whole` has W times the
/// elements of `shard`.
static LogicalResult verifyShardOfWhole(Operation *op, Type shardType,
                                        Type wholeType) {
  auto shard = cast<RankedTensorType>(shardType);
  auto whole = cast<RankedTensorType>(wholeType);
  if (shard.getRank() != 1 || whole.getRank() != 1)
    return op->emitOpError() << "moves flat tensors (rank 1), got " << shardType
                             << " and " << wholeType;
  std::optional<int64_t> world = lookupWorldSize(op);
  if (!world)
    return op->emitOpError() << "needs the number of ranks: the enclosing "
                                "module has no '"
                             << kWorldSizeAttrName
                             << "' (run --dsc-data-parallel first)";
  if (*world < 1 || whole.getDimSize(0) != *world * shard.getDimSize(0))
    return op->emitOpError()
           << "relates a whole of " << whole.getDimSize(0)
           << " elements to shards of " << shard.getDimSize(0) << ", but "
           << kWorldSizeAttrName << " is " << *world << " (the whole must be "
           << "world size times the shard)";
  return success();
}

LogicalResult AllGatherOp::verify() {
  if (failed(verifyRankInvariantPlacement(*this)))
    return failure();
  return verifyShardOfWhole(*this, getInput().getType(), getType());
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyRankInvariantPlacement(*this)))
    return failure();
  return verifyShardOfWhole(*this, getType(), getInput().getType());
}

LogicalResult LocalShardOp::verify() {
  return verifyShardOfWhole(*this, getType(), getInput().getType());
}
