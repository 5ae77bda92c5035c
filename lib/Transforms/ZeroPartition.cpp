//===- ZeroPartition.cpp - --dsc-zero --------------------------------------===//
//
// ZeRO stages 1 and 2 as a rewrite of the training step that --dsc-optimizer
// built. The optimizer update is elementwise, so each rank can compute it on
// its own shard of every tensor: the pass re-creates the chain of
// elementwise ops that ends at each dsc.store at shard shape ("sharding" a
// value), starting from the shards of its leaves:
//   - a load of a partitioned optimizer state: the state itself, retyped;
//   - a gradient's dsc.all_reduce (stage 2): a dsc.reduce_scatter of it;
//   - any other tensor (the parameter, a stage-1 gradient): this rank's
//     dsc.local_shard of it;
//   - scalars (step, bias corrections, clipping coefficient): themselves.
// Parameters are all-gathered from their updated shards and stored whole;
// in mixed precision that is the 16-bit parameter, rounded from the updated
// shard of its (partitioned) fp32 master weight, so it is gathered in 16
// bits.
//
// The multi-tensor update (dsc.adam_update, dsc.sgd_update) is sharded as a
// whole: each of its per-tensor operands is replaced by its shard.
//
// In stage 2 the whole gradient no longer exists, so its other readers are
// sharded too: elementwise ones at shard shape, and a full reduce_sum or a
// dsc.sum_squares (the squared norm of gradient clipping, the overflow
// test of loss scaling) becomes a rank-partial sum, partial sums add up
// locally, and one dsc.all_reduce makes the total global where a reader
// needs it.
//
// Experts split over their expert group (expert parallelism) are
// partitioned as DeepSpeed partitions them: over their expert-data group,
// the D = W / P ranks that hold the same experts, instead of the world.
// Each rank's experts (the declared [E / P, ...] state) play the part of
// the whole tensor, and every collective, dsc.local_shard and state the
// pass makes for them is over `expert_data`. Their gradients' squared sums
// are then partial over that group, and the sum over the expert group that
// the optimizer put on them is a sum over the world of those partials. With
// D = 1 (P = W) there is nothing to partition them over: they stay as
// they are.
//
// Under tensor parallelism (T > 1) the replicas of a state are the D = W / T
// ranks of its data group, as Megatron's distributed optimizer partitions
// them: every state is partitioned over `data`, a tensor-parallel slice's
// being the rank's slice (the declared, local shape) and any other's the
// whole tensor. The gradients are already summed over `data`; a slice's
// squared sum, partial over `data`, is summed by the optimizer over
// `tensor`, which makes it a partial of the world. With D = 1 (T = W)
// nothing is partitioned.
//
// Experts under tensor parallelism (DeepSpeed-TED) are both: each rank's
// experts of its tensor slice (the declared state) are partitioned over
// its expert-data group of W / (P * T) ranks. There the expert and
// expert-data groups together are the data group, not the world: the
// experts' squared sums, partial over `expert_data`, summed over `expert`
// are a partial of `data`, which the optimizer's sum of the slices over
// `tensor` makes a partial of the world.
//
//===----------------------------------------------------------------------===//

#include "BlockNames.h"

#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Dialect/DSC/IR/GraphUtils.h"
#include "dsc/Support/TensorSize.h"
#include "dsc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_ZEROPARTITION
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

static RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The group ZeRO partitions a state that is not an expert's over: the
/// world, or under tensor or pipeline parallelism the data group (the ranks
/// holding the same slice of the same stage).
static CollectiveGroup partitionGroupOf(StateOp state) {
  return dataParallelGroup(state);
}

namespace {
/// Rewrites one graph (a single block) for a stage >= 1.
class Partitioner {
public:
  Partitioner(func::FuncOp func, int64_t worldSize, int64_t expertDataSize,
              int64_t dataSize, int64_t stage,
              const DenseMap<StringAttr, StateOp> &partitioned)
      : func(func), world(worldSize), expertData(expertDataSize),
        data(dataSize), stage(stage), partitioned(partitioned),
        b(func.getContext()) {}

