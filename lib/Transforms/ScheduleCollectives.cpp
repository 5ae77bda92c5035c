//===- ScheduleCollectives.cpp - --dsc-schedule-collectives ----------------===//
//
// Places the collectives of a partitioned step where they overlap with
// compute and free memory early. The lowering runs every collective on the
// "comm" stream and makes compute wait only where a result is read, so a
// collective issued earlier overlaps with the compute issued after it.
//
//   - Early reduction: a gradient's all_reduce or reduce_scatter (with the
//     flattening and padding that only feed it) moves to just after the op
//     that finishes the gradient. The reduction then overlaps with the rest
//     of the backward pass, and at stages 2 and 3 the whole gradient dies
//     there instead of living until the optimizer (DeepSpeed's reduce hooks
//     during the backward).
//   - Prefetch (stage 3): each parameter all_gather and the load of its
//     shard move up to before the first user of an earlier gather, as far
//     as DeepSpeed's stage3_prefetch_bucket_size allows: the gathers issued
//     ahead of their use, this one included, hold at most that many
//     elements (`prefetch-bucket-size`); and at most `max-live-parameters`
//     elements of gathered parameters are alive at once.
//
// The pass is deterministic, so every rank issues the same collectives in
// the same (new) order.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_SCHEDULECOLLECTIVES
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

/// Program positions of a block's ops, kept valid as ops move: a moved op
/// takes the position halfway between its new neighbours', and when no
/// integer is left between them the block is renumbered from its order
/// (rarely: positions start 2^24 apart). Operation's own order cache is
/// recomputed after every move, which made scheduling quadratic.
class Positions {
public:
  explicit Positions(Block &block) : block(block) { renumber(); }
  int64_t operator[](Operation *op) const { return pos.lookup(op); }
  bool before(Operation *a, Operation *b) const { return pos.lookup(a) < pos.lookup(b); }
  /// Records `op`, already moved, as following `after` (null: the block
  /// start).
  void movedAfter(Operation *op, Operation *after) {
    int64_t low = after ? pos.lookup(after) : 0;
    Operation *next = op->getNextNode();
    int64_t high = next ? pos.lookup(next) : low + (int64_t(2) << 24);
    if (high - low < 2) {
      renumber();
      return;
    }
    pos[op] = low + (high - low) / 2;
  }

private:
  void renumber() {
    int64_t n = 0;
    for (Operation &op : block)
      pos[&op] = ++n << 24;
  }

  Block &block;
  DenseMap<Operation *, int64_t> pos;
};

/// `root` and the side-effect-free ops of `block` that only feed it
/// (transitively), in block order.
static SmallVector<Operation *> exclusiveProducers(Operation *root,
                                                   Block &block,
                                                   const Positions &positions) {
  llvm::SetVector<Operation *> set;
  set.insert(root);
  SmallVector<Operation *> worklist{root};
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || def->getBlock() != &block || set.contains(def) ||
          !isMemoryEffectFree(def) || def->getNumRegions())
        continue;
      if (!llvm::all_of(def->getUsers(),
                        [&](Operation *user) { return set.contains(user); }))
        continue;
      set.insert(def);
      worklist.push_back(def);
    }
  }
  SmallVector<Operation *> ops = set.takeVector();
  llvm::sort(ops, [&](Operation *a, Operation *b) {
    return positions.before(a, b);
  });
  return ops;
}

/// Whether `group` follows `after` (null: the block start) op by op, with
/// nothing in between. Checking the first op alone is not enough: a
/// gradient's exclusive producers can begin right after `after` (a
/// recomputed activation that only the weight gradient reads) while the
/// reduction itself still waits at the end of the backward.
static bool isPlacedAfter(ArrayRef<Operation *> group, Operation *after,
                          Block &block) {
  Operation *expected = after ? after->getNextNode() : &block.front();
  for (Operation *op : group) {
    if (op != expected)
      return false;
    expected = op->getNextNode();
  }
  return true;
}

