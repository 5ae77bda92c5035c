//===- PipelineScheduleOrder.cpp - --dsc-pipeline-schedule -----------------===//
//
// Puts a pipeline stage's program in the order of its schedule. After
// autodiff the stage's graph is every micro-batch's forward, then the
// backward autodiff swept in reverse, then the optimizer; the runtime runs
// a graph in program order, so the order of the ops is the schedule.
//
// Each op is assigned to the micro-batches it depends on: a forward op to
// the one it is marked with (`dsc.micro_batch`), a transfer to the one it
// carries, any other op to the union of its operands'. An unmarked op of
// exactly one micro-batch belongs to that micro-batch's backward, as does a
// marked op that activation checkpointing recomputes there. Under the
// interleaved schedule a micro-batch is one per model chunk of the rank
// (`dsc.pipeline_chunk`), since each chunk's forward and backward are
// actions of their own. The
// program is then: what depends on no micro-batch (pure ops, and the
// others up to the first op with effects that stays behind), each action's
// ops in the schedule's order, and what depends on several micro-batches
// (the sums of weight gradients, the loss, the optimizer), each group in
// its original order. What depends on no micro-batch but stayed behind
// while an action reads it (ZeRO-3's gathers of the parameters for the
// backward) runs just before the first such action. ZB-H1 splits
// each micro-batch's backward into the part the previous stage waits for
// and the weight gradients (splitBackward). A weight's gradient, summed
// over the micro-batches, is summed as they come (accumulateInActions).
//
//===----------------------------------------------------------------------===//

#include "dsc/Analysis/PipelineSchedule.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Transforms/Passes.h"

#include "Recomputation.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_PIPELINESCHEDULE
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

