//===- StateOps.cpp - dsc.state, dsc.load, dsc.constant --------------------===//

#include "InferError.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Support/TensorSize.h"

#include <cmath>

using namespace mlir;
using namespace mlir::dsc;

/// The fill rules of parameters added by rewrites: one rule at most, a
/// repeat of a named tensor along a leading dimension, or a uniform draw
/// with a positive finite bound and its seed.
LogicalResult StateOp::verifyInitRule() {
  bool repeats = bool(getInitFrom()), draws = bool(getInitUniform());
  if (!repeats && !draws) {
    if (getInitSeed())
      return emitOpError() << "@" << getSymName()
                           << " has init_seed without init_uniform";
    return success();
  }
  if (getRole() != StateRole::parameter && getRole() != StateRole::master)
    return emitOpError() << "@" << getSymName()
                         << " has an init rule, which only parameters and "
                            "their master weights take";
  if (repeats && draws)
    return emitOpError() << "@" << getSymName()
                         << " has both init_from and init_uniform";
  if (repeats && (getInitFrom()->empty() || *getInitFrom() == getSymName()))
    return emitOpError() << "@" << getSymName()
                         << " must repeat another tensor, not '"
                         << *getInitFrom() << "'";
  if (repeats && getWholeType().getRank() < 1)
    return emitOpError() << "@" << getSymName()
                         << " repeats a tensor along its leading dimension, "
                            "so it needs one";
  if (draws) {
    double bound = getInitUniform()->convertToDouble();
    if (!(bound > 0) || !std::isfinite(bound))
      return emitOpError() << "@" << getSymName()
                           << " needs a positive finite init_uniform bound, "
                              "got "
                           << bound;
  }
  if (draws && !isa<FloatType>(getWholeType().getElementType()))
    return emitOpError() << "@" << getSymName()
                         << " draws uniform values, so it must be a float "
                            "tensor";
  return success();
}