  LogicalResult run() {
    Block &body = func.getBody().front();
    SmallVector<StoreOp> stores;
    for (auto store : body.getOps<StoreOp>()) {
      StringAttr name = store.getStateAttr().getAttr();
      auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(
          func, store.getStateAttr());
      // Experts alone in their expert-data group stay whole, and so does
      // their update.
      if (state && state.getPartitionGroup() == CollectiveGroup::expert &&
          expertData <= 1)
        continue;
      if (partitioned.contains(name) ||
          (state && state.getRole() == StateRole::parameter) ||
          store.getValue().getDefiningOp<MultiTensorUpdateOpInterface>())
        stores.push_back(store);
    }
    for (StoreOp store : stores)
      if (failed(rewriteStore(store)))
        return failure();
    if (failed(shardGradientReaders()) || failed(globalizePartialSums(body)))
      return failure();
    for (StoreOp store : stores)
      store.erase();
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body))) {
      bool collective = replaced.contains(&op);
      if (collective ? op.use_empty() : isOpTriviallyDead(&op)) {
        replaced.remove(&op);
        op.erase();
      }
    }
    // The whole update is gone now: what still reads a whole parameter is
    // the forward and backward pass.
    if (stage >= 3)
      gatherParameters(body);
    for (Operation *op : replaced) // still there: something reads it whole
      return op->emitError()
             << "ZeRO stage " << stage
             << " partitions this gradient, but it is still read whole by '"
             << (*op->getUsers().begin())->getName() << "'";
    for (auto load : body.getOps<LoadOp>())
      if (partitioned.contains(load.getStateAttr().getAttr()) &&
          !shardLoads.contains(load))
        return load.emitError()
               << "reads partitioned state " << load.getStateAttr()
               << " whole, outside the optimizer's update";
    return success();
  }

