//===- CheckpointActivations.cpp - --dsc-checkpoint-activations ------------===//
//
// Activation checkpointing on a differentiated graph: chosen forward segments
// (the model's repeated blocks) are recomputed in the backward pass instead
// of being kept for it. The graph is one block in program order, forward
// first (the ops the loss depends on), then the backward and the optimizer
// that --dsc-autodiff and --dsc-optimizer append. A segment is a contiguous
// range of forward ops; the values it computes that only it reads in the
// forward but that the backward also reads are replaced, in the backward, by
// clones of the segment's ops placed right before the first backward use.
// The forward copies then die inside the forward, and only what crosses the
// segment's boundary (its inputs, the residual stream) stays live until the
// backward. The clones run the same kernels on the same inputs, so the
// numbers do not change; only the memory plan does.
//
// A pipeline stage's forward is one copy of its blocks per micro-batch, and
// its schedule runs each micro-batch's backward as an action of its own:
// each micro-batch is checkpointed on its own, its blocks recomputed right
// before its backward reads them, so that a stage keeps only the blocks'
// inputs for the micro-batches it has in flight.
//
// Communication-aware (the default, DeepSpeed-TED's): a collective inside a
// segment is never cloned; its forward output is kept for the recomputation
// instead, so a checkpointed step issues exactly the collectives of an
// uncheckpointed one. Without it the collectives are recomputed too, which
// keeps less memory and communicates each of them again.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Support/TensorSize.h"
#include "dsc/Transforms/Passes.h"

#include "BlockNames.h"
#include "Recomputation.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <functional>

namespace mlir::dsc {
#define GEN_PASS_DEF_CHECKPOINTACTIVATIONS
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

static int64_t bytesOf(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.getElementType().isIntOrFloat())
    return 0;
  return checkedByteSize(type.getShape(),
                         type.getElementType().getIntOrFloatBitWidth())
      .value_or(0);
}

/// Ops whose clone computes the same values: no memory effects (no state
/// reads, no collectives). A dropout is one: its mask is drawn from the
/// step's key and its site, so the clone draws it again.
static bool isRecomputable(Operation *op) {
  // The step's key is 32 bytes, kept: its clone would be a second copy to
  // the device, not a saving.
  if (isa<StepKeyOp>(op))
    return false;
  return op->getNumRegions() == 0 && isMemoryEffectFree(op);
}

/// A communicating collective of the forward: recomputing it sends its
/// bytes again. (dsc.replicate communicates nothing forward.)
static bool isCollective(Operation *op) {
  return getCollectiveGroup(op).has_value();
}

/// The micro-batch that a pipeline stage's forward op or transfer belongs
/// to; none for an op that every micro-batch shares (a load, the position
/// embeddings) and outside a pipeline.
static std::optional<int64_t> microBatchOf(Operation *op) {
  if (auto mark = op->getAttrOfType<IntegerAttr>(kMicroBatchAttrName))
    return mark.getInt();
  if (auto send = dyn_cast<PipelineSendOp>(op))
    return send.getMicroBatch();
  if (auto recv = dyn_cast<PipelineRecvOp>(op))
    return recv.getMicroBatch();
  return std::nullopt;
}

namespace {
/// A contiguous range [begin, end) of forward ops, in program positions.
struct Segment {
  std::string name;
  int64_t begin = 0, end = 0;
  /// Bytes of the values only this segment reads in the forward that the
  /// backward reads too: what recomputing it stops keeping.
  int64_t savedBytes = 0;
};

class Checkpointer {
public:
  /// Checkpoints the whole forward, or, given `microBatch`, that micro-batch's
  /// copy of a pipeline stage's blocks.
  Checkpointer(func::FuncOp func, bool commAware,
               std::optional<int64_t> microBatch = std::nullopt)
      : func(func), commAware(commAware), microBatch(microBatch) {}

  /// Finds the forward region and the block segments. Returns failure with a
  /// diagnostic when the graph has no repeated blocks.
  LogicalResult analyze() {
    Block &body = func.getBody().front();
    for (Operation &op : body.without_terminator())
      append(&op);
    findForward(cast<func::ReturnOp>(body.getTerminator()).getOperand(0));
    if (forwardEnd == static_cast<int64_t>(ops.size()))
      return success(); // not differentiated: nothing reads the forward later
    if (microBatch)
      restrictToMicroBatch();
    return findSegments();
  }

  ArrayRef<Segment> getSegments() const { return segments; }