LogicalResult StateOp::verify() {
  RankedTensorType type = getTensorType();
  if (!checkedByteSize(type.getShape(),
                       type.getElementType().getIntOrFloatBitWidth()))
    return emitOpError() << "@" << getSymName() << " of type " << type
                         << " has more elements or bytes than fit in int64";
  // The runtime gives a master weight that a weights file lacks the
  // parameter it is named after (Artifact.h).
  if (getRole() == StateRole::master &&
      (!isa<FloatType>(type.getElementType()) ||
       !getSymName().ends_with(".master") || getSymName() == ".master"))
    return emitOpError() << "@" << getSymName()
                         << " is a master weight: it must be a float tensor "
                            "named '<parameter>.master'";
  // dsc-run finds a teacher's weight in the teacher's own file under the
  // name after the prefix.
  if (getRole() == StateRole::teacher &&
      (!getSymName().starts_with(kTeacherPrefix) ||
       getSymName() == kTeacherPrefix))
    return emitOpError() << "@" << getSymName()
                         << " is a teacher's weight: it must be named '"
                         << kTeacherPrefix << "<name in the teacher's model>'";
  if (failed(verifyInitRule()))
    return failure();
  // Only the optimizer's host update touches host memory and the NVMe files
  // read into it (ZeRO-Offload, ZeRO-Infinity), and the copies of
  // parameters to the device (offload_param; ZeRO-Inference streams a whole
  // model's), a distillation teacher's partitions with them: the forward and
  // backward pass read activations and buffers on the device.
  bool partitionedTeacher =
      getRole() == StateRole::teacher && getPartitionOf().has_value();
  if (getTier() != MemoryTier::device && getRole() != StateRole::optimizer &&
      getRole() != StateRole::master && getRole() != StateRole::parameter &&
      !partitionedTeacher)
    return emitOpError() << "@" << getSymName() << " is a "
                         << stringifyStateRole(getRole())
                         << " state: only optimizer state, master weights "
                            "and parameters or partitioned teacher weights "
                            "may live on the "
                         << stringifyMemoryTier(getTier());
  if (getPartitionBlocks() && getPartitionGroup() != CollectiveGroup::tensor &&
      getPartitionGroup() != CollectiveGroup::data &&
      getPartitionGroup() != CollectiveGroup::expert &&
      getPartitionGroup() != CollectiveGroup::expert_data)
    return emitOpError() << "@" << getSymName()
                         << " has partition_blocks, which only a slice over "
                            "a tensor group (or its partition over a data, "
                            "an expert or an expert-data group) takes";
  std::optional<ArrayRef<int64_t>> whole = getPartitionOf();
  if (!whole) {
    if (getPartitionGroup() != CollectiveGroup::world)
      return emitOpError() << "@" << getSymName()
                           << " names a partition group but no partition_of";
    return success();
  }
  if (llvm::any_of(*whole, [](int64_t d) { return d < 0; }))
    return emitOpError() << "@" << getSymName()
                         << " is a partition of a shape with a negative "
                            "dimension";
  std::optional<int64_t> numel = checkedByteSize(*whole, 8);
  if (!numel)
    return emitOpError() << "@" << getSymName()
                         << " is a partition of a shape too large for int64";
  int64_t elements = getWholeType().getNumElements();
  switch (getPartitionGroup()) {
  case CollectiveGroup::world: {
    std::optional<int64_t> world = lookupWorldSize(*this);
    if (!world || *world < 1)
      return emitOpError() << "@" << getSymName()
                           << " is partitioned, but the module has no positive '"
                           << kWorldSizeAttrName << "'";
    int64_t shard = shardSize(elements, *world);
    if (type.getRank() != 1 || type.getDimSize(0) != shard)
      return emitOpError() << "@" << getSymName() << " partitions "
                           << getWholeType() << " over " << *world
                           << " ranks, so it must be "
                           << RankedTensorType::get({shard}, type.getElementType())
                           << ", not " << type;
    return success();
  }
  case CollectiveGroup::expert: {
    FailureOr<int64_t> ranks = lookupGroupSize(*this, CollectiveGroup::expert);
    if (failed(ranks))
      return failure();
    SmallVector<int64_t> local(*whole);
    if (local.empty() || local[0] % *ranks != 0)
      return emitOpError() << "@" << getSymName() << " partitions "
                           << getWholeType() << " over the " << *ranks
                           << " ranks of an expert group, which must divide "
                              "its leading dimension";
    local[0] /= *ranks;
    if (std::optional<int64_t> blocks = getPartitionBlocks()) {
      // Experts whose feed-forward block tensor parallelism splits: the
      // rank's experts of its tensor slice, [B, T, C] with B a multiple of
      // the experts (whole blocks per expert).
      FailureOr<int64_t> tensor = lookupGroupSize(*this, CollectiveGroup::tensor);
      if (failed(tensor))
        return failure();
      if (*blocks < 1 || *blocks % (*whole)[0] != 0 ||
          elements % (*blocks * *tensor) != 0 ||
          type.getRank() != int64_t(whole->size()) || type.getDimSize(0) != local[0] ||
          type.getNumElements() * *tensor * *ranks != elements)
        return emitOpError() << "@" << getSymName() << " holds " << type
                             << " of " << getWholeType() << " in "
                             << *blocks << " blocks over an expert group of "
                             << *ranks << " and a tensor group of " << *tensor
                             << " ranks, which does not tile it (the blocks "
                                "must be a multiple of its experts)";
      return success();
    }
    if (type.getShape() != ArrayRef<int64_t>(local))
      return emitOpError() << "@" << getSymName() << " partitions "
                           << getWholeType() << " over the " << *ranks
                           << " ranks of an expert group, so it must be "
                           << RankedTensorType::get(local, type.getElementType())
                           << ", not " << type;
    return success();
  }
  case CollectiveGroup::expert_data: {
    // An expert's rank-local experts (as for `expert`), partitioned over
    // the expert-data group in shards (as for `world`).
    FailureOr<int64_t> experts = lookupGroupSize(*this, CollectiveGroup::expert);
    if (failed(experts))
      return failure();
    FailureOr<int64_t> replicas =
        lookupGroupSize(*this, CollectiveGroup::expert_data);
    if (failed(replicas))
      return failure();
    if (whole->empty() || (*whole)[0] % *experts != 0)
      return emitOpError() << "@" << getSymName() << " partitions "
                           << getWholeType() << " over the " << *experts
                           << " ranks of an expert group, which must divide "
                              "its leading dimension";
    int64_t local = elements / *experts;
    if (std::optional<int64_t> blocks = getPartitionBlocks()) {
      // Experts split by tensor parallelism too (DeepSpeed-TED): the
      // rank's experts of its tensor slice are what is partitioned.
      FailureOr<int64_t> tensor =
          lookupGroupSize(*this, CollectiveGroup::tensor);
      if (failed(tensor))
        return failure();
      if (*blocks < 1 || *blocks % (*whole)[0] != 0 ||
          elements % (*blocks * *tensor) != 0)
        return emitOpError() << "@" << getSymName() << " has partition_blocks "
                             << *blocks << ", which must be a multiple of its "
                             << (*whole)[0] << " experts and divide its "
                             << elements << " elements into " << *tensor
                             << " slices per block";
      local /= *tensor;
    }
    int64_t shard = shardSize(local, *replicas);
    if (type.getRank() != 1 || type.getDimSize(0) != shard)
      return emitOpError() << "@" << getSymName() << " partitions a rank's "
                           << local << " elements of " << getWholeType()
                           << " over the " << *replicas
                           << " ranks of an expert-data group, so it must be "
                           << RankedTensorType::get({shard}, type.getElementType())
                           << ", not " << type;
    return success();
  }
  case CollectiveGroup::tensor:
    return verifyTensorSplit(*whole);
  case CollectiveGroup::data:
    return verifyDataPartition(elements);
  case CollectiveGroup::pipeline:
    return emitOpError() << "@" << getSymName()
                         << " is partitioned over the pipeline group; states "
                            "are partitioned over the world, an expert, "
                            "expert-data, tensor or data group";
  }
  llvm_unreachable("unknown collective group");
}

