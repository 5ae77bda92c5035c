//===- RandomLtd.cpp - --dsc-random-ltd ------------------------------------===//
//
// Random layerwise token dropping (random-LTD) as a forward rewrite: each
// chosen block runs on K of the sequence's T tokens, a sorted random subset
// drawn once per step and sample (dsc.random_ltd_indices) and shared by
// every chosen block. Before the block the kept tokens of its hidden state
// are gathered; after it, its outputs are scattered back into the full
// sequence and the dropped tokens pass through unchanged. The block's own
// ops are cloned at length K (SequenceRetype.h); a causal mask over K x K
// sorted tokens is exactly the full mask restricted to them. The pass runs
// before autodiff, so the backward of the gather, the block and the scatter
// is derived.
//
// A block is a run of ops in program order: from its first state load to
// the next load of a state of something else. Its output is the one value
// its ops compute that is read after it; its hidden state the one value
// from before the run that its ops read (loads, constants and the step key
// aside), or, when they read several, the one of the output's type. The
// others are masks: a full-length value that meets the kept tokens
// elementwise (an encoder's attention mask [B, 1, 1, T] or [B, 1, T, T], a
// mask buffer [B, T, D]) has its sequence dimensions, rows and columns,
// gathered by the same indices, so a kept query sees the kept keys with
// the mask's values between them.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Transforms/Passes.h"

#include "BlockNames.h"
#include "SequenceRetype.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_RANDOMLTD
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

namespace {
bool isConstantLike(Value v) {
  Operation *def = v.getDefiningOp();
  return def && isa<LoadOp, ConstantOp, StepKeyOp>(def);
}

struct RandomLtdPass : public dsc::impl::RandomLtdBase<RandomLtdPass> {
  using RandomLtdBase::RandomLtdBase;

  /// The gathered indices [B, K, D] and the kept-token mask [B, T, 1],
  /// built once for the first block that needs them.
  struct Shared {
    Value indices;
    Value indices3;
    Value keep;
  };

  LogicalResult dropTokens(func::FuncOp func) {
    Block &body = func.getBody().front();
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    SmallVector<BlockRun> runs = findBlocks(ops);
    if (runs.empty())
      return func.emitError("--dsc-random-ltd: the graph has no repeated "
                            "blocks (states named <prefix>.<i>.*)");
    SmallVector<int64_t> chosen(layers.begin(), layers.end());
    if (chosen.empty())
      for (int64_t i = 1; i + 1 < int64_t(runs.size()); ++i)
        chosen.push_back(i);
    for (int64_t id : chosen)
      if (id < 0 || id >= int64_t(runs.size()))
        return func.emitError() << "--dsc-random-ltd: layer " << id
                                << " does not exist (the model has "
                                << runs.size() << " blocks)";
    llvm::sort(chosen);
    chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
    Shared shared;
    for (int64_t id : chosen)
      if (failed(dropInBlock(func, ops, runs[id], shared)))
        return failure();
    return success();
  }

  /// An exported block may begin or end at a hidden state's reshape to
  /// rows ([B, T, D] -> [B * T, D]), which the graph places before the
  /// next block's first load (BERT): the run gives up the reshapes that
  /// end it and takes those just before it that only it reads, so that it
  /// reads and returns the hidden state itself.
  static BlockRun aroundRowReshapes(ArrayRef<Operation *> ops, BlockRun run) {
    auto rowReshape = [](Operation *op) {
      auto reshape = dyn_cast<ReshapeOp>(op);
      return reshape && reshape.getInput().getType().getRank() == 3 &&
             reshape.getType().getRank() != 3;
    };
    while (run.end > run.begin + 1 && rowReshape(ops[run.end - 1]))
      --run.end;
    auto readHere = [&](Operation *op) {
      return llvm::all_of(op->getUsers(), [&](Operation *user) {
        return llvm::is_contained(ops.slice(run.begin, run.end - run.begin), user);
      });
    };
    while (run.begin > 0 && rowReshape(ops[run.begin - 1]) &&
           readHere(ops[run.begin - 1]))
      --run.begin;
    return run;
  }

