//===- BucketCollectives.cpp - --dsc-bucket-collectives --------------------===//
//
// Merges consecutive collectives of one kind into one call on a packed
// buffer, as DeepSpeed's gradient and all-gather buckets do: a collective
// costs a fixed latency plus a term per byte, and a step of many small
// parameters pays the latency once per parameter otherwise.
//
// Members of a bucket are collectives of the same kind and element type,
// taken in block order (after --dsc-schedule-collectives placed them), as
// long as their elements fit the bucket (`reduce-bucket-size` for
// all_reduce and reduce_scatter, DeepSpeed's reduce_bucket_size;
// `allgather-bucket-size` for all_gather, allgather_bucket_size; counted
// as the whole tensor, W * S for a shard of S). The merged call replaces
// the last member, so the earlier members' results arrive later: their
// users before it may only be reshapes and stores (a stage-1/2 gathered
// update's), which then move after it. Anything else (compute) would wait
// for the bucket and ends it. So reduced gradients feed the optimizer as
// before, and stage-3 parameter gathers merge only where the prefetch put
// them next to each other (within stage3_prefetch_bucket_size): bucketing
// neither issues a gather earlier nor delays compute.
//
// Packing keeps every member's own padding and shard layout, so that
// every rank still receives its own shard of each member:
//   reduce_scatter  [W*S_i] -> [W, S_i], concatenated along dim 1, flat
//                   -> reduce_scatter -> [sum S] -> slice S_i
//   all_gather      [S_i] concatenated -> all_gather -> [W, sum S]
//                   -> columns of member i -> [W*S_i]
//   all_reduce      flat, concatenated -> all_reduce -> slice, reshape
// The merged collective carries `dsc.bucket` (its number of members).
// Deterministic: every rank gets the same calls in the same order.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseSet.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_BUCKETCOLLECTIVES
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

static RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The elements a collective counts against its bucket: the whole tensor.
static int64_t bucketElements(Operation *op) {
  return std::max(tensorType(op->getOperand(0)).getNumElements(),
                  tensorType(op->getResult(0)).getNumElements());
}

namespace {
/// The bucket being filled: its members, and the ops that use their
/// results, transitively, before the latest member (`waiting`: they move
/// after the merged call) or not yet reached (`ahead`). The users are
/// followed incrementally as members join, so filling a bucket of k
/// members visits each user once per later candidate at most.
class OpenBucket {
public:
  explicit OpenBucket(Block &block) : block(block) {}

  bool empty() const { return members.empty(); }
  ArrayRef<Operation *> getMembers() const { return members; }
  ArrayRef<Operation *> getWaiting() const { return waiting; }
  int64_t getElements() const { return elements; }

  void start(Operation *op, int64_t n) {
    members.assign({op});
    waiting.clear();
    ahead.clear();
    seen.clear();
    elements = n;
    follow(op);
  }

  /// Adds `op` if the members' results can wait for it: every user before
  /// it is a reshape or a store (which may move after it), and `op` does
  /// not use them itself.
  bool tryAdd(Operation *op, int64_t n) {
    SmallVector<Operation *> reached, stillAhead;
    SmallVector<Operation *> worklist(ahead.begin(), ahead.end());
    while (!worklist.empty()) {
      Operation *user = worklist.pop_back_val();
      if (user == op)
        return false;
      if (!user->isBeforeInBlock(op)) {
        stillAhead.push_back(user);
        continue;
      }
      if (!isa<ReshapeOp, StoreOp>(user))
        return false;
      reached.push_back(user);
      for (Operation *next : user->getUsers())
        if (Operation *top = block.findAncestorOpInBlock(*next);
            top && seen.insert(top).second)
          worklist.push_back(top);
    }
    waiting.append(reached);
    ahead = std::move(stillAhead);
    members.push_back(op);
    elements += n;
    follow(op);
    return true;
  }