/// ZeRO's partition over a data group of D = W / T ranks: of the whole
/// (replicated on the tensor group), or with partition_blocks of this
/// rank's tensor-parallel slice (the whole over T, its blocks flattened in
/// order), in shards as over the world.
LogicalResult StateOp::verifyDataPartition(int64_t elements) {
  FailureOr<int64_t> tensor = lookupGroupSize(*this, CollectiveGroup::tensor);
  FailureOr<int64_t> replicas = lookupGroupSize(*this, CollectiveGroup::data);
  if (failed(tensor) || failed(replicas))
    return failure();
  int64_t local = elements;
  if (std::optional<int64_t> blocks = getPartitionBlocks()) {
    if (*blocks < 1 || elements % (*blocks * *tensor) != 0)
      return emitOpError() << "@" << getSymName() << " has partition_blocks "
                           << *blocks << ", which must be positive and divide "
                           << "its " << elements << " elements into "
                           << *tensor << " slices per block";
    local = elements / *tensor;
  }
  RankedTensorType type = getTensorType();
  int64_t shard = shardSize(local, *replicas);
  if (type.getRank() != 1 || type.getDimSize(0) != shard)
    return emitOpError() << "@" << getSymName() << " partitions "
                         << (getPartitionBlocks() ? "a rank's slice of "
                                                  : "")
                         << local << " elements of " << getWholeType()
                         << " over the " << *replicas
                         << " ranks of a data group, so it must be "
                         << RankedTensorType::get({shard}, type.getElementType())
                         << ", not " << type;
  return success();
}

/// A tensor-parallel slice: the whole shape with one dimension divided by
/// T, and blocks that divide the whole into B * T equal chunks.
LogicalResult StateOp::verifyTensorSplit(ArrayRef<int64_t> whole) {
  FailureOr<int64_t> ranks = lookupGroupSize(*this, CollectiveGroup::tensor);
  if (failed(ranks))
    return failure();
  RankedTensorType type = getTensorType();
  int64_t blocks = getPartitionBlocks().value_or(1);
  ArrayRef<int64_t> local = type.getShape();
  int64_t numel = getWholeType().getNumElements();
  auto differing = [&] {
    int n = 0;
    for (auto [l, w] : llvm::zip_equal(local, whole))
      n += l != w;
    return n;
  };
  if (local.size() != whole.size() || differing() > 1 ||
      type.getNumElements() * *ranks != numel)
    return emitOpError() << "@" << getSymName() << " slices " << getWholeType()
                         << " over the " << *ranks
                         << " ranks of a tensor group, so it must be its shape "
                            "with one dimension divided by "
                         << *ranks << ", not " << type;
  if (blocks < 1 || numel % (blocks * *ranks) != 0)
    return emitOpError() << "@" << getSymName() << " has partition_blocks "
                         << blocks << ", which must be positive and divide its "
                         << numel << " elements into " << *ranks
                         << " slices per block";
  return success();
}