  LogicalResult dropInBlock(func::FuncOp func, ArrayRef<Operation *> ops,
                            const BlockRun &found, Shared &shared) {
    BlockRun run = aroundRowReshapes(ops, found);
    llvm::SmallPtrSet<Operation *, 32> inRun;
    for (size_t p = run.begin; p < run.end; ++p)
      inRun.insert(ops[p]);
    llvm::SetVector<Value> entering, leaving;
    for (size_t p = run.begin; p < run.end; ++p) {
      for (Value operand : ops[p]->getOperands())
        if (!isConstantLike(operand) &&
            (!operand.getDefiningOp() || !inRun.contains(operand.getDefiningOp())))
          entering.insert(operand);
      for (Value result : ops[p]->getResults())
        if (llvm::any_of(result.getUsers(),
                         [&](Operation *user) { return !inRun.contains(user); }))
          leaving.insert(result);
    }
    Location loc = ops[run.begin]->getLoc();
    SmallVector<Value> hidden(entering.begin(), entering.end());
    if (hidden.size() > 1 && leaving.size() == 1)
      llvm::erase_if(hidden, [&](Value v) {
        return v.getType() != leaving.front().getType();
      });
    if (hidden.size() != 1 || leaving.size() != 1)
      return emitError(loc) << "--dsc-random-ltd: block '" << run.name
                            << "' must read one hidden state and return one, "
                               "got "
                            << hidden.size() << " and " << leaving.size();
    Value x = hidden.front(), y = leaving.front();
    auto type = dyn_cast<RankedTensorType>(x.getType());
    if (!type || type.getRank() != 3 || y.getType() != type)
      return emitError(loc) << "--dsc-random-ltd: block '" << run.name
                            << "' must map a [batch, seq, width] hidden state "
                               "to one of the same type, got "
                            << x.getType() << " -> " << y.getType();
    int64_t batch = type.getDimSize(0), length = type.getDimSize(1),
            width = type.getDimSize(2);
    if (kept >= length)
      return success(); // nothing dropped: the block as it is
    Type elem = type.getElementType();
    auto tensor = [&](ArrayRef<int64_t> shape, Type e) {
      return RankedTensorType::get(shape, e);
    };
    OpBuilder b(func.getContext());
    if (!shared.indices3) {
      b.setInsertionPointToStart(&func.getBody().front());
      Value key;
      func.walk([&](StepKeyOp op) { key = op; });
      if (!key)
        key = StepKeyOp::create(b, loc, tensor({4}, b.getI64Type()));
      else
        b.setInsertionPointAfterValue(key);
      Value indices = RandomLtdIndicesOp::create(
          b, loc, tensor({batch, kept}, b.getI64Type()), key, length, seed);
      shared.indices = indices;
      Value column = ReshapeOp::create(b, loc, tensor({batch, kept, 1}, b.getI64Type()),
                                       indices);
      shared.indices3 = BroadcastOp::create(
          b, loc, tensor({batch, kept, width}, b.getI64Type()), column);
      auto splat = [&](ArrayRef<int64_t> shape, double v) -> Value {
        return ConstantOp::create(
            b, loc, DenseElementsAttr::get(tensor(shape, elem), b.getFloatAttr(elem, v)));
      };
      Value hits = ScatterAddOp::create(b, loc, tensor({batch, length, 1}, elem),
                                        splat({batch, length, 1}, 0.0), column,
                                        splat({batch, kept, 1}, 1.0), 1);
      shared.keep = CompareOp::create(b, loc, ComparisonDirection::gt, hits,
                                      splat({}, 0.5));
    }
    // A mask: batch first (or 1, broadcast to the batch), every other
    // dimension it has to lose gathered from the sequence's length to the
    // kept tokens, one dimension after another.
    auto fit = [&](OpBuilder &fb, Operation *user, Value operand,
                   ArrayRef<int64_t> wanted) -> FailureOr<Value> {
      auto full = cast<RankedTensorType>(operand.getType());
      ArrayRef<int64_t> shape = full.getShape();
      bool gatherable = full.getRank() >= 2 && wanted[0] == shape[0] &&
                        (shape[0] == batch || shape[0] == 1);
      for (int64_t d = 1; d < full.getRank(); ++d)
        if (wanted[d] != shape[d] && (shape[d] != length || wanted[d] != kept))
          gatherable = false;
      if (!gatherable)
        return user->emitError()
               << "--dsc-random-ltd: block '" << run.name
               << "' reads a full-length value that its hidden state does not "
                  "flow into ("
               << operand.getType()
               << "): only a mask with the batch first (or 1) can have its "
                  "kept rows and columns gathered";
      Location at = user->getLoc();
      Value value = operand;
      SmallVector<int64_t> now(shape);
      if (now[0] != batch) {
        now[0] = batch;
        value = BroadcastOp::create(fb, at, tensor(now, full.getElementType()), value);
      }
      for (int64_t d = 1; d < full.getRank(); ++d) {
        if (wanted[d] == shape[d])
          continue;
        SmallVector<int64_t> along(full.getRank(), 1);
        along[0] = batch;
        along[d] = kept;
        now[d] = kept;
        Value index = BroadcastOp::create(
            fb, at, tensor(now, fb.getI64Type()),
            ReshapeOp::create(fb, at, tensor(along, fb.getI64Type()), shared.indices));
        value = GatherOp::create(fb, at, value, index, d);
      }
      return value;
    };
    SequenceRetyper retyper(fit);
    Operation *first = *llvm::find_if(
        ArrayRef(ops).slice(run.begin, run.end - run.begin), [&](Operation *op) {
          return llvm::is_contained(op->getOperands(), x);
        });
    b.setInsertionPoint(first);
    retyper.map(x, GatherOp::create(b, loc, x, shared.indices3, 1));
    SmallVector<Operation *> originals;
    for (size_t p = run.begin; p < run.end; ++p) {
      FailureOr<Operation *> clone = retyper.retype(ops[p]);
      if (failed(clone))
        return failure();
      if (*clone)
        originals.push_back(ops[p]);
    }
    Value yKept = retyper.lookup(y);
    if (!yKept)
      return emitError(loc) << "--dsc-random-ltd: block '" << run.name
                            << "' returns a value its hidden state does not "
                               "flow into";
    b.setInsertionPointAfterValue(yKept);
    Value zeros = ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getFloatAttr(elem, 0.0)));
    Value scattered = ScatterAddOp::create(b, loc, type, zeros, shared.indices3,
                                           yKept, 1);
    // Selected, not added to x: the kept tokens get the block's outputs bit
    // for bit, the dropped ones x's.
    Value merged = SelectOp::create(b, loc, shared.keep, scattered, x);
    y.replaceUsesWithIf(merged, [&](OpOperand &use) {
      return !inRun.contains(use.getOwner()) && use.getOwner() != merged.getDefiningOp();
    });
    for (Operation *op : llvm::reverse(originals))
      if (op->use_empty())
        op->erase();
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (kept < 1) {
      module.emitError() << "--dsc-random-ltd: kept must be at least 1, got "
                         << int64_t(kept);
      return signalPassFailure();
    }
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && func.getNumArguments() > 0 &&
          func.getArgAttr(0, "dsc.input") && failed(dropTokens(func)))
        return signalPassFailure();
  }
};
} // namespace