  /// `waiting` in block order, for the merge.
  void sortWaiting() {
    llvm::sort(waiting, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
  }

private:
  void follow(Operation *member) {
    for (Operation *user : member->getUsers())
      if (Operation *top = block.findAncestorOpInBlock(*user);
          top && seen.insert(top).second)
        ahead.push_back(top);
  }

  Block &block;
  SmallVector<Operation *> members, waiting, ahead;
  DenseSet<Operation *> seen;
  int64_t elements = 0;
};

/// Builds the merged collective of a bucket just after its last member,
/// over the members' group of `world` ranks.
class BucketBuilder {
public:
  BucketBuilder(ArrayRef<Operation *> members, CollectiveGroup group,
                int64_t world)
      : members(members), group(group), world(world),
        b(members.back()->getContext()) {
    b.setInsertionPointAfter(members.back());
  }

  /// Replaces the members by one collective; returns the last op built.
  Operation *build() {
    Operation *first = members.front();
    Type elem = tensorType(first->getResult(0)).getElementType();
    Location loc = b.getFusedLoc(llvm::map_to_vector(
        members, [](Operation *op) { return op->getLoc(); }));
    SmallVector<Value> parts;
    if (isa<ReduceScatterOp>(first))
      parts = reduceScatter(loc, elem);
    else if (isa<AllGatherOp>(first))
      parts = allGather(loc, elem);
    else
      parts = allReduce(loc, elem);
    for (auto [member, part] : llvm::zip(members, parts))
      member->getResult(0).replaceAllUsesWith(part);
    return parts.back().getDefiningOp();
  }

private:
  RankedTensorType flat(int64_t n, Type elem) {
    return RankedTensorType::get({n}, elem);
  }
  Value reshape(Location loc, Value v, RankedTensorType type) {
    if (tensorType(v) == type)
      return v;
    return ReshapeOp::create(b, loc, type, v);
  }
  Operation *mark(Operation *op) {
    op->setAttr(DSCDialect::kBucketAttrName, b.getI64IntegerAttr(members.size()));
    return op;
  }

  SmallVector<Value> reduceScatter(Location loc, Type elem) {
    SmallVector<Value> rows; // [W, S_i]
    int64_t total = 0;
    for (Operation *m : members) {
      int64_t s = tensorType(m->getResult(0)).getNumElements();
      rows.push_back(reshape(loc, m->getOperand(0),
                             RankedTensorType::get({world, s}, elem)));
      total += s;
    }
    Value packed = reshape(loc, ConcatOp::create(b, loc, rows, 1),
                           flat(world * total, elem));
    Value shard =
        mark(ReduceScatterOp::create(b, loc, flat(total, elem), packed, group))
            ->getResult(0);
    SmallVector<Value> parts;
    int64_t offset = 0;
    for (Operation *m : members) {
      int64_t s = tensorType(m->getResult(0)).getNumElements();
      parts.push_back(SliceOp::create(b, loc, shard, 0, offset, offset + s, 1));
      offset += s;
    }
    return parts;
  }

  SmallVector<Value> allGather(Location loc, Type elem) {
    SmallVector<Value> shards;
    int64_t total = 0;
    for (Operation *m : members) {
      shards.push_back(m->getOperand(0));
      total += tensorType(m->getOperand(0)).getNumElements();
    }
    Value packed = ConcatOp::create(b, loc, shards, 0);
    Value whole =
        mark(AllGatherOp::create(b, loc, flat(world * total, elem), packed,
                                 group))
            ->getResult(0);
    Value rows = reshape(loc, whole, RankedTensorType::get({world, total}, elem));
    SmallVector<Value> parts;
    int64_t offset = 0;
    for (Operation *m : members) {
      int64_t s = tensorType(m->getOperand(0)).getNumElements();
      Value columns = SliceOp::create(b, loc, rows, 1, offset, offset + s, 1);
      parts.push_back(reshape(loc, columns, tensorType(m->getResult(0))));
      offset += s;
    }
    return parts;
  }