RankedTensorType StateOp::getWholeType() {
  RankedTensorType type = getTensorType();
  if (std::optional<ArrayRef<int64_t>> whole = getPartitionOf())
    return RankedTensorType::get(*whole, type.getElementType());
  return type;
}

/// The dsc.state `name` that `op` reads or writes (`verb`), or an error.
static FailureOr<StateOp> lookupState(Operation *op, SymbolTableCollection &table,
                                      FlatSymbolRefAttr name, StringRef verb) {
  Operation *symbol = table.lookupNearestSymbolFrom(op, name);
  if (!symbol)
    return op->emitOpError() << verb << " " << name << ", which is not declared";
  auto state = dyn_cast<StateOp>(symbol);
  if (!state)
    return op->emitOpError() << verb << " " << name << ", which is a '"
                             << symbol->getName() << "', not a 'dsc.state'";
  return state;
}

LogicalResult LoadOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<StateOp> state =
      lookupState(*this, symbolTable, getStateAttr(), "reads");
  if (failed(state))
    return failure();
  if (state->getType() != getType())
    return emitOpError() << "result type " << getType()
                         << " differs from the declared type "
                         << state->getType() << " of " << getStateAttr();
  return success();
}

LogicalResult StoreOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<StateOp> state =
      lookupState(*this, symbolTable, getStateAttr(), "writes");
  if (failed(state))
    return failure();
  if (state->getType() != getValue().getType())
    return emitOpError() << "value type " << getValue().getType()
                         << " differs from the declared type "
                         << state->getType() << " of " << getStateAttr();
  // A tensor just copied to a tier must be stored in a state of that tier
  // (the whole graph's tiers: MemoryTiers.h).
  // (An NVMe state takes host tensors.)
  MemoryTier takes = state->getTier() == MemoryTier::nvme ? MemoryTier::host
                                                          : state->getTier();
  if (auto transfer = getValue().getDefiningOp<TransferOp>();
      transfer && transfer.getTier() != takes)
    return emitOpError() << "stores a tensor copied to the "
                         << stringifyMemoryTier(transfer.getTier())
                         << " into " << getStateAttr() << ", which lives on the "
                         << stringifyMemoryTier(state->getTier());
  if (state->getRole() == StateRole::teacher)
    return emitOpError() << "writes " << getStateAttr()
                         << ", a teacher's weight, which is frozen";
  // At most one store per state in this block. The block's last store
  // checks them all at once: a scan from every store would make verifying a
  // step (thousands of stores) quadratic.
  for (Operation *op = getOperation()->getNextNode(); op; op = op->getNextNode())
    if (isa<StoreOp>(op))
      return success();
  DenseSet<Attribute> written;
  for (auto store : getOperation()->getBlock()->getOps<StoreOp>())
    if (!written.insert(store.getStateAttr()).second)
      return store.emitOpError()
             << "writes " << store.getStateAttr()
             << " a second time; a state is written at most once per graph";
  return success();
}

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> location,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  auto value = adaptor.getValueAttr();
  if (!value)
    return InferError(location, getOperationName())(
        "requires an elements attribute 'value'");
  inferred.push_back(value.getType());
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }

// A copy to the tier its operand was just copied to, or was loaded from,
// moves nothing (the whole graph's tiers: MemoryTiers.h).
LogicalResult TransferOp::verify() {
  // NVMe holds states, not tensors: a state there is read into the host by
  // its dsc.load and written by its dsc.store.
  if (getTier() == MemoryTier::nvme)
    return emitOpError() << "moves a tensor to nvme, which holds states only; "
                            "store it into a state on nvme";
  auto previous = getInput().getDefiningOp<TransferOp>();
  if (previous && previous.getTier() == getTier())
    return emitOpError() << "moves a tensor to the "
                         << stringifyMemoryTier(getTier())
                         << ", where the transfer before it put it";
  return success();
}