  /// Bytes of forward values the backward reads (loads excluded: they are
  /// the states' own memory).
  int64_t keptBytes() const {
    int64_t bytes = 0;
    for (int64_t p = 0; p < forwardEnd; ++p)
      if (!isa<LoadOp>(ops[p]) && isOwn(ops[p]))
        for (Value result : ops[p]->getResults())
          if (llvm::any_of(result.getUsers(),
                           [&](Operation *user) { return isBackward(user); }))
            bytes += bytesOf(result);
    return bytes;
  }

  /// Recomputes `segment` in the backward.
  void recompute(const Segment &segment) {
    SmallVector<OpOperand *> backwardUses;
    for (int64_t p = segment.begin; p < segment.end; ++p)
      for (Value v : ops[p]->getResults())
        if (isInternal(segment, v))
          for (OpOperand &use : v.getUses())
            if (isBackward(use.getOwner()))
              backwardUses.push_back(&use);
    if (backwardUses.empty())
      return;
    Operation *first = backwardUses.front()->getOwner();
    for (OpOperand *use : backwardUses)
      if (position.lookup(use->getOwner()) < position.lookup(first))
        first = use->getOwner();

    OpBuilder b(first);
    IRMapping clones;
    SmallVector<Operation *> cloned;
    for (int64_t p = segment.begin; p < segment.end; ++p) {
      if (!recomputes(ops[p]))
        continue; // its forward result is read where it is
      Operation *clone = b.clone(*ops[p], clones);
      clone->setAttr(kRecomputedAttrName, b.getUnitAttr());
      cloned.push_back(clone);
    }
    for (OpOperand *use : backwardUses)
      use->set(clones.lookup(use->get()));
    for (Operation *clone : llvm::reverse(cloned))
      if (clone->use_empty())
        clone->erase();
    // What communication-awareness keeps: the forward outputs of the
    // segment's collectives, read only inside it in the forward, that the
    // recomputation or the backward reads (without it they are recomputed).
    if (commAware)
      for (int64_t p = segment.begin; p < segment.end; ++p)
        if (isCollective(ops[p]))
          for (Value v : ops[p]->getResults())
            if (onlyReadInside(segment, v) &&
                llvm::any_of(v.getUsers(), [&](Operation *user) {
                  return user->hasAttr(kRecomputedAttrName) || isBackward(user);
                }))
              collectiveBytesKept += bytesOf(v);
  }

  /// Bytes of collective outputs kept from the forward for the recomputed
  /// segments (0 unless communication-aware).
  int64_t getCollectiveBytesKept() const { return collectiveBytesKept; }

private:
  void append(Operation *op) {
    position[op] = ops.size();
    ops.push_back(op);
  }

  /// Whether `op` is of the micro-batch checkpointed (every op without one).
  bool isOwn(Operation *op) const {
    return !microBatch || microBatchOf(op) == microBatch;
  }

  /// Narrows the forward to the micro-batch's ops, each preceded by the
  /// shared ops it is the first to read: the forward of a graph of that
  /// micro-batch alone, with each block's loads right before the block, so
  /// that the segments are found as without a pipeline. A shared value is
  /// then read outside the view too, and is kept rather than recomputed.
  /// The backward follows in program order.
  void restrictToMicroBatch() {
    SmallVector<Operation *> all = std::move(ops);
    const int64_t allForwardEnd = forwardEnd;
    ops.clear();
    position.clear();
    DenseSet<Operation *> shared;
    for (int64_t p = 0; p < allForwardEnd; ++p)
      if (!microBatchOf(all[p]))
        shared.insert(all[p]);
    std::function<void(Operation *)> take = [&](Operation *op) {
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && shared.contains(def) && !position.contains(def))
          take(def);
      append(op);
    };
    for (int64_t p = 0; p < allForwardEnd; ++p)
      if (microBatchOf(all[p]) == microBatch)
        take(all[p]);
    forwardEnd = ops.size();
    for (Operation *op : ArrayRef(all).drop_front(allForwardEnd))
      append(op);
  }

  /// Whether a recomputed segment clones `op`.
  bool recomputes(Operation *op) const {
    if (!isOwn(op))
      return false; // shared by the micro-batches, or another's
    if (!commAware && isCollective(op))
      return op->getNumRegions() == 0;
    return isRecomputable(op);
  }

  bool isBackward(Operation *op) const {
    auto it = position.find(op);
    return it != position.end() && it->second >= forwardEnd;
  }

  /// A value computed in `segment` by a recomputable op that no forward op
  /// outside the segment reads.
  bool isInternal(const Segment &segment, Value value) const {
    Operation *def = value.getDefiningOp();
    return def && recomputes(def) && onlyReadInside(segment, value);
  }

