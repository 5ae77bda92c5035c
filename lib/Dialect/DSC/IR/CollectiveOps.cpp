//===- CollectiveOps.cpp - dsc's collectives and dsc.local_shard -----------===//
//
// The partitioned collectives relate a flat whole tensor of W * S elements
// to its shards of S elements, W being the size of the collective's group;
// dsc.all_to_all splits its leading dimension into one block per rank of
// its group. The verifiers check those relations, which the types alone
// cannot say.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

#include "llvm/ADT/TypeSwitch.h"

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

static ModuleOp enclosingModule(Operation *op) {
  return isa<ModuleOp>(op) ? cast<ModuleOp>(op) : op->getParentOfType<ModuleOp>();
}

/// A mesh dimension recorded on the enclosing module; 1 when absent.
static int64_t lookupMeshSize(Operation *op, StringRef attrName) {
  ModuleOp module = enclosingModule(op);
  if (!module)
    return 1;
  if (auto attr = module->getAttrOfType<IntegerAttr>(attrName))
    return attr.getInt();
  return 1;
}

int64_t mlir::dsc::lookupTensorParallelSize(Operation *op) {
  return lookupMeshSize(op, kTensorParallelSizeAttrName);
}

int64_t mlir::dsc::lookupPipelineParallelSize(Operation *op) {
  return lookupMeshSize(op, kPipelineParallelSizeAttrName);
}

CollectiveGroup mlir::dsc::dataParallelGroup(Operation *op) {
  return lookupTensorParallelSize(op) > 1 || lookupPipelineParallelSize(op) > 1
             ? CollectiveGroup::data
             : CollectiveGroup::world;
}

FailureOr<int64_t> mlir::dsc::lookupGroupSize(Operation *op,
                                              CollectiveGroup group) {
  std::optional<int64_t> world = lookupWorldSize(op);
  if (!world)
    return op->emitOpError() << "needs the number of ranks: the enclosing "
                                "module has no '"
                             << kWorldSizeAttrName
                             << "' (run --dsc-data-parallel first)";
  if (*world < 1)
    return op->emitOpError() << kWorldSizeAttrName << " is " << *world;
  ModuleOp module = enclosingModule(op);
  int64_t experts = 1;
  if (auto attr = module->getAttrOfType<IntegerAttr>(kExpertParallelSizeAttrName))
    experts = attr.getInt();
  if (experts < 1 || *world % experts != 0)
    return op->emitOpError() << kExpertParallelSizeAttrName << " " << experts
                             << " does not divide " << kWorldSizeAttrName << " "
                             << *world;
  int64_t tensor = lookupTensorParallelSize(module);
  if (tensor < 1 || *world % tensor != 0)
    return op->emitOpError() << kTensorParallelSizeAttrName << " " << tensor
                             << " does not divide " << kWorldSizeAttrName << " "
                             << *world;
  int64_t stages = lookupPipelineParallelSize(module);
  if (stages < 1 || *world % (tensor * stages) != 0)
    return op->emitOpError() << kPipelineParallelSizeAttrName << " " << stages
                             << " times " << kTensorParallelSizeAttrName << " "
                             << tensor << " does not divide "
                             << kWorldSizeAttrName << " " << *world;
  switch (group) {
  case CollectiveGroup::world:
    return *world;
  case CollectiveGroup::expert:
    return experts;
  case CollectiveGroup::expert_data:
    // Expert groups run along the data dimension of the tensor-parallel
    // mesh (DeepSpeed-TED), within a pipeline stage: the replicas of a
    // rank's expert slices among its stage's data-parallel ranks.
    if (*world % (experts * tensor * stages) != 0)
      return op->emitOpError()
             << kExpertParallelSizeAttrName << " " << experts << " times "
             << kTensorParallelSizeAttrName << " " << tensor << " times "
             << kPipelineParallelSizeAttrName << " " << stages
             << " does not divide " << kWorldSizeAttrName << " " << *world;
    return *world / (experts * tensor * stages);
  case CollectiveGroup::tensor:
    return tensor;
  case CollectiveGroup::data:
    return *world / (tensor * stages);
  case CollectiveGroup::pipeline:
    return stages;
  }
  llvm_unreachable("unknown collective group");
}