static int64_t numElements(Value v) {
  return cast<RankedTensorType>(v.getType()).getNumElements();
}

namespace {
struct ScheduleCollectivesPass
    : public dsc::impl::ScheduleCollectivesBase<ScheduleCollectivesPass> {
  using ScheduleCollectivesBase::ScheduleCollectivesBase;

  void runOnOperation() override {
    if (prefetchBucketSize < 0 || maxLiveParameters < 0) {
      getOperation().emitError()
          << "--dsc-schedule-collectives: prefetch-bucket-size and "
             "max-live-parameters must not be negative";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.getBody().hasOneBlock())
        continue;
      Block &block = func.getBody().front();
      if (reduceEarly)
        moveReductionsEarly(block);
      if (prefetchBucketSize > 0)
        prefetchGathers(block);
    }
  }

  void moveReductionsEarly(Block &block) {
    Positions positions(block);
    SmallVector<Operation *> reductions;
    for (Operation &op : block)
      if (isa<AllReduceOp, ReduceScatterOp>(op))
        reductions.push_back(&op);
    for (Operation *reduction : reductions) {
      SmallVector<Operation *> group =
          exclusiveProducers(reduction, block, positions);
      DenseSet<Operation *> inGroup(group.begin(), group.end());
      // The latest op outside the group that defines one of its operands.
      Operation *after = nullptr;
      bool fromArgument = false;
      for (Operation *op : group)
        for (Value operand : op->getOperands()) {
          Operation *def = operand.getDefiningOp();
          if (!def) {
            fromArgument = true;
            continue;
          }
          if (inGroup.contains(def))
            continue;
          def = block.findAncestorOpInBlock(*def);
          if (!after || positions.before(after, def))
            after = def;
        }
      if (!after && !fromArgument)
        continue; // computed from constants only
      if (isPlacedAfter(group, after, block))
        continue; // already there
      for (Operation *op : group) {
        if (after)
          op->moveAfter(after);
        else
          op->moveBefore(&block, block.begin());
        positions.movedAfter(op, after);
        after = op;
      }
    }
  }

  void prefetchGathers(Block &block) {
    Positions positions(block);
    // Each parameter gather (of a load of its shard) with its first user.
    struct Gather {
      Operation *gather, *load, *firstUser;
      int64_t elements;
    };
    SmallVector<Gather> gathers;
    for (Operation &op : block) {
      auto gather = dyn_cast<AllGatherOp>(op);
      if (!gather)
        continue;
      auto load = gather.getInput().getDefiningOp<LoadOp>();
      if (!load || !load->hasOneUse() || load->getBlock() != &block)
        continue;
      Operation *first = nullptr;
      for (Operation *user : gather->getUsers()) {
        user = block.findAncestorOpInBlock(*user);
        if (!first || positions.before(user, first))
          first = user;
      }
      if (first)
        gathers.push_back({gather, load, first, numElements(gather)});
    }
    // Gather i is issued before the first user of gather j <= i, the
    // earliest j whose gathers j..i fit the bucket and the live limit (j = i
    // when gather i alone does not). That j never decreases as i grows: a
    // sliding window.
    int64_t limit = std::min<int64_t>(prefetchBucketSize, maxLiveParameters);
    SmallVector<Operation *> targets;
    size_t j = 0;
    int64_t ahead = 0; // elements of gathers j..i
    for (size_t i = 0; i < gathers.size(); ++i) {
      ahead += gathers[i].elements;
      while (j < i && ahead > limit)
        ahead -= gathers[j++].elements;
      targets.push_back(gathers[j].firstUser);
    }
    for (auto [g, target] : llvm::zip(gathers, targets)) {
      if (!positions.before(target, g.gather))
        continue; // its own use: already just before it
      // The shard is read before any store to it: stores follow the
      // backward, and a gather is moved up, never past its users.
      g.load->moveBefore(target);
      g.gather->moveBefore(target);
    }
  }
};
} // namespace
