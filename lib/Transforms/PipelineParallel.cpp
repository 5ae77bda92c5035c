//===- PipelineParallel.cpp - --dsc-pipeline-parallel ----------------------===//
//
// Cuts the forward graph into pipeline stages, balanced by the blocks'
// FLOPs, and keeps one stage's program: its ops once per micro-batch, with
// the values that cross a cut sent to the next stage and received from the
// previous one. Autodiff then builds the stage's backward, the gradients'
// transfers included, from the transfer ops' own rules; the schedule pass
// orders the micro-batches. For the interleaved schedule the cut makes V·P
// virtual stages (chunks) and rank r keeps chunks r, r + P, ...: a chunk's
// neighbours are on the neighbouring ranks, the last rank's next being
// rank 0, so the transfers stay between next and previous.
//
//===----------------------------------------------------------------------===//

#include "BlockNames.h"

#include "dsc/Analysis/MatmulFlops.h"
#include "dsc/Analysis/PipelineStages.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Support/TensorSize.h"
#include "dsc/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_PIPELINEPARALLEL
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

static double bytesOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  return double(tensor.getNumElements()) *
         double(llvm::divideCeil(tensor.getElementTypeBitWidth(), 8));
}

namespace {
/// A run of the forward's ops, [begin, end), and what it costs.
struct Span {
  std::string name;
  size_t begin = 0, end = 0;
  double flops = 0;
  double parameterBytes = 0;
  double activationBytes = 0;
};

struct PipelineParallelPass
    : public dsc::impl::PipelineParallelBase<PipelineParallelPass> {
  using PipelineParallelBase::PipelineParallelBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t stages = lookupPipelineParallelSize(module);
    if (stages < 2) {
      module.emitError() << "--dsc-pipeline-parallel needs a mesh of at least "
                            "2 pipeline stages (run --dsc-data-parallel "
                            "pipeline-parallel=P first), got "
                         << stages;
      return signalPassFailure();
    }
    if (stage < 0 || stage >= stages) {
      module.emitError() << "pipeline stage " << int64_t(stage)
                         << " is not one of the " << stages << " stages";
      return signalPassFailure();
    }
    if (microBatches < 1) {
      module.emitError() << "micro-batches must be at least 1, got "
                         << int64_t(microBatches);
      return signalPassFailure();
    }
    if (chunks < 1) {
      module.emitError() << "model chunks per rank must be at least 1, got "
                         << int64_t(chunks);
      return signalPassFailure();
    }
    // Megatron's rule: the interleaved schedule walks the micro-batches in
    // groups of P through each chunk.
    if (chunks > 1 && microBatches % stages != 0) {
      module.emitError() << "the interleaved schedule's " << int64_t(chunks)
                         << " model chunks per rank need the micro-batches ("
                         << int64_t(microBatches)
                         << ") to be a multiple of the " << stages
                         << " pipeline stages";
      return signalPassFailure();
    }
    // The teacher's blocks would be cut among the student's, and its
    // metrics (lm_loss, kd_loss) with them; that is not built yet.
    for (auto state : module.getOps<StateOp>())
      if (state.getRole() == StateRole::teacher) {
        state.emitError() << "pipeline parallelism does not cut a graph with "
                             "a distillation teacher (--dsc-distill) yet";
        return signalPassFailure();
      }
    SmallVector<func::FuncOp> graphs;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal())
        graphs.push_back(func);
    if (graphs.size() != 1) {
      module.emitError() << "pipeline parallelism cuts one graph, found "
                         << graphs.size();
      return signalPassFailure();
    }
    if (failed(cut(module, graphs.front(), stages)))
      return signalPassFailure();
  }

  /// Cuts `func` into `ranks` · V virtual stages, stage k on rank k mod
  /// `ranks`.
  LogicalResult cut(ModuleOp module, func::FuncOp func, int64_t ranks) {
    const int64_t stages = ranks * chunks;
    Block &body = func.getBody().front();
    if (!func.getBody().hasOneBlock())
      return func.emitError() << "pipeline parallelism cuts a single-block graph";
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    if (ret.getNumOperands() == 0)
      return func.emitError() << "pipeline parallelism cuts a graph whose "
                                 "first output is its loss; this one has none";
    auto lossType = dyn_cast<RankedTensorType>(ret.getOperand(0).getType());
    if (!lossType || lossType.getRank() != 0 || !lossType.getElementType().isF32())
      return func.emitError() << "pipeline parallelism needs an f32 scalar "
                                 "loss, got "
                              << ret.getOperand(0).getType();
    // The outputs after the loss (the experts' metrics) are delivered to
    // every rank by a sum over the pipeline group (rebuild), which needs
    // their shapes; a graph input returned as is has no stage to compute it.
    for (OpOperand &output : llvm::drop_begin(ret->getOpOperands())) {
      auto type = dyn_cast<RankedTensorType>(output.get().getType());
      if (!type || !type.hasStaticShape())
        return func.emitError()
               << "pipeline parallelism sums output #"
               << output.getOperandNumber()
               << " over the pipeline group, which needs a static shape, got "
               << output.get().getType();
      if (isa<BlockArgument>(output.get()))
        return func.emitError() << "output #" << output.getOperandNumber()
                                << " is a graph input, which no pipeline "
                                   "stage computes";
    }

    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    SmallVector<BlockRun> runs = findBlocks(ops);
    // Passes after the cut (activation checkpointing) find the blocks by
    // their states' names; a stage holding one block could not tell.
    {
      SmallVector<StringRef> names;
      for (Operation *op : ops)
        if (auto load = dyn_cast<LoadOp>(op))
          names.push_back(load.getState());
      Builder builder(module.getContext());
      module->setAttr(kRepeatedBlocksAttrName,
                      builder.getStrArrayAttr(BlockNames(names).prefixes()));
    }
    if (int64_t(runs.size()) < stages && chunks == 1)
      return func.emitError()
             << "cannot cut this graph's " << runs.size()
             << " repeated blocks (states named <prefix>.<i>.*) into " << stages
             << " pipeline stages: pipeline-parallel must not exceed the "
                "model's blocks";
    if (int64_t(runs.size()) < stages)
      return func.emitError()
             << "cannot cut this graph's " << runs.size()
             << " repeated blocks (states named <prefix>.<i>.*) into "
             << int64_t(chunks) << " x " << ranks
             << " model chunks: pipeline-chunks times pipeline-parallel must "
                "not exceed the model's blocks";

    // Each block runs up to the next block's first op; the ops before the
    // first block are the prologue, those after the last the epilogue.
    SmallVector<Span> blocks;
    for (auto [i, run] : llvm::enumerate(runs))
      blocks.push_back({run.name, run.begin,
                        i + 1 < runs.size() ? runs[i + 1].begin : run.end});
    Span prologue{"(before the blocks)", 0, blocks.front().begin};
    Span epilogue{"(after the blocks)", blocks.back().end, ops.size()};
    for (Span &block : blocks)
      measure(block, ops);
    measure(prologue, ops);
    measure(epilogue, ops);

    SmallVector<double> costs;
    for (const Span &block : blocks)
      costs.push_back(block.flops);
    llvm::Expected<pipeline::StageCut> balanced = pipeline::balanceStages(
        costs, stages, prologue.flops, epilogue.flops);
    if (!balanced)
      return func.emitError() << llvm::toString(balanced.takeError());

    // Stage s runs ops [cuts[s], cuts[s + 1]).
    SmallVector<size_t> cuts;
    for (int64_t first : balanced->firstBlock)
      cuts.push_back(first == 0 ? 0 : blocks[first].begin);
    cuts.push_back(ops.size());
    DenseMap<Operation *, int64_t> stageOf;
    for (int64_t s = 0; s < stages; ++s)
      for (size_t p = cuts[s]; p < cuts[s + 1]; ++p)
        stageOf[ops[p]] = s;

    // Loads and constants are repeated where they are used; other values
    // read by a later stage cross each cut in between (live[k]: the values
    // that stage k receives, in program order).
    auto repeated = [](Operation *op) {
      return op->getNumOperands() == 0 && op->getNumRegions() == 0 &&
             (isa<LoadOp>(op) || isMemoryEffectFree(op));
    };
    // The loss is the last stage's; an output after it is returned by the
    // stage that computes it (one computed from loads and constants alone:
    // the last), so that it crosses no cut, micro-batch after micro-batch,
    // only to be returned.
    SmallVector<int64_t> outputStages(ret.getNumOperands(), stages - 1);
    for (OpOperand &output : llvm::drop_begin(ret->getOpOperands()))
      if (Operation *def = output.get().getDefiningOp(); !repeated(def))
        outputStages[output.getOperandNumber()] = stageOf.lookup(def);
    auto stageOfUse = [&](OpOperand &use) {
      return use.getOwner() == ret ? outputStages[use.getOperandNumber()]
                                   : stageOf.lookup(use.getOwner());
    };
    SmallVector<llvm::SetVector<Value>> live(stages + 1);
    for (Operation *op : ops) {
      if (repeated(op))
        continue;
      for (Value result : op->getResults()) {
        int64_t last = stageOf[op];
        for (OpOperand &use : result.getUses())
          last = std::max(last, stageOfUse(use));
        for (int64_t k = stageOf[op] + 1; k <= last; ++k)
          live[k].insert(result);
      }
    }
    for (int64_t k = 1; k < stages; ++k)
      for (Value v : live[k])
        if (!isa<RankedTensorType>(v.getType()) ||
            !cast<RankedTensorType>(v.getType()).hasStaticShape())
          return v.getDefiningOp()->emitError()
                 << "this value crosses from pipeline stage " << k - 1
                 << " to " << k << " but has no static shape to send";

    // A parameter that several ranks read (GPT-2's embedding, also its
    // head) is held by each; their gradients' sum keeps the copies equal,
    // as DeepSpeed's tied layers do: over the pipeline group when every
    // rank reads it, else over the readers alone (the attribute lists
    // their stages), which DeepSpeed's tied-layer groups are. Chunks of
    // one rank share its copy, whose gradient autodiff sums.
    llvm::StringMap<llvm::SmallDenseSet<int64_t>> readers;
    for (Operation *op : ops)
      if (auto load = dyn_cast<LoadOp>(op))
        for (OpOperand &use : load->getUses())
          readers[load.getState()].insert(stageOfUse(use) % ranks);
    for (auto state : module.getOps<StateOp>()) {
      auto it = readers.find(state.getSymName());
      if (it == readers.end() || it->second.size() < 2 ||
          state.getRole() != StateRole::parameter)
        continue;
      if (int64_t(it->second.size()) == ranks) {
        state->setAttr(kPipelineTiedAttrName,
                       UnitAttr::get(module.getContext()));
        continue;
      }
      SmallVector<int64_t> stagesReading(it->second.begin(), it->second.end());
      llvm::sort(stagesReading);
      state->setAttr(kPipelineTiedAttrName,
                     DenseI64ArrayAttr::get(module.getContext(), stagesReading));
    }

    if (print) {
      // What each stage holds: every state its ops read, a tied one on
      // each stage that reads it.
      SmallVector<double> stageParameters(ranks, 0.0);
      llvm::StringSet<> counted;
      for (Operation *op : ops)
        if (auto load = dyn_cast<LoadOp>(op); load && counted.insert(load.getState()).second)
          for (int64_t reader : readers[load.getState()])
            stageParameters[reader] += bytesOf(load.getType());
      report(func, blocks, prologue, epilogue, *balanced, live, stageParameters);
    }
    return rebuild(module, func, ops, stageOf, live, outputStages, ranks,
                   repeated);
  }

  /// A span's FLOPs, the bytes of the states it loads, and the bytes of
  /// the values it computes (what its backward may keep).
  static void measure(Span &span, ArrayRef<Operation *> ops) {
    llvm::DenseSet<Attribute> loaded;
    for (size_t p = span.begin; p < span.end; ++p) {
      Operation *op = ops[p];
      span.flops += matmulFlops(op);
      if (auto load = dyn_cast<LoadOp>(op)) {
        if (loaded.insert(load.getStateAttr()).second)
          span.parameterBytes += bytesOf(load.getType());
        continue;
      }
      for (Value result : op->getResults())
        span.activationBytes += bytesOf(result.getType());
    }
  }

  void report(func::FuncOp func, ArrayRef<Span> blocks, const Span &prologue,
              const Span &epilogue, const pipeline::StageCut &cut,
              ArrayRef<llvm::SetVector<Value>> live,
              ArrayRef<double> stageParameters) {
    const int64_t stages = cut.firstBlock.size(),
                  ranks = stageParameters.size();
    llvm::raw_ostream &os = llvm::errs();
    os << "dsc-pipeline-parallel: @" << func.getSymName() << ": "
       << blocks.size() << " blocks in ";
    if (stages == ranks)
      os << stages << " stages";
    else
      os << stages / ranks << " x " << ranks << " chunks";
    os << ", balanced by matrix-product FLOPs per micro-batch\n";
    auto line = [&](const Span &span) {
      os << llvm::formatv("  {0,-22} {1,12:F0} FLOPs {2,10:F0} B parameters "
                          "{3,10:F0} B activations\n",
                          span.name, span.flops, span.parameterBytes,
                          span.activationBytes);
    };
    line(prologue);
    for (const Span &block : blocks)
      line(block);
    line(epilogue);
    for (int64_t s = 0; s < stages; ++s) {
      int64_t first = cut.firstBlock[s];
      int64_t last = s + 1 < stages ? cut.firstBlock[s + 1] - 1
                                    : int64_t(blocks.size()) - 1;
      double activations = s == 0 ? prologue.activationBytes : 0;
      if (s == stages - 1)
        activations += epilogue.activationBytes;
      for (int64_t b = first; b <= last; ++b)
        activations += blocks[b].activationBytes;
      double sent = 0;
      for (Value v : live[s + 1])
        sent += bytesOf(v.getType());
      if (stages == ranks) {
        os << llvm::formatv("  stage {0}: blocks {1}..{2} {3,12:F0} FLOPs "
                            "{4,10:F0} B parameters {5,10:F0} B activations, "
                            "sends {6:F0} B per micro-batch\n",
                            s, blocks[first].name, blocks[last].name,
                            cut.stageCost[s], stageParameters[s], activations,
                            s + 1 < stages ? sent : 0.0);
        continue;
      }
      os << llvm::formatv("  chunk {0} (rank {1}): blocks {2}..{3} {4,12:F0} "
                          "FLOPs {5,10:F0} B activations, sends {6:F0} B per "
                          "micro-batch\n",
                          s, s % ranks, blocks[first].name, blocks[last].name,
                          cut.stageCost[s], activations,
                          s + 1 < stages ? sent : 0.0);
    }
    // A rank's states serve all its chunks.
    if (stages != ranks)
      for (int64_t r = 0; r < ranks; ++r)
        os << llvm::formatv("  rank {0}: {1:F0} B parameters\n", r,
                            stageParameters[r]);
  }

  /// Replaces `func` by the program of rank `stage` (its chunks' ops) and
  /// drops the states it does not read.
  LogicalResult rebuild(ModuleOp module, func::FuncOp func,
                        ArrayRef<Operation *> ops,
                        DenseMap<Operation *, int64_t> &stageOf,
                        ArrayRef<llvm::SetVector<Value>> live,
                        ArrayRef<int64_t> outputStages, int64_t ranks,
                        function_ref<bool(Operation *)> repeated) {
    const int64_t r = stage, m = microBatches, v = chunks;
    const int64_t stages = ranks * v;
    MLIRContext *context = module.getContext();
    // The inputs of all the micro-batches, one after the other.
    SmallVector<Type> inputs;
    for (BlockArgument arg : func.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || type.getRank() == 0 || !type.hasStaticShape())
        return func.emitError() << "graph input #" << arg.getArgNumber()
                                << " has no leading (micro-batch) dimension "
                                   "to stack the micro-batches along";
      SmallVector<int64_t> shape(type.getShape());
      shape[0] *= m;
      inputs.push_back(RankedTensorType::get(shape, type.getElementType()));
    }
    Block &old = func.getBody().front();
    auto ret = cast<func::ReturnOp>(old.getTerminator());
    auto *entry = new Block();
    for (Type type : inputs)
      entry->addArgument(type, func.getLoc());
    func.getBody().push_back(entry);
    OpBuilder b = OpBuilder::atBlockEnd(entry);

    // This rank's program: its chunks' ops and the loads and constants
    // they read (found backwards: users before definitions).
    llvm::DenseSet<Operation *> needed;
    for (Operation *op : llvm::reverse(ops)) {
      bool own = stageOf.lookup(op) % ranks == r && !repeated(op);
      bool read = repeated(op) && llvm::any_of(op->getUsers(), [&](Operation *user) {
                    return needed.contains(user);
                  });
      if (own || read)
        needed.insert(op);
    }
    // What depends on no micro-batch (loads, constants, what is computed
    // from them alone: a weight's transpose, the position embeddings) runs
    // once, before the micro-batches.
    llvm::DenseSet<Value> perMicroBatch(func.getArguments().begin(),
                                        func.getArguments().end());
    for (int64_t k = r; k < stages; k += ranks)
      perMicroBatch.insert(live[k].begin(), live[k].end());
    IRMapping once;
    SmallVector<Operation *> repeatedOps;
    // The step's key names the call's first sample, micro-batch 0's; each
    // micro-batch gets its own (below), so that its random ops draw from
    // its samples' places in the step's global batch, as the call of that
    // micro-batch alone does under gradient accumulation. What reads a key
    // is then per micro-batch too.
    SmallVector<StepKeyOp> keys;
    for (Operation *op : ops) {
      if (!needed.contains(op))
        continue;
      if (auto key = dyn_cast<StepKeyOp>(op)) {
        keys.push_back(key);
        perMicroBatch.insert(key.getResult());
        continue;
      }
      if (llvm::any_of(op->getOperands(),
                       [&](Value v) { return perMicroBatch.contains(v); })) {
        perMicroBatch.insert(op->result_begin(), op->result_end());
        repeatedOps.push_back(op);
        continue;
      }
      b.clone(*op, once);
    }

    auto markAttr = b.getStringAttr(kMicroBatchAttrName);
    auto chunkAttr = b.getStringAttr(kPipelineChunkAttrName);
    // A micro-batch's samples: the rows of its inputs, which the runtime
    // requires to be the same for every input.
    int64_t rows = 0;
    for (BlockArgument arg : func.getArguments()) {
      int64_t dim = cast<RankedTensorType>(arg.getType()).getDimSize(0);
      if (!keys.empty() && m > 1 && rows != 0 && dim != rows)
        return keys.front().emitError()
               << "the micro-batches' random ops need each micro-batch's "
                  "first sample, but the graph's inputs hold "
               << rows << " and " << dim << " rows";
      rows = rows == 0 ? dim : rows;
    }
    // Each micro-batch reads what runs once and its own keys, made ahead
    // of the micro-batches and unmarked, like the loads: a key depends on
    // no micro-batch's data.
    SmallVector<IRMapping> starts(m, once);
    for (int64_t mb = 0; mb < m; ++mb)
      for (StepKeyOp key : keys) {
        auto clone = cast<StepKeyOp>(b.clone(*key));
        clone.setSampleOffset(key.getSampleOffset() + mb * rows);
        starts[mb].map(key.getResult(), clone.getResult());
      }
    SmallVector<Value> zeros, losses;
    // The outputs after the loss that this rank computes: micro-batch
    // m - 1's (null: another rank's).
    SmallVector<Value> outputs(ret.getNumOperands());
    for (int64_t mb = 0; mb < m; ++mb) {
      IRMapping map = starts[mb];
      // The rank's chunks in model order; chunk c runs virtual stage k.
      for (int64_t c = 0, k = r; c < v; ++c, k += ranks) {
        auto inChunk = [&](Operation *op) {
          return needed.contains(op) && stageOf.lookup(op) == k;
        };
        // The first chunk goes unmarked, so that one chunk per rank adds
        // nothing to the IR.
        auto markChunk = [&](Operation *op) {
          if (c > 0)
            op->setAttr(chunkAttr, b.getI64IntegerAttr(c));
        };
        auto mark = [&](Operation *op) {
          op->setAttr(markAttr, b.getI64IntegerAttr(mb));
          markChunk(op);
        };
        for (auto [arg, stacked] :
             llvm::zip(func.getArguments(), entry->getArguments())) {
          if (llvm::none_of(arg.getUsers(), inChunk))
            continue;
          int64_t rows = cast<RankedTensorType>(arg.getType()).getDimSize(0);
          auto slice = SliceOp::create(b, func.getLoc(), stacked, /*dim=*/0,
                                       mb * rows, (mb + 1) * rows, /*step=*/1);
          mark(slice);
          map.map(arg, slice.getResult());
        }
        if (k > 0)
          for (Value value : live[k]) {
            auto recv = PipelineRecvOp::create(b, value.getLoc(), value.getType(),
                                               PipelinePeer::previous, mb);
            markChunk(recv);
            map.map(value, recv.getResult());
          }
        for (Operation *op : repeatedOps)
          if (stageOf.lookup(op) == k)
            mark(b.clone(*op, map));
        if (k + 1 < stages)
          for (Value value : live[k + 1]) {
            auto send = PipelineSendOp::create(b, value.getLoc(),
                                               map.lookup(value),
                                               PipelinePeer::next, mb);
            markChunk(send);
            zeros.push_back(send);
          }
        else
          losses.push_back(map.lookup(ret.getOperand(0)));
        if (mb == m - 1)
          for (OpOperand &output : llvm::drop_begin(ret->getOpOperands())) {
            if (outputStages[output.getOperandNumber()] != k)
              continue;
            Value value = output.get();
            // One of the loads and constants that only the output reads,
            // which the rank's program left out.
            if (!map.contains(value))
              map.map(value, b.clone(*value.getDefiningOp(), once)->getResult(0));
            outputs[output.getOperandNumber()] = map.lookup(value);
          }
      }
    }

    // The rank's share of the loss (the mean of the last chunk's losses
    // plus its sends' zeros), then the step's loss on every rank.
    Location loc = ret.getLoc();
    auto scalar = [&](double value) {
      auto type = RankedTensorType::get({}, b.getF32Type());
      return ConstantOp::create(
                 b, loc, DenseElementsAttr::get(type, b.getF32FloatAttr(value)))
          .getResult();
    };
    Value local;
    for (Value term : losses)
      local = local ? AddOp::create(b, loc, local, term).getResult() : term;
    if (local && m > 1)
      local = MulOp::create(b, loc, local, scalar(1.0 / double(m)));
    for (Value term : zeros)
      local = local ? AddOp::create(b, loc, local, term).getResult() : term;
    if (!local)
      local = scalar(0.0);
    SmallVector<Value> results = {
        AllReduceOp::create(b, loc, local, CollectiveGroup::pipeline)};
    // Each output after the loss on every rank (rank 0 logs them): the
    // sum over the pipeline group of its stage's value and the other
    // stages' zeros, which is exact. It is micro-batch m - 1's, the value
    // a single rank's gradient accumulation returns from the step's last
    // call. A sum rather than a transfer to rank 0: each stage runs it after
    // its schedule, in one order on all (the schedule pass keeps
    // collectives over the pipeline group behind the micro-batches), and
    // the ranks' outputs stay alike.
    for (auto [output, own] :
         llvm::zip(llvm::drop_begin(ret.getOperands()), llvm::drop_begin(outputs))) {
      if (!own)
        own = ConstantOp::create(b, loc,
                                 cast<ElementsAttr>(b.getZeroAttr(output.getType())));
      results.push_back(AllReduceOp::create(b, loc, own, CollectiveGroup::pipeline));
    }
    func::ReturnOp::create(b, loc, results);
    // Micro-batches 0 .. m - 2's copies of what only an output reads.
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*entry)))
      if (isOpTriviallyDead(&op))
        op.erase();

    // Drop the old body, then the states no op reads any more: those
    // another stage reads. A state the whole graph never reads (a buffer
    // the model registers but does not use) stays on stage 0, so that the
    // stages' states together are the model's, as a checkpoint of the
    // pipeline holds them.
    llvm::StringSet<> readByGraph;
    old.walk([&](LoadOp load) { readByGraph.insert(load.getState()); });
    old.dropAllDefinedValueUses();
    old.erase();
    func.setType(FunctionType::get(context, inputs, func.getResultTypes()));
    llvm::StringSet<> read;
    module.walk([&](LoadOp load) { read.insert(load.getState()); });
    for (auto state : llvm::make_early_inc_range(module.getOps<StateOp>()))
      if ((state.getRole() == StateRole::parameter ||
           state.getRole() == StateRole::buffer) &&
          !read.contains(state.getSymName()) &&
          (r != 0 || readByGraph.contains(state.getSymName())))
        state.erase();
    OpBuilder top(module.getBodyRegion());
    module->setAttr(kPipelineStageAttrName, top.getI64IntegerAttr(r));
    module->setAttr(kPipelineMicroBatchesAttrName, top.getI64IntegerAttr(m));
    if (v > 1)
      module->setAttr(kPipelineChunksAttrName, top.getI64IntegerAttr(v));
    return success();
  }
};
} // namespace