private:
  /// The ranks of `group`: the world, an expert-data or a data group.
  int64_t ranks(CollectiveGroup group) const {
    return group == CollectiveGroup::expert_data ? expertData
           : group == CollectiveGroup::data      ? data
                                                 : world;
  }

  /// The group a state is partitioned over: an expert's over its
  /// expert-data group, any other over the world, or under tensor
  /// parallelism over its data group.
  static CollectiveGroup groupOf(StateOp state) {
    if (state && state.getPartitionGroup() == CollectiveGroup::expert)
      return CollectiveGroup::expert_data;
    return state ? partitionGroupOf(state) : CollectiveGroup::world;
  }
  CollectiveGroup groupOf(FlatSymbolRefAttr name) {
    return groupOf(SymbolTable::lookupNearestSymbolFrom<StateOp>(func, name));
  }

  RankedTensorType shardType(Type wholeType, CollectiveGroup group) {
    auto whole = cast<RankedTensorType>(wholeType);
    return RankedTensorType::get(
        {shardSize(whole.getNumElements(), ranks(group))},
        whole.getElementType());
  }

  /// `whole` flattened and padded with zeros to W * S elements, W the
  /// ranks of `group`.
  Value flatPadded(Location loc, Value whole, CollectiveGroup group) {
    RankedTensorType type = tensorType(whole);
    int64_t n = type.getNumElements();
    int64_t padded = shardSize(n, ranks(group)) * ranks(group);
    Type elem = type.getElementType();
    Value flat = whole;
    if (type.getRank() != 1)
      flat = ReshapeOp::create(b, loc, RankedTensorType::get({n}, elem), whole);
    if (padded == n)
      return flat;
    Attribute zero = isa<FloatType>(elem) ? Attribute(b.getFloatAttr(elem, 0.0))
                                          : Attribute(b.getIntegerAttr(elem, 0));
    Value scalar = ConstantOp::create(
        b, loc, DenseElementsAttr::get(RankedTensorType::get({}, elem), zero));
    Value zeros = BroadcastOp::create(
        b, loc, RankedTensorType::get({padded - n}, elem), scalar);
    return ConcatOp::create(b, loc, ValueRange{flat, zeros}, 0);
  }

  /// The whole tensor of `type` from the W * S elements of its gathered
  /// shards: the padding cut off, the shape restored.
  Value unpadded(Location loc, Value gathered, RankedTensorType type) {
    int64_t n = type.getNumElements();
    Value flat = gathered;
    if (tensorType(gathered).getNumElements() != n)
      flat = SliceOp::create(b, loc, gathered, 0, 0, n, 1);
    if (type.getRank() == 1)
      return flat;
    return ReshapeOp::create(b, loc, type, flat);
  }

  /// An elementwise op whose operands are `whole`-shaped or scalars: it
  /// can run on shards.
  static bool isShardable(Operation *op) {
    if (!op || !isElementwise(op) || op->getNumResults() != 1)
      return false;
    ArrayRef<int64_t> shape = tensorType(op->getResult(0)).getShape();
    return llvm::all_of(op->getOperands(), [&](Value operand) {
      RankedTensorType t = tensorType(operand);
      return t.getShape() == shape || t.getRank() == 0;
    });
  }

  /// This rank's shard over `group` of the whole tensor `v`, built once
  /// (a value is a whole of one group only: an expert's rank-local
  /// experts, or a tensor of the world's).
  Value shard(Value v, CollectiveGroup group) {
    if (Value known = shards.lookup(v))
      return known;
    Location loc = v.getLoc();
    Operation *def = v.getDefiningOp();
    Value result;
    if (auto load = dyn_cast_or_null<LoadOp>(def);
        load && partitioned.contains(load.getStateAttr().getAttr())) {
      b.setInsertionPoint(load);
      auto shardLoad = LoadOp::create(b, loc, shardType(load.getType(), group),
                                      load.getStateAttr());
      shardLoads.insert(shardLoad);
      result = shardLoad;
    } else if (auto allReduce = dyn_cast_or_null<AllReduceOp>(def);
               allReduce && stage >= 2 && allReduce.getGroup() == group) {
      // The gradient's sum goes to the owner of each shard only.
      b.setInsertionPoint(allReduce);
      Value flat = flatPadded(loc, allReduce.getInput(), group);
      result = ranks(group) > 1
                   ? ReduceScatterOp::create(b, loc, shardType(v.getType(), group),
                                             flat, group)
                         .getResult()
                   : flat;
      replaced.insert(allReduce);
      scattered.push_back({allReduce.getResult(), group});
    } else if (auto update = dyn_cast_or_null<MultiTensorUpdateOpInterface>(def)) {
      shardUpdate(update, group);
      return shards.lookup(v);
    } else if (isShardable(def)) {
      SmallVector<Value> operands;
      for (Value operand : def->getOperands())
        operands.push_back(tensorType(operand).getRank() == 0
                               ? operand
                               : shard(operand, group));
      b.setInsertionPoint(def);
      Operation *clone = b.clone(*def);
      clone->setOperands(operands);
      clone->getResult(0).setType(shardType(v.getType(), group));
      result = clone->getResult(0);
    } else {
      b.setInsertionPointAfterValue(v);
      Value flat = flatPadded(loc, v, group);
      result = ranks(group) > 1
                   ? LocalShardOp::create(b, loc, shardType(v.getType(), group),
                                          flat, group)
                         .getResult()
                   : flat;
    }
    shards[v] = result;
    return result;
  }

  /// A multi-tensor optimizer update on shards: every per-tensor operand
  /// replaced by its shard (whatever its rank), the shared scalars kept;
  /// every result is then the shard of the whole one. The optimizer gives
  /// experts updates of their own, so all of an update's tensors are
  /// partitioned over one group.
  void shardUpdate(MultiTensorUpdateOpInterface update, CollectiveGroup group) {
    Operation *op = update;
    SmallVector<Value> operands(op->getOperands());
    for (unsigned i = 0; i < update.getNumTensorOperands(); ++i)
      operands[i] = shard(operands[i], group);
    b.setInsertionPoint(op);
    Operation *clone = b.clone(*op);
    clone->setOperands(operands);
    for (auto [whole, part] : llvm::zip(op->getResults(), clone->getResults())) {
      part.setType(shardType(whole.getType(), group));
      shards[whole] = part;
    }
  }

  /// Stage 3: the forward and the backward pass read whole parameters,
  /// which no rank holds any more. Each whole read is gathered from the
  /// shards just before its first use in the forward pass (up to the op
  /// that computes the graph's last output) and again just before its first
  /// use in the backward pass; the gathered buffer is released after its
  /// last use (the memory plan reuses it). An expert's gathers go before
  /// the first use, in that phase, of any expert of its layer (expertBlock):
  /// a layer's local experts are gathered together, in declaration order,
  /// which --dsc-bucket-collectives merges into one bucket.
  void gatherParameters(Block &body) {
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    Operation *forwardEnd =
        lastProducer(ret.getOperands(), [](Operation *op) { return op; });
    SmallVector<LoadOp> wholeLoads;
    for (auto load : body.getOps<LoadOp>())
      if (partitioned.contains(load.getStateAttr().getAttr()) &&
          !shardLoads.contains(load))
        wholeLoads.push_back(load);
    // Uses by phase (forward, backward), and each phase's first user.
    struct Phase {
      SmallVector<OpOperand *> uses;
      Operation *first = nullptr;
    };
    SmallVector<std::array<Phase, 2>> phases(wholeLoads.size());
    SmallVector<StringRef> names;
    for (auto [name, state] : partitioned)
      names.push_back(name.getValue());
    BlockNames blocks(names);
    llvm::StringMap<std::array<Operation *, 2>> firstOfBlock;
    auto earlier = [](Operation *a, Operation *b) {
      return !a || (b && b->isBeforeInBlock(a)) ? b : a;
    };
    for (auto [load, phase] : llvm::zip(wholeLoads, phases)) {
      for (OpOperand &use : load->getUses()) {
        Operation *user = body.findAncestorOpInBlock(*use.getOwner());
        bool inForward = forwardEnd && (user == forwardEnd ||
                                        user->isBeforeInBlock(forwardEnd));
        Phase &p = phase[inForward ? 0 : 1];
        p.uses.push_back(&use);
        p.first = earlier(p.first, user);
      }
      if (StringRef block = expertBlock(load, blocks); !block.empty())
        for (int i : {0, 1})
          firstOfBlock[block][i] =
              earlier(firstOfBlock[block][i], phase[i].first);
    }
    // A block's gathers are issued back to back, their unpadding after the
    // last of them: nothing between them to end a bucket.
    SmallVector<std::tuple<Operation *, Value, size_t, int>> unpadLater;
    for (auto [index, load, phase] :
         llvm::enumerate(wholeLoads, phases)) {
      StringRef block = expertBlock(load, blocks);
      CollectiveGroup group = groupOf(load.getStateAttr());
      for (int i : {0, 1}) {
        if (phase[i].uses.empty())
          continue;
        Operation *at = block.empty() ? phase[i].first : firstOfBlock[block][i];
        b.setInsertionPoint(at);
        Location loc = load.getLoc();
        RankedTensorType whole = load.getType();
        auto shardLoad = LoadOp::create(b, loc, shardType(whole, group),
                                        load.getStateAttr());
        shardLoads.insert(shardLoad);
        Value gathered = gatherFlat(loc, shardLoad, whole, group);
        if (!block.empty()) {
          unpadLater.push_back({at, gathered, index, i});
          continue;
        }
        gathered = unpadded(loc, gathered, whole);
        for (OpOperand *use : phase[i].uses)
          use->set(gathered);
      }
    }
    for (auto [at, gathered, index, i] : unpadLater) {
      b.setInsertionPoint(at);
      LoadOp load = wholeLoads[index];
      Value whole = unpadded(load.getLoc(), gathered, load.getType());
      for (OpOperand *use : phases[index][i].uses)
        use->set(whole);
    }
    for (LoadOp load : wholeLoads)
      load.erase();
  }

  /// The layer of the expert that `load` reads (`h.3.mlp.experts`; for
  /// experts named otherwise, their block `h.3`), or "" for a state that
  /// is not an expert's or in no layer.
  StringRef expertBlock(LoadOp load, const BlockNames &blocks) {
    if (groupOf(load.getStateAttr()) != CollectiveGroup::expert_data)
      return "";
    StringRef name = load.getStateAttr().getValue();
    if (StringRef layer = expertLayerOf(name); !layer.empty())
      return layer;
    return blocks.blockOf(name);
  }

  /// The module path of the stacked experts `name` is a state of: the name
  /// up to its last `experts` component (`P.experts` of
  /// `P.experts.c_fc.weight`, as --dsc-moe and dsc.nn.MoE name them), or
  /// "". It identifies the layer whatever the rest of the model: a
  /// one-block model has no repeated block for BlockNames to find.
  static StringRef expertLayerOf(StringRef name) {
    StringRef layer;
    // Components before the last dot (the last one names a tensor).
    for (size_t start = 0, dot; (dot = name.find('.', start)) != StringRef::npos;
         start = dot + 1)
      if (name.slice(start, dot) == "experts")
        layer = name.take_front(dot);
    return layer;
  }

  /// The shards of every rank of `group`, this rank's `part` among them:
  /// the whole tensor of type `whole`, flat and padded.
  Value gatherFlat(Location loc, Value part, RankedTensorType whole,
                   CollectiveGroup group) {
    int64_t n = ranks(group);
    if (n <= 1)
      return part;
    return AllGatherOp::create(
        b, loc,
        RankedTensorType::get({shardSize(whole.getNumElements(), n) * n},
                              whole.getElementType()),
        part, group);
  }

  /// The whole tensor of type `whole` from this rank's shard `part` over
  /// `group`.
  Value gather(Location loc, Value part, RankedTensorType whole,
               CollectiveGroup group) {
    return unpadded(loc, gatherFlat(loc, part, whole, group), whole);
  }

  /// The store's value sharded; a parameter gathered back whole.
  LogicalResult rewriteStore(StoreOp store) {
    Location loc = store.getLoc();
    auto whole = tensorType(store.getValue());
    if (whole.getRank() == 0 &&
        !store.getValue().getDefiningOp<MultiTensorUpdateOpInterface>())
      return success(); // a scalar state is not partitioned
    CollectiveGroup group = groupOf(store.getStateAttr());
    Value part = shard(store.getValue(), group);
    b.setInsertionPoint(store);
    if (partitioned.contains(store.getStateAttr().getAttr())) {
      StoreOp::create(b, loc, part, store.getStateAttr());
      return success();
    }
    StoreOp::create(b, loc, gather(loc, part, whole, group),
                    store.getStateAttr());
    return success();
  }

  /// Stage 2: the readers of each reduce-scattered gradient other than the
  /// update, read its shard instead. Elementwise readers are sharded; a
  /// sum over every element becomes this rank's partial sum.
  LogicalResult shardGradientReaders() {
    SmallVector<std::pair<Value, CollectiveGroup>> worklist(scattered.begin(),
                                                            scattered.end());
    DenseSet<Value> seen;
    for (auto [whole, group] : worklist)
      seen.insert(whole);
    while (!worklist.empty()) {
      auto [whole, group] = worklist.pop_back_val();
      for (Operation *user : llvm::make_early_inc_range(whole.getUsers())) {
        if (isa<StoreOp>(user))
          continue; // replaced by the store of the shard
        if (isa<MultiTensorUpdateOpInterface>(user))
          continue; // sharded with the stores of its results
        if (auto sum = dyn_cast<SumSquaresOp>(user)) {
          // Of this rank's shards: a partial sum, as below.
          if (!partials.contains(sum.getResult())) {
            SmallVector<Value> parts;
            for (Value input : sum.getInputs())
              parts.push_back(shard(input, group));
            b.setInsertionPoint(sum);
            partials[sum.getResult()] = {
                SumSquaresOp::create(b, sum.getLoc(), sum.getType(), parts,
                                     sum.getScale()),
                group};
          }
          continue;
        }
        if (isShardable(user)) {
          shard(user->getResult(0), group);
          if (seen.insert(user->getResult(0)).second)
            worklist.push_back({user->getResult(0), group});
          continue;
        }
        auto sum = dyn_cast<ReduceSumOp>(user);
        if (sum && tensorType(sum.getResult()).getRank() == 0) {
          if (!partials.contains(sum.getResult())) {
            Value part = shard(whole, group);
            b.setInsertionPoint(sum);
            partials[sum.getResult()] = {
                ReduceSumOp::create(b, sum.getLoc(), part, ArrayRef<int64_t>{0},
                                    false),
                group};
          }
          continue;
        }
        return user->emitError()
               << "reads a gradient that ZeRO stage " << stage
               << " partitions; only elementwise ops and full sums of it "
                  "can run on its shards";
      }
    }
    return success();
  }

  /// Partial sums of one group add up locally; any other reader gets
  /// their sum over the group, one dsc.all_reduce per partial value read
  /// that way. An expert-data partial summed over the expert group (the
  /// optimizer's sum of the experts' squares) is a partial of the world, or
  /// under tensor parallelism of the data group; a data partial summed
  /// over the tensor group (the slices' squares) is a partial of the
  /// world: the two groups cross in every rank once.
  LogicalResult globalizePartialSums(Block &body) {
    if (partials.empty())
      return success();
    for (Operation &op : body) {
      if (auto reduce = dyn_cast<AllReduceOp>(op);
          reduce && (reduce.getGroup() == CollectiveGroup::expert ||
                     reduce.getGroup() == CollectiveGroup::tensor)) {
        auto known = partials.find(reduce.getInput());
        CollectiveGroup crossing =
            reduce.getGroup() == CollectiveGroup::expert
                ? CollectiveGroup::expert_data
                : CollectiveGroup::data;
        if (known == partials.end() || known->second.second != crossing)
          continue;
        // Under tensor parallelism (DeepSpeed-TED) the expert and
        // expert-data groups cross in the data group, not the world: what
        // the optimizer sums over the tensor group next (the slices'
        // squares) crosses that in the world in turn.
        CollectiveGroup spanned =
            reduce.getGroup() == CollectiveGroup::expert &&
                    lookupTensorParallelSize(func) > 1
                ? CollectiveGroup::data
                : CollectiveGroup::world;
        partials[reduce.getResult()] = {known->second.first, spanned};
        replaced.insert(reduce);
        continue;
      }
      auto add = dyn_cast<AddOp>(op);
      if (!add || !partials.contains(add.getLhs()) ||
          !partials.contains(add.getRhs()))
        continue;
      auto [lhs, lhsGroup] = partials[add.getLhs()];
      auto [rhs, rhsGroup] = partials[add.getRhs()];
      if (lhsGroup != rhsGroup)
        continue;
      b.setInsertionPoint(add);
      partials[add.getResult()] = {AddOp::create(b, add.getLoc(), lhs, rhs),
                                   lhsGroup};
    }
    for (auto [whole, partial] : llvm::to_vector(partials)) {
      auto [value, group] = partial;
      SmallVector<OpOperand *> readers;
      for (OpOperand &use : whole.getUses()) {
        Operation *user = use.getOwner();
        if ((!isa<AddOp>(user) || !partials.contains(user->getResult(0))) &&
            !replaced.contains(user))
          readers.push_back(&use);
      }
      if (readers.empty())
        continue;
      b.setInsertionPointAfterValue(value);
      Value global =
          ranks(group) > 1
              ? AllReduceOp::create(b, value.getLoc(), value, group).getResult()
              : value;
      for (OpOperand *use : readers)
        use->set(global);
    }
    return success();
  }

  func::FuncOp func;
  int64_t world, expertData, data, stage;
  const DenseMap<StringAttr, StateOp> &partitioned;
  OpBuilder b;
  DenseMap<Value, Value> shards; // whole value -> this rank's shard
  // Whole scalar sum -> rank-partial sum, and the group whose sum of it
  // is the whole.
  DenseMap<Value, std::pair<Value, CollectiveGroup>> partials;
  // Gradients now reduce-scattered, and over which group.
  SmallVector<std::pair<Value, CollectiveGroup>> scattered;
  llvm::SetVector<Operation *> replaced; // whole collectives to remove
  DenseSet<Operation *> shardLoads;      // loads of partitioned states
};