std::optional<CollectiveGroup> mlir::dsc::getCollectiveGroup(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<CollectiveGroup>>(op)
      .Case<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp>(
          [](auto collective) { return collective.getGroup(); })
      .Default([](Operation *) { return std::nullopt; });
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

LogicalResult mlir::dsc::verifyPipelineStages(Operation *op,
                                              CollectiveGroup group,
                                              ArrayRef<int64_t> stages) {
  if (group != CollectiveGroup::pipeline)
    return op->emitOpError() << "names stages, but sums over the "
                             << stringifyCollectiveGroup(group)
                             << " group: stages are those of the pipeline group";
  FailureOr<int64_t> size = lookupGroupSize(op, CollectiveGroup::pipeline);
  if (failed(size))
    return failure();
  if (stages.size() < 2)
    return op->emitOpError() << "names " << stages.size()
                             << " stage; a sum needs at least 2";
  for (auto [i, stage] : llvm::enumerate(stages))
    if (stage < 0 || stage >= *size || (i > 0 && stage <= stages[i - 1]))
      return op->emitOpError()
             << "names stage " << stage << " out of order or outside the "
             << *size << " stages of the pipeline group";
  ModuleOp module = op->getParentOfType<ModuleOp>();
  if (auto own = module
                     ? module->getAttrOfType<IntegerAttr>(kPipelineStageAttrName)
                     : IntegerAttr();
      own && !llvm::is_contained(stages, own.getInt()))
    return op->emitOpError() << "sums over stages that leave out this "
                                "module's stage "
                             << own.getInt();
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (failed(verifyRankInvariantPlacement(*this)))
    return failure();
  if (getGroup() != CollectiveGroup::world &&
      failed(lookupGroupSize(*this, getGroup())))
    return failure();
  if (auto stages = getStagesAttr()) {
    if (getMaximum())
      return emitOpError("takes the maximum over stages; only sums name them");
    return verifyPipelineStages(*this, getGroup(), stages.asArrayRef());
  }
  return success();
}

/// A transfer between pipeline stages: placed like a collective (the stages
/// of a pipeline issue them in one static order), in a module whose mesh
/// has stages to send to.
static LogicalResult verifyPipelineTransfer(Operation *op, int64_t microBatch) {
  if (failed(verifyRankInvariantPlacement(op)))
    return failure();
  if (microBatch < 0)
    return op->emitOpError() << "names micro-batch " << microBatch
                             << ", which must be non-negative";
  FailureOr<int64_t> stages = lookupGroupSize(op, CollectiveGroup::pipeline);
  if (failed(stages))
    return failure();
  if (*stages < 2)
    return op->emitOpError() << "needs a pipeline of at least 2 stages, but "
                             << kPipelineParallelSizeAttrName << " is "
                             << *stages;
  return success();
}

LogicalResult PipelineSendOp::verify() {
  return verifyPipelineTransfer(*this, getMicroBatch());
}

LogicalResult PipelineRecvOp::verify() {
  return verifyPipelineTransfer(*this, getMicroBatch());
}

/// Checks that `shard` and `whole` are 1-D and that `whole` has the
/// group's size times the elements of `shard`.
static LogicalResult verifyShardOfWhole(Operation *op, Type shardType,
                                        Type wholeType, CollectiveGroup group) {
  auto shard = cast<RankedTensorType>(shardType);
  auto whole = cast<RankedTensorType>(wholeType);
  if (shard.getRank() != 1 || whole.getRank() != 1)
    return op->emitOpError() << "moves flat tensors (rank 1), got " << shardType
                             << " and " << wholeType;
  FailureOr<int64_t> ranks = lookupGroupSize(op, group);
  if (failed(ranks))
    return failure();
  if (whole.getDimSize(0) != *ranks * shard.getDimSize(0))
    return op->emitOpError()
           << "relates a whole of " << whole.getDimSize(0)
           << " elements to shards of " << shard.getDimSize(0) << ", but its "
           << stringifyCollectiveGroup(group) << " group has " << *ranks
           << " ranks (the whole must be the group's size times the shard)";
  return success();
}

LogicalResult AllGatherOp::verify() {
  if (failed(verifyRankInvariantPlacement(*this)))
    return failure();
  return verifyShardOfWhole(*this, getInput().getType(), getType(), getGroup());
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyRankInvariantPlacement(*this)))
    return failure();
  return verifyShardOfWhole(*this, getType(), getInput().getType(), getGroup());
}

LogicalResult AllToAllOp::verify() {
  if (failed(verifyRankInvariantPlacement(*this)))
    return failure();
  auto type = cast<RankedTensorType>(getType());
  FailureOr<int64_t> ranks = lookupGroupSize(*this, getGroup());
  if (failed(ranks))
    return failure();
  if (type.getRank() == 0 || type.getDimSize(0) % *ranks != 0)
    return emitOpError() << "exchanges one block of its leading dimension with "
                            "each of the "
                         << *ranks << " ranks of its "
                         << stringifyCollectiveGroup(getGroup())
                         << " group, but its operand is " << type;
  return success();
}

LogicalResult LocalShardOp::verify() {
  return verifyShardOfWhole(*this, getType(), getInput().getType(),
                            getGroup());
}