  /// Whether no forward op outside `segment` (nor the graph's return)
  /// reads `value`.
  bool onlyReadInside(const Segment &segment, Value value) const {
    for (Operation *user : value.getUsers()) {
      if (user->hasAttr(kRecomputedAttrName))
        continue; // a clone, in the backward
      auto it = position.find(user);
      if (it == position.end())
        return false; // the return: an output of the graph
      int64_t p = it->second;
      if (p < forwardEnd && (p < segment.begin || p >= segment.end))
        return false;
    }
    return true;
  }

  /// The forward region: every op up to the last one the loss depends on.
  void findForward(Value loss) {
    forwardEnd = 0;
    SmallVector<Operation *> worklist;
    DenseSet<Operation *> seen;
    if (Operation *def = loss.getDefiningOp())
      worklist.push_back(def);
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (!seen.insert(op).second)
        continue;
      forwardEnd = std::max(forwardEnd, position.lookup(op) + 1);
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          worklist.push_back(def);
    }
    if (seen.empty())
      forwardEnd = ops.size();
  }

  /// Bytes of the forward values defined before position `q` that a forward
  /// op at or after `q` reads: what a segment boundary at `q` keeps live.
  int64_t cutBytes(int64_t q) const {
    int64_t bytes = 0;
    for (int64_t p = 0; p < q; ++p) {
      if (isa<LoadOp>(ops[p]))
        continue;
      for (Value result : ops[p]->getResults())
        if (llvm::any_of(result.getUsers(), [&](Operation *user) {
              int64_t u = position.lookup(user);
              return u >= q && u < forwardEnd;
            }))
          bytes += bytesOf(result);
    }
    return bytes;
  }

  /// The narrowest boundary in (lo, hi], the latest of equals: blocks end
  /// with the op that finishes the residual stream, not a few ops into the
  /// next block's normalization (whose parameter is loaded after its
  /// statistics).
  int64_t narrowestCut(int64_t lo, int64_t hi) const {
    int64_t best = hi, bestBytes = cutBytes(hi);
    for (int64_t q = hi - 1; q > lo && q >= 0; --q) {
      int64_t bytes = cutBytes(q);
      if (bytes < bestBytes) {
        best = q;
        bestBytes = bytes;
      }
    }
    return best;
  }

  LogicalResult findSegments() {
    SmallVector<LoadOp> loads;
    SmallVector<StringRef> names;
    for (int64_t p = 0; p < forwardEnd; ++p)
      if (auto load = dyn_cast<LoadOp>(ops[p])) {
        loads.push_back(load);
        names.push_back(load.getState());
      }
    BlockNames blocks(names, func->getParentOfType<ModuleOp>());
    // Each block's first load and the last forward op reading its loads.
    struct Extent {
      std::string name;
      int64_t firstLoad, lastUser;
    };
    SmallVector<Extent> extents;
    llvm::StringMap<size_t> index;
    // Per position: the last forward reader of the non-block loads up to it.
    SmallVector<std::pair<int64_t, int64_t>> foreignLoads; // (load, last user)
    for (LoadOp load : loads) {
      int64_t p = position.lookup(load);
      int64_t lastUser = p;
      for (Operation *user : load->getUsers())
        if (!isBackward(user))
          lastUser = std::max(lastUser, position.lookup(user));
      StringRef block = blocks.blockOf(load.getState());
      if (block.empty()) {
        foreignLoads.push_back({p, lastUser});
        continue;
      }
      auto [it, inserted] = index.try_emplace(block, extents.size());
      if (inserted)
        extents.push_back({block.str(), p, lastUser});
      else
        extents[it->second].lastUser =
            std::max(extents[it->second].lastUser, lastUser);
    }
    if (extents.empty())
      return func.emitError()
             << "found no repeated blocks to checkpoint: no parameter is "
                "named <prefix>.<i>.<name> for two indices i (a "
                "torch.nn.ModuleList's layers)";

    // Boundaries: before the first block, after the last readers of the
    // loads before it; between blocks; after the last block, before the
    // next load that belongs to no block (or before the loss).
    SmallVector<int64_t> starts;
    for (auto [i, extent] : llvm::enumerate(extents)) {
      int64_t lo = -1;
      if (i == 0) {
        for (auto [load, lastUser] : foreignLoads)
          if (load < extent.firstLoad)
            lo = std::max(lo, lastUser);
      } else {
        lo = extents[i - 1].lastUser;
      }
      starts.push_back(narrowestCut(std::min(lo, extent.firstLoad - 1),
                                    extent.firstLoad));
    }
    // The loss itself stays out: nothing would cross a boundary after it.
    int64_t hi = forwardEnd - 1;
    for (auto [load, lastUser] : foreignLoads)
      if (load > extents.back().lastUser)
        hi = std::min(hi, load);
    starts.push_back(narrowestCut(
        std::min(extents.back().lastUser, hi - 1), hi));

    for (auto [i, extent] : llvm::enumerate(extents)) {
      Segment segment{extent.name, starts[i], starts[i + 1], 0};
      for (int64_t p = segment.begin; p < segment.end; ++p)
        for (Value v : ops[p]->getResults())
          if (isInternal(segment, v) &&
              llvm::any_of(v.getUsers(),
                           [&](Operation *user) { return isBackward(user); }))
            segment.savedBytes += bytesOf(v);
      segments.push_back(std::move(segment));
    }
    return success();
  }

  func::FuncOp func;
  bool commAware;
  std::optional<int64_t> microBatch;
  int64_t collectiveBytesKept = 0;
  SmallVector<Operation *> ops;
  DenseMap<Operation *, int64_t> position;
  int64_t forwardEnd = 0;
  SmallVector<Segment> segments;
};