struct ZeroPartitionPass
    : public dsc::impl::ZeroPartitionBase<ZeroPartitionPass> {
  using ZeroPartitionBase::ZeroPartitionBase;

  /// Selective unsharding (as DeepCompile does): the stage-3 parameters
  /// whose gathers cost most per byte stay whole while the extra bytes per
  /// rank fit `unshard-budget`. A gather's cost is a fixed latency plus a
  /// term per byte, so per byte it costs most for the smallest tensors:
  /// they are kept first (ties by name, so every rank decides alike).
  void unshardWithinBudget(DenseMap<StringAttr, StateOp> &partitioned,
                           int64_t world, int64_t expertData, int64_t data) {
    if (unshardBudget == 0)
      return;
    SmallVector<StateOp> parameters;
    for (auto [name, state] : partitioned)
      if (state.getRole() == StateRole::parameter)
        parameters.push_back(state);
    llvm::sort(parameters, [](StateOp a, StateOp b) {
      int64_t na = a.getTensorType().getNumElements();
      int64_t nb = b.getTensorType().getNumElements();
      return na != nb ? na < nb : a.getSymName() < b.getSymName();
    });
    int64_t spent = 0;
    for (StateOp state : parameters) {
      RankedTensorType type = state.getTensorType();
      int64_t numel = type.getNumElements();
      int64_t ranks =
          state.getPartitionGroup() == CollectiveGroup::expert ? expertData
          : partitionGroupOf(state) == CollectiveGroup::data   ? data
                                                               : world;
      int64_t extra = (numel - shardSize(numel, ranks)) *
                      bytesPerElement(type.getElementTypeBitWidth());
      if (spent + extra > unshardBudget)
        break;
      spent += extra;
      partitioned.erase(state.getSymNameAttr());
    }
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (stage < 0 || stage > 3) {
      module.emitError() << "ZeRO stage " << int64_t(stage)
                         << " does not exist; stages are 0 (off), 1 "
                            "(optimizer state), 2 (+ gradients) and 3 "
                            "(+ parameters)";
      return signalPassFailure();
    }
    if (unshardBudget < 0) {
      module.emitError() << "ZeRO unshard budget " << int64_t(unshardBudget)
                         << " is negative; it counts bytes per rank";
      return signalPassFailure();
    }
    if (persistenceThreshold < 0) {
      module.emitError() << "ZeRO persistence threshold "
                         << int64_t(persistenceThreshold)
                         << " is negative; it counts elements";
      return signalPassFailure();
    }
    if (stage == 0)
      return;
    std::optional<int64_t> world = lookupWorldSize(module);
    if (!world || *world < 1) {
      module.emitError() << "ZeRO stage " << int64_t(stage)
                         << " partitions over the data-parallel ranks, but "
                            "the module has no '"
                         << kWorldSizeAttrName
                         << "' (run --dsc-data-parallel first)";
      return signalPassFailure();
    }

    // Experts split over their expert group (expert parallelism) are
    // partitioned over their expert-data group of D = W / P ranks.
    FailureOr<int64_t> expertData =
        lookupGroupSize(module, CollectiveGroup::expert_data);
    if (failed(expertData))
      return signalPassFailure();
    // Under tensor or pipeline parallelism the other states are partitioned
    // over their data group of D = W / (T * P) ranks; with D = 1 there is
    // nothing to partition them over (the stage is recorded all the same).
    FailureOr<int64_t> data = lookupGroupSize(module, CollectiveGroup::data);
    if (failed(data))
      return signalPassFailure();
    bool meshed = dataParallelGroup(module) == CollectiveGroup::data;

    // Every optimizer state of a parameter's shape and every fp32 master
    // weight (mixed precision) is partitioned, and at stage 3 every
    // parameter; the step count (a scalar) stays whole.
    DenseMap<StringAttr, StateOp> partitioned;
    bool trains = false;
    for (auto state : module.getOps<StateOp>()) {
      // An expert's state, split over its expert group: its rank-local
      // experts (under tensor parallelism, DeepSpeed-TED, their slice) are
      // what the expert-data group partitions, and with one rank in that
      // group it stays as it is.
      bool expert = state.getPartitionGroup() == CollectiveGroup::expert;
      if (expert && *expertData <= 1) {
        if (state.getRole() == StateRole::optimizer)
          trains = true;
        continue;
      }
      bool slice = state.getPartitionGroup() == CollectiveGroup::tensor;
      if (state.getPartitionOf() && !expert && !slice) {
        state.emitError() << "is partitioned already; run --dsc-zero once";
        return signalPassFailure();
      }
      // A frozen teacher's weights are partitioned at stage 3 like the
      // parameters (gathered for the forward; never reduced or updated).
      bool parameter = state.getRole() == StateRole::parameter ||
                       state.getRole() == StateRole::teacher;
      // Gradient accumulators stay whole at every stage: they add up this
      // rank's own gradients, which are reduced over the ranks (scattered
      // from stage 2) once per optimizer step, at its boundary.
      if (state.getRole() == StateRole::optimizer)
        trains = true;
      else if (state.getRole() != StateRole::master &&
               !(parameter && stage >= 3))
        continue;
      // DeepSpeed's stage3_param_persistence_threshold: small parameters
      // stay whole on every rank (gathering them costs more latency than
      // their memory is worth); their optimizer state is still partitioned.
      if (parameter &&
          state.getTensorType().getNumElements() <= persistenceThreshold)
        continue;
      if (state.getTensorType().getRank() == 0)
        continue;
      if (!expert && meshed && *data <= 1)
        continue;
      // Padded to W * S elements, which for a world size near int64's
      // limit no longer fits (the ops built from it could not exist).
      RankedTensorType type = state.getTensorType();
      int64_t ranks = expert ? *expertData : meshed ? *data : *world;
      int64_t shard = shardSize(type.getNumElements(), ranks);
      if (!checkedByteSize({shard, ranks},
                           type.getElementType().getIntOrFloatBitWidth())) {
        state.emitError() << "partitioned over " << ranks
                          << " ranks, its padded size (" << shard << " x "
                          << ranks
                          << " elements) has more elements or bytes than fit "
                             "in int64";
        return signalPassFailure();
      }
      partitioned[state.getSymNameAttr()] = state;
    }
    unshardWithinBudget(partitioned, *world, *expertData, *data);
    if (stage >= 3 && failed(warnWhenNothingPartitioned(module, partitioned)))
      return signalPassFailure();
    if (!trains) {
      module.emitError() << "ZeRO stage " << int64_t(stage)
                         << " partitions the optimizer's state, but the "
                            "module has none (run --dsc-optimizer first)";
      return signalPassFailure();
    }
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (!func.getBody().hasOneBlock()) {
        func.emitError() << "ZeRO partitions graphs of one block, this one has "
                         << func.getBody().getBlocks().size();
        return signalPassFailure();
      }
      if (meshed && *data <= 1)
        break;
      if (failed(Partitioner(func, *world, *expertData, *data, stage,
                             partitioned)
                     .run()))
        return signalPassFailure();
    }
    OpBuilder builder(module.getContext());
    module->setAttr(DSCDialect::kZeroStageAttrName,
                    builder.getI64IntegerAttr(stage));
    // For the report: which whole parameters the threshold kept whole.
    if (stage >= 3)
      module->setAttr(DSCDialect::kZeroPersistenceThresholdAttrName,
                      builder.getI64IntegerAttr(persistenceThreshold));
    for (auto [name, state] : partitioned) {
      // An expert's rank-local experts over its expert-data group; its
      // `partition_of` stays the whole [E, ...]. A tensor-parallel slice
      // over its data group keeps its whole and its blocks too (stated even
      // when 1: they say the slice is what is partitioned).
      RankedTensorType local = state.getTensorType();
      bool expert = state.getPartitionGroup() == CollectiveGroup::expert;
      bool slice = state.getPartitionGroup() == CollectiveGroup::tensor;
      if (!expert && !slice)
        state.setPartitionOf(local.getShape());
      if (slice)
        state.setPartitionBlocksAttr(builder.getI64IntegerAttr(
            state.getPartitionBlocks().value_or(1)));
      state.setPartitionGroup(expert ? CollectiveGroup::expert_data
                                     : partitionGroupOf(state));
      int64_t ranks = expert ? *expertData : meshed ? *data : *world;
      state.setType(RankedTensorType::get(
          {shardSize(local.getNumElements(), ranks)}, local.getElementType()));
    }
  }

  /// Stage 3 with every trained parameter under the persistence threshold
  /// partitions what stage 2 does: said once, at the module, since the
  /// user asked for stage 3's memory.
  LogicalResult warnWhenNothingPartitioned(
      ModuleOp module, const DenseMap<StringAttr, StateOp> &partitioned) {
    int64_t parameters = 0, largest = 0;
    for (auto state : module.getOps<StateOp>()) {
      if (state.getRole() != StateRole::parameter ||
          state.getPartitionGroup() == CollectiveGroup::expert)
        continue;
      if (partitioned.count(state.getSymNameAttr()))
        return success();
      ++parameters;
      largest = std::max(largest, state.getTensorType().getNumElements());
    }
    if (parameters == 0)
      return success();
    module.emitWarning()
        << "ZeRO stage 3 partitions none of the " << parameters
        << " parameters: the largest has " << largest
        << " elements, at most the persistence threshold "
        << int64_t(persistenceThreshold)
        << " (stage3_param_persistence_threshold), so every parameter stays "
           "whole on every rank and the step is ZeRO stage 2; lower the "
           "threshold to partition them";
    return success();
  }
};
} // namespace