  SmallVector<Value> allReduce(Location loc, Type elem) {
    SmallVector<Value> flats;
    for (Operation *m : members) {
      int64_t n = tensorType(m->getOperand(0)).getNumElements();
      flats.push_back(reshape(loc, m->getOperand(0), flat(n, elem)));
    }
    Value packed = ConcatOp::create(b, loc, flats, 0);
    Value sum = mark(AllReduceOp::create(b, loc, packed, group))->getResult(0);
    SmallVector<Value> parts;
    int64_t offset = 0;
    for (Operation *m : members) {
      RankedTensorType type = tensorType(m->getResult(0));
      int64_t n = type.getNumElements();
      Value slice = SliceOp::create(b, loc, sum, 0, offset, offset + n, 1);
      parts.push_back(reshape(loc, slice, type));
      offset += n;
    }
    return parts;
  }

  ArrayRef<Operation *> members;
  CollectiveGroup group;
  int64_t world;
  OpBuilder b;
};

struct BucketCollectivesPass
    : public dsc::impl::BucketCollectivesBase<BucketCollectivesPass> {
  using BucketCollectivesBase::BucketCollectivesBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (reduceBucketSize < 0 || allgatherBucketSize < 0) {
      module.emitError() << "--dsc-bucket-collectives: reduce-bucket-size and "
                            "allgather-bucket-size must not be negative";
      return signalPassFailure();
    }
    int64_t world = lookupWorldSize(module).value_or(1);
    if (world <= 1)
      return; // no collectives to merge
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.getBody().hasOneBlock())
        continue;
      Block &block = func.getBody().front();
      bucket<AllReduceOp>(block, reduceBucketSize);
      bucket<ReduceScatterOp>(block, reduceBucketSize);
      bucket<AllGatherOp>(block, allgatherBucketSize);
    }
  }

  /// Greedy, in block order: a collective joins the open bucket when its
  /// element type and group match (an expert's shards over its
  /// expert-data group bucket with each other, as the world's do), the
  /// bucket's elements stay within `limit`, and the members' results can
  /// wait for it; otherwise the bucket is merged and a new one opens with
  /// it.
  static bool isMaximum(Operation *op) {
    auto reduce = dyn_cast<AllReduceOp>(op);
    return reduce && reduce.getMaximum();
  }

  template <typename OpTy>
  void bucket(Block &block, int64_t limit) {
    if (limit == 0)
      return;
    SmallVector<Operation *> collectives;
    for (Operation &op : block)
      if (isa<OpTy>(op) && !isMaximum(&op)) // a maximum never packs with sums
        collectives.push_back(&op);
    OpenBucket open(block);
    for (Operation *op : collectives) {
      int64_t n = bucketElements(op);
      Operation *front = open.empty() ? nullptr : open.getMembers().front();
      if (front && open.getElements() + n <= limit &&
          getElementTypeOrSelf(op->getResult(0).getType()) ==
              getElementTypeOrSelf(front->getResult(0).getType()) &&
          cast<OpTy>(op).getGroup() == cast<OpTy>(front).getGroup() &&
          open.tryAdd(op, n))
        continue;
      merge<OpTy>(open);
      open.start(op, n);
    }
    merge<OpTy>(open);
  }

  template <typename OpTy>
  void merge(OpenBucket &open) {
    ArrayRef<Operation *> members = open.getMembers();
    if (members.size() < 2)
      return;
    CollectiveGroup group = cast<OpTy>(members.front()).getGroup();
    // The verifiers checked the group's size on every member.
    int64_t ranks = *lookupGroupSize(members.front(), group);
    open.sortWaiting();
    Operation *last = BucketBuilder(members, group, ranks).build();
    for (Operation *op : open.getWaiting()) {
      op->moveAfter(last);
      last = op;
    }
    for (Operation *member : members)
      member->erase();
  }
};
} // namespace