/// A graph with a loss: its forward is what the loss depends on.
static bool hasLoss(func::FuncOp func) {
  if (func.isExternal() || func.getNumResults() == 0 ||
      !func.getBody().hasOneBlock())
    return false;
  auto name =
      func.getResultAttrOfType<StringAttr>(0, DSCDialect::kOutputAttrName);
  return name && name.getValue() == "loss";
}

struct CheckpointActivationsPass
    : public dsc::impl::CheckpointActivationsBase<CheckpointActivationsPass> {
  using CheckpointActivationsBase::CheckpointActivationsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (segments != "blocks") {
      module.emitError() << "unknown segments '" << segments
                         << "'; expected blocks";
      return signalPassFailure();
    }
    if (budget < 0) {
      module.emitError() << "budget must be >= 0 bytes, got "
                         << int64_t(budget);
      return signalPassFailure();
    }
    // A pipeline stage checkpoints each micro-batch's blocks on their own.
    SmallVector<std::optional<int64_t>> microBatches = {std::nullopt};
    if (auto count = module->getAttrOfType<IntegerAttr>(
            kPipelineMicroBatchesAttrName)) {
      microBatches.clear();
      for (int64_t m = 0; m < count.getInt(); ++m)
        microBatches.push_back(m);
    }
    for (auto func : module.getOps<func::FuncOp>())
      if (hasLoss(func))
        for (std::optional<int64_t> microBatch : microBatches)
          if (failed(checkpoint(func, microBatch)))
            return signalPassFailure();
  }

  LogicalResult checkpoint(func::FuncOp func,
                           std::optional<int64_t> microBatch) {
    Checkpointer checkpointer(func, commAware, microBatch);
    if (failed(checkpointer.analyze()))
      return failure();
    ArrayRef<Segment> all = checkpointer.getSegments();
    if (all.empty())
      return success();
    // Earliest blocks first: their activations are kept longest. The
    // estimate of what the backward keeps is its peak: at its start, every
    // value not recomputed is live; while block j is recomputed (later, the
    // blocks after it done), only what no block keeps plus block j's
    // values are. With a budget, stop once that fits.
    int64_t before = checkpointer.keptBytes(), total = 0;
    for (const Segment &segment : all)
      total += segment.savedBytes;
    int64_t estimate = before, saved = 0, largest = 0;
    size_t chosen = 0;
    for (const Segment &segment : all) {
      if (budget > 0 && estimate <= budget)
        break;
      saved += segment.savedBytes;
      largest = std::max(largest, segment.savedBytes);
      estimate = std::max(before - saved, before - total + largest);
      ++chosen;
    }
    if (budget > 0 && estimate > budget)
      func.emitWarning() << "activation budget " << int64_t(budget)
                         << " bytes not met: recomputing all " << all.size()
                         << " blocks keeps an estimated " << estimate
                         << " bytes for the backward";
    for (const Segment &segment : all.take_front(chosen))
      checkpointer.recompute(segment);
    if (print) {
      llvm::errs() << "dsc-checkpoint-activations: @" << func.getSymName();
      if (microBatch)
        llvm::errs() << " micro-batch " << *microBatch;
      llvm::errs() << ": recomputing " << chosen << " of " << all.size()
                   << " blocks";
      for (const Segment &segment : all.take_front(chosen))
        llvm::errs() << " " << segment.name;
      llvm::errs() << "; activations kept for the backward: " << before
                   << " -> ~" << estimate << " bytes";
      if (commAware)
        llvm::errs() << "; collective outputs kept (comm-aware): "
                     << checkpointer.getCollectiveBytesKept() << " bytes";
      else
        llvm::errs() << "; collectives recomputed (comm-aware=false)";
      llvm::errs() << "\n";
    }
    return success();
  }
};
} // namespace