namespace {
struct PipelineSchedulePass
    : public dsc::impl::PipelineScheduleBase<PipelineSchedulePass> {
  using PipelineScheduleBase::PipelineScheduleBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto stageAttr = module->getAttrOfType<IntegerAttr>(kPipelineStageAttrName);
    auto countAttr =
        module->getAttrOfType<IntegerAttr>(kPipelineMicroBatchesAttrName);
    if (!stageAttr || !countAttr) {
      module.emitError() << "--dsc-pipeline-schedule orders a pipeline stage's "
                            "program: run --dsc-pipeline-parallel first";
      return signalPassFailure();
    }
    std::optional<pipeline::ScheduleKind> kind =
        pipeline::parseScheduleKind(schedule);
    if (!kind) {
      module.emitError() << "unknown pipeline schedule '" << schedule
                         << "' (expected gpipe, 1f1b, zb-h1 or interleaved)";
      return signalPassFailure();
    }
    pipeline::ScheduleShape shape;
    shape.stages = lookupPipelineParallelSize(module);
    shape.microBatches = countAttr.getInt();
    if (auto chunks = module->getAttrOfType<IntegerAttr>(kPipelineChunksAttrName))
      shape.chunks = chunks.getInt();
    const bool interleaved = *kind == pipeline::ScheduleKind::interleaved;
    if (interleaved && shape.chunks < 2) {
      module.emitError() << "the interleaved pipeline schedule runs several "
                            "model chunks per rank, but this stage was cut "
                            "into one (set pipeline-chunks to 2 or more, or "
                            "use 1f1b)";
      return signalPassFailure();
    }
    if (!interleaved && shape.chunks > 1) {
      module.emitError() << "this stage was cut into " << shape.chunks
                         << " model chunks per rank, which only the "
                            "interleaved pipeline schedule runs, not "
                         << schedule;
      return signalPassFailure();
    }
    llvm::Expected<pipeline::Schedule> built = pipeline::buildSchedule(*kind, shape);
    if (!built) {
      module.emitError() << llvm::toString(built.takeError());
      return signalPassFailure();
    }
    // The ranks' lists must meet: each transfer's peer reaches it. The
    // simulation plays them against their dependencies and fails on a
    // deadlock.
    if (llvm::Expected<pipeline::Simulation> run =
            pipeline::simulatePipeline(*built, pipeline::PassCosts{});
        !run) {
      module.emitError() << llvm::toString(run.takeError());
      return signalPassFailure();
    }
    int64_t stage = stageAttr.getInt();
    if (stage < 0 || stage >= shape.stages) {
      module.emitError() << "pipeline stage " << stage << " is not one of the "
                         << shape.stages << " stages";
      return signalPassFailure();
    }
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() &&
          failed(order(func, built->ranks[stage], shape.microBatches,
                       shape.chunks)))
        return signalPassFailure();
    if (print && failed(report(module, *built, stage)))
      return signalPassFailure();
  }

  /// The stage's actions, and the schedule's bubble and activation memory
  /// as PipelineSchedule's simulation measures them with a backward pass
  /// twice as long as the forward (a transformer's ratio; split evenly
  /// into its input- and weight-gradient passes for ZB-H1).
  LogicalResult report(ModuleOp module, const pipeline::Schedule &built,
                       int64_t stage) {
    const bool split = built.splitsBackward();
    pipeline::PassCosts costs = split ? pipeline::PassCosts{1, 1, 1}
                                      : pipeline::PassCosts{1, 2, 0};
    llvm::Expected<pipeline::Simulation> run =
        pipeline::simulatePipeline(built, costs);
    if (!run)
      return module.emitError() << llvm::toString(run.takeError());
    llvm::raw_ostream &os = llvm::errs();
    os << "dsc-pipeline-schedule: " << schedule << ", "
       << built.shape.stages << " stages x " << built.shape.microBatches
       << " micro-batches";
    const int64_t chunks = built.shape.chunks;
    if (chunks > 1)
      os << " x " << chunks << " chunks";
    os << "; stage " << stage << (chunks > 1 ? " (action:chunk)" : "")
       << " runs";
    for (const pipeline::Action &action : built.ranks[stage]) {
      os << " "
         << (action.pass == pipeline::PassKind::forward    ? "F"
             : action.pass == pipeline::PassKind::backward ? "B"
                                                           : "W")
         << action.microBatch;
      if (chunks > 1)
        os << ":" << action.chunk;
    }
    // The formula the simulation must meet: (P-1)/M of the ideal time for
    // GPipe and 1F1B, (P-1)/(V·M) interleaved; ZB-H1 leaves (P-1)(F+B-W)
    // of a rank's M(F+B+W).
    const double p = double(built.shape.stages - 1),
                 m = double(built.shape.microBatches);
    const double formula =
        split ? p * (costs.forward + costs.backward - costs.weight) /
                    (m * (costs.forward + costs.backward + costs.weight))
              : p / (double(chunks) * m);
    os << llvm::formatv("\n  bubble {0:F3} of the ideal time ({1} = "
                        "{2:F3}); micro-batches in flight at most:",
                        run->bubbleFraction(),
                        split         ? "(P-1)(F+B-W)/(M(F+B+W)), F=B=W"
                        : chunks > 1 ? "(P-1)/(V*M)"
                                     : "(P-1)/M",
                        formula);
    for (int64_t held : run->peakInFlight)
      os << " " << held;
    os << "\n";
    return success();
  }

  /// Splits one micro-batch's backward (in program order) into the
  /// input-gradient pass B, what the previous stage waits for (the sends
  /// to it and every op of the backward they depend on, the receives from
  /// the next stage among them), left in `backward`, and the weight-gradient
  /// pass W, every other op (the gradients of this stage's weights, which
  /// only the sums after the last action read), moved to `weight`. B never
  /// reads W: it is closed under the operands it takes from the backward.
  static void splitBackward(SmallVector<Operation *> &backward,
                            SmallVector<Operation *> &weight) {
    llvm::DenseSet<Operation *> ops(backward.begin(), backward.end());
    llvm::DenseSet<Operation *> inputPass;
    SmallVector<Operation *> worklist;
    for (Operation *op : backward)
      if (auto send = dyn_cast<PipelineSendOp>(op);
          send && send.getPeer() == PipelinePeer::previous)
        worklist.push_back(op);
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (!inputPass.insert(op).second)
        continue;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp(); def && ops.contains(def))
          worklist.push_back(def);
    }
    SmallVector<Operation *> kept;
    for (Operation *op : backward)
      (inputPass.contains(op) ? kept : weight).push_back(op);
    backward = std::move(kept);
  }

  /// Takes out of `tail` what depends on no micro-batch but is read, at
  /// the end of a chain of such ops, by an action's op: ZeRO-3's gathers
  /// of the parameters for the backward, which follow the loss's
  /// collective in program order and so stayed behind it. Each goes just
  /// before the first action (in the schedule's order) that reads it,
  /// directly or through the chain; returns them per action, in program
  /// order. Every rank of a stage's data group runs this stage's program,
  /// so the collectives among them stay in one order on all of them.
  /// What the tail reads alone stays there: moving it ahead of the tail's
  /// effects (the optimizer's stores) could change what it reads.
  static SmallVector<SmallVector<Operation *>>
  attachToFirstUser(SmallVector<Operation *> &tail,
                    const llvm::DenseMap<Value, llvm::BitVector> &dependsOn,
                    ArrayRef<SmallVector<Operation *> *> groups) {
    const size_t never = groups.size();
    llvm::DenseMap<Operation *, size_t> actionOf;
    for (auto [index, group] : llvm::enumerate(groups))
      for (Operation *op : *group)
        actionOf[op] = index;
    auto independent = [&](Operation *op) {
      return llvm::all_of(op->getResults(), [&](Value result) {
        auto it = dependsOn.find(result);
        return it == dependsOn.end() || it->second.none();
      });
    };
    // Users follow their operands in program order: the first action that
    // reads an op is known once its users' are, walking the tail backwards.
    llvm::DenseMap<Operation *, size_t> firstAction;
    for (Operation *op : llvm::reverse(tail)) {
      if (op->getNumResults() == 0 || !independent(op))
        continue;
      size_t first = never;
      for (Operation *user : op->getUsers()) {
        if (auto it = actionOf.find(user); it != actionOf.end())
          first = std::min(first, it->second);
        else if (auto it = firstAction.find(user); it != firstAction.end())
          first = std::min(first, it->second);
      }
      if (first != never)
        firstAction[op] = first;
    }
    SmallVector<SmallVector<Operation *>> ahead(groups.size());
    SmallVector<Operation *> kept;
    for (Operation *op : tail) {
      if (auto it = firstAction.find(op); it != firstAction.end())
        ahead[it->second].push_back(op);
      else
        kept.push_back(op);
    }
    tail = std::move(kept);
    return ahead;
  }

  /// Takes out of `tail` the sums of per-micro-batch parts (autodiff's
  /// gradient of a weight that every micro-batch reads, built as
  /// ((g3 + g2) + g1) + g0 while its backward sweeps the micro-batches in
  /// reverse), which would keep every micro-batch's part live until the
  /// last action, and rebuilds each as a running sum in micro-batch order:
  /// ((g0 + g1) + g2) + g3, each partial sum placed right after the action
  /// that produces its part (returned per action). A stage then holds one
  /// running sum per weight instead of M parts, which is what lets
  /// activation checkpointing lower its peak. Every schedule adds the parts
  /// in this one order, so their results stay equal bit for bit.
  static SmallVector<SmallVector<Operation *>>
  accumulateInActions(SmallVector<Operation *> &tail,
                      const llvm::DenseMap<Value, llvm::BitVector> &dependsOn,
                      ArrayRef<SmallVector<Operation *> *> groups) {
    llvm::DenseMap<Operation *, size_t> actionOf;
    for (auto [index, group] : llvm::enumerate(groups))
      for (Operation *op : *group)
        actionOf[op] = index;
    llvm::DenseSet<Operation *> inTail(tail.begin(), tail.end());
    // A sum node: an add of two values of its own type (no broadcast) that
    // waits in the tail.
    auto isSumNode = [&](Operation *op) {
      auto add = dyn_cast_or_null<AddOp>(op);
      return add && inTail.contains(op) &&
             add.getLhs().getType() == add.getType() &&
             add.getRhs().getType() == add.getType();
    };
    SmallVector<SmallVector<Operation *>> after(groups.size());
    // The replaced trees' nodes, each tree's root first, erased at the end
    // (so that no new op takes an erased one's address meanwhile).
    SmallVector<Operation *> replaced;
    for (Operation *root : tail) {
      if (!isSumNode(root))
        continue;
      // Only a tree's root: an inner node is read by one sum node alone.
      if (root->hasOneUse() && isSumNode(*root->user_begin()))
        continue;
      SmallVector<Operation *> inner;
      SmallVector<Value> parts;
      SmallVector<Value> worklist = {root->getResult(0)};
      while (!worklist.empty()) {
        Value value = worklist.pop_back_val();
        Operation *def = value.getDefiningOp();
        if (isSumNode(def) && (def == root || value.hasOneUse())) {
          inner.push_back(def);
          worklist.append({def->getOperand(1), def->getOperand(0)});
        } else {
          parts.push_back(value);
        }
      }
      // Each part of one micro-batch, computed by an action.
      auto keyOf = [&](Value part) -> std::optional<int64_t> {
        auto deps = dependsOn.find(part);
        Operation *def = part.getDefiningOp();
        if (deps == dependsOn.end() || deps->second.count() != 1 || !def ||
            !actionOf.contains(def))
          return std::nullopt;
        return deps->second.find_first();
      };
      if (parts.size() < 2 ||
          !llvm::all_of(parts, [&](Value part) { return keyOf(part); }))
        continue;
      llvm::stable_sort(parts, [&](Value a, Value b) {
        return *keyOf(a) < *keyOf(b);
      });
      Value sum = parts.front();
      size_t ready = actionOf.lookup(sum.getDefiningOp());
      OpBuilder builder(root);
      for (Value part : llvm::drop_begin(parts)) {
        ready = std::max(ready, actionOf.lookup(part.getDefiningOp()));
        Operation *partial = builder.clone(*root);
        partial->setOperands({sum, part});
        after[ready].push_back(partial);
        sum = partial->getResult(0);
      }
      root->getResult(0).replaceAllUsesWith(sum);
      replaced.append(inner);
    }
    if (replaced.empty())
      return after;
    llvm::DenseSet<Operation *> dead(replaced.begin(), replaced.end());
    llvm::erase_if(tail, [&](Operation *op) { return dead.contains(op); });
    for (Operation *op : replaced)
      op->erase();
    return after;
  }

  LogicalResult order(func::FuncOp func, ArrayRef<pipeline::Action> actions,
                      int64_t microBatches, int64_t chunks) {
    if (!func.getBody().hasOneBlock())
      return func.emitError() << "a pipeline stage's graph must be one block";
    Block &body = func.getBody().front();
    llvm::DenseMap<Value, llvm::BitVector> dependsOn;
    // An action's ops are those of one micro-batch on one chunk: key
    // m · V + c.
    const int64_t keys = microBatches * chunks;
    auto keyOf = [&](int64_t mb, int64_t chunk) { return mb * chunks + chunk; };
    llvm::BitVector none(keys);
    // Per op: the micro-batches it depends on and whether it is a forward op.
    SmallVector<Operation *> free, tail;
    SmallVector<SmallVector<Operation *>> forward(keys), backward(keys);
    bool behind = false; // an op with effects stayed in the tail
    llvm::DenseSet<Operation *> inTail;
    for (Operation &op : body.without_terminator()) {
      llvm::BitVector set = none;
      for (Value operand : op.getOperands())
        if (auto it = dependsOn.find(operand); it != dependsOn.end())
          set |= it->second;
      std::optional<int64_t> own;
      if (auto mark = op.getAttrOfType<IntegerAttr>(kMicroBatchAttrName))
        own = mark.getInt();
      else if (auto send = dyn_cast<PipelineSendOp>(op))
        own = send.getMicroBatch();
      else if (auto recv = dyn_cast<PipelineRecvOp>(op))
        own = recv.getMicroBatch();
      if (own) {
        if (*own < 0 || *own >= microBatches)
          return op.emitOpError() << "belongs to micro-batch " << *own
                                  << ", but the step runs " << microBatches;
        int64_t chunk = 0;
        if (auto mark = op.getAttrOfType<IntegerAttr>(kPipelineChunkAttrName))
          chunk = mark.getInt();
        if (chunk < 0 || chunk >= chunks)
          return op.emitOpError() << "belongs to model chunk " << chunk
                                  << ", but the rank holds " << chunks;
        set.set(keyOf(*own, chunk));
      }
      for (Value result : op.getResults())
        dependsOn[result] = set;
      // A sum over the pipeline group (the loss, the outputs after it, a
      // tied weight's gradient) meets the other stages' only where all of
      // them run it: after their schedules, each in program order. In an
      // action it would face a peer's transfer, or a rank whose copy reads
      // no micro-batch (another stage's output: zeros).
      auto reduce = dyn_cast<AllReduceOp>(op);
      bool acrossStages =
          reduce && reduce.getGroup() == CollectiveGroup::pipeline;
      if (set.count() == 1 && !acrossStages) {
        int64_t key = set.find_first();
        // Activation checkpointing's clones keep their forward op's mark
        // but run in the backward, which is when their values are needed.
        bool isForward = (op.hasAttr(kMicroBatchAttrName) &&
                          !op.hasAttr(kRecomputedAttrName)) ||
                         (isa<PipelineSendOp>(op) &&
                          cast<PipelineSendOp>(op).getPeer() == PipelinePeer::next) ||
                         (isa<PipelineRecvOp>(op) &&
                          cast<PipelineRecvOp>(op).getPeer() ==
                              PipelinePeer::previous);
        (isForward ? forward : backward)[key].push_back(&op);
      } else if (set.none() && !acrossStages &&
                 (!behind || isMemoryEffectFree(&op)) &&
                 llvm::none_of(op.getOperands(), [&](Value operand) {
                   return inTail.contains(operand.getDefiningOp());
                 })) {
        free.push_back(&op);
      } else {
        // Behind the micro-batches: what depends on several of them, what
        // has effects after such an op, and what reads either (ZeRO's
        // reshapes of the optimizer's results, say).
        behind |= !isMemoryEffectFree(&op);
        tail.push_back(&op);
        inTail.insert(&op);
      }
    }

    // Move every op to the end, in the new order, before the terminator.
    Operation *terminator = body.getTerminator();
    auto place = [&](ArrayRef<Operation *> group) {
      for (Operation *op : group)
        op->moveBefore(terminator);
    };
    // A schedule that splits the backward (ZB-H1) runs each micro-batch's
    // input-gradient part first, the weight-gradient rest later.
    SmallVector<SmallVector<Operation *>> weight(keys);
    if (llvm::any_of(actions, [](const pipeline::Action &action) {
          return action.pass == pipeline::PassKind::weight;
        }))
      for (int64_t key = 0; key < keys; ++key)
        splitBackward(backward[key], weight[key]);
    // The ops of each action, in the schedule's order.
    SmallVector<SmallVector<Operation *> *> groups;
    for (const pipeline::Action &action : actions) {
      int64_t key = keyOf(action.microBatch, action.chunk);
      groups.push_back(action.pass == pipeline::PassKind::forward
                           ? &forward[key]
                       : action.pass == pipeline::PassKind::backward
                           ? &backward[key]
                           : &weight[key]);
    }
    SmallVector<SmallVector<Operation *>> accumulated =
        accumulateInActions(tail, dependsOn, groups);
    SmallVector<SmallVector<Operation *>> ahead =
        attachToFirstUser(tail, dependsOn, groups);
    place(free);
    for (auto [group, attached, sums] : llvm::zip(groups, ahead, accumulated)) {
      place(attached);
      place(*group);
      place(sums);
    }
    place(tail);

    // A value must still be defined before its uses: an op the backward of
    // a micro-batch reads that stayed behind an op with effects would not be.
    llvm::DenseSet<Value> defined(body.getArguments().begin(),
                                  body.getArguments().end());
    for (Operation &op : body) {
      for (Value operand : op.getOperands())
        if (!defined.contains(operand)) {
          InFlightDiagnostic diag =
              op.emitOpError() << "would run before an operand it reads in the "
                               << schedule << " order of this pipeline stage";
          // What reads no micro-batch and stayed behind goes ahead of the
          // action that reads it (attachToFirstUser); an operand still
          // behind is an op the grouping above does not know.
          if (Operation *def = operand.getDefiningOp())
            diag.attachNote(def->getLoc())
                << "the operand is '" << def->getName()
                << "', which the schedule leaves after this op";
          return diag;
        }
      defined.insert(op.result_begin(), op.result_end());
    }
    return success();
  }
};
} // namespace
