//===- VocabParallel.cpp - vocabulary-parallel embedding and loss ---------===//
//
// Megatron's VocabParallelEmbedding and vocab_parallel_cross_entropy as a
// rewrite of the forward graph, for --dsc-tensor-parallel="vocab-parallel=1".
// Rank r of a tensor group of T ranks holds rows [r·V/T, (r+1)·V/T) of the
// token table (and of an untied head). Everything is built from explicit ops
// whose gradients autodiff already knows; the rank's row offset is the
// rank's element of a constant [0, V/T, 2·V/T, ...] (dsc.local_shard over
// tensor), the only rank-dependent value:
//
//   embedding:  l = ids - offset;  c = clamp(l, 0, V/T - 1);  in = (c == l)
//               e = all_reduce(select(in, embedding(table_r, c), 0)) over tensor
//               (with sequence-parallel, a reduce-scatter along the sequence:
//               SequenceParallel.cpp)
//   logits:     z_r = linear(replicate(x) over tensor, head_r)     [..., V/T]
//   loss:       m = all_reduce(reduce_max(z_r)) over tensor maximum
//               s = z_r - m
//               S = all_reduce(sum(exp(s))) over tensor
//               P = all_reduce(select(in_t, gather(s, c_t), 0)) over tensor
//               loss_i = log(S) - P   (0 where the target is ignored)
//
// The maximum has no gradient (the loss does not depend on it), so the
// logits' cotangent is softmax - one-hot on the rank's own columns; the
// sums over tensor are Megatron's g (identity backward) and the replicate
// its f (all-reduce of the head input's cotangent).
//
//===----------------------------------------------------------------------===//

#include "VocabParallel.h"

#include "FeedForwardBlocks.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::dsc;

namespace {

/// The splitter of one module: the states it sliced, and each function's
/// row offset.
class VocabSplitter {
public:
  VocabSplitter(ModuleOp module, int64_t ranks,
                SmallVectorImpl<AllReduceOp> &embeddingSums)
      : module(module), ranks(ranks), symbols(module),
        embeddingSums(embeddingSums) {}

  LogicalResult run() {
    SmallVector<CrossEntropyOp> losses;
    module.walk([&](CrossEntropyOp ce) { losses.push_back(ce); });
    for (CrossEntropyOp ce : losses)
      if (failed(splitLoss(ce)))
        return failure();
    return success();
  }

private:
  ModuleOp module;
  int64_t ranks;
  SymbolTable symbols;
  SmallVectorImpl<AllReduceOp> &embeddingSums;
  llvm::SetVector<StateOp> sliced;

  /// The linear map that produced `logits` through reshapes that keep the
  /// vocabulary the last dimension and that nothing else reads.
  LinearOp findHead(Value logits, SmallVectorImpl<ReshapeOp> &reshapes) {
    int64_t vocab = tensorOf(logits).getShape().back();
    Value v = logits;
    while (auto reshape = v.getDefiningOp<ReshapeOp>()) {
      if (!reshape->hasOneUse() ||
          tensorOf(reshape.getInput()).getShape().back() != vocab)
        return LinearOp();
      reshapes.push_back(reshape);
      v = reshape.getInput();
    }
    auto head = v.getDefiningOp<LinearOp>();
    if (!head || !head->hasOneUse() || !isParameterLinear(head, symbols))
      return LinearOp();
    return head;
  }

  /// The loads of `state`.
  SmallVector<LoadOp> loadsOf(StateOp state) {
    SmallVector<LoadOp> loads;
    module.walk([&](LoadOp load) {
      if (load.getState() == state.getSymName())
        loads.push_back(load);
    });
    return loads;
  }

  /// `state` becomes this rank's V / T rows of it.
  void sliceRows(StateOp state) {
    if (!sliced.insert(state))
      return;
    RankedTensorType whole = state.getTensorType();
    SmallVector<int64_t> shape(whole.getShape());
    shape[0] /= ranks;
    auto local = RankedTensorType::get(shape, whole.getElementType());
    Builder b(state.getContext());
    state.setPartitionOfAttr(b.getDenseI64ArrayAttr(whole.getShape()));
    state.setPartitionGroup(CollectiveGroup::tensor);
    state.setType(local);
    for (LoadOp load : loadsOf(state))
      load.getResult().setType(local);
  }

  /// Whether `indices` are (reshapes of) an input of the graph: token ids,
  /// not positions computed in it.
  static bool isGraphInput(Value indices) {
    while (auto reshape = indices.getDefiningOp<ReshapeOp>())
      indices = reshape.getInput();
    return isa<BlockArgument>(indices);
  }

  static Value scalar(OpBuilder &b, Location loc, Type elem, double value) {
    auto type = RankedTensorType::get({}, elem);
    Attribute attr = isa<FloatType>(elem)
                         ? Attribute(b.getFloatAttr(elem, value))
                         : Attribute(b.getIntegerAttr(elem, int64_t(value)));
    return ConstantOp::create(b, loc, DenseElementsAttr::get(type, attr));
  }

  /// `ids` relative to this rank's rows: the row to look up (clamped into
  /// them) and whether the id is one of them.
  std::pair<Value, Value> localRows(OpBuilder &b, Location loc, Value ids,
                                    int64_t rows) {
    Type elem = tensorOf(ids).getElementType();
    auto func = cast<func::FuncOp>(ids.getParentBlock()->getParentOp());
    Value offset = tensorRankTimes(func, ranks, rows, elem);
    Value local = SubOp::create(b, loc, ids, offset);
    if (tensorOf(ids).getRank() == 0)
      local = ReshapeOp::create(b, loc, tensorOf(ids), local);
    Value clamped = MaximumOp::create(
        b, loc, MinimumOp::create(b, loc, local, scalar(b, loc, elem, rows - 1)),
        scalar(b, loc, elem, 0));
    Value mine = CompareOp::create(b, loc, ComparisonDirection::eq, clamped, local);
    return {clamped, mine};
  }

  /// `mask` [...] as [..., 1], to select along a trailing dimension.
  static Value trailingOne(OpBuilder &b, Location loc, Value mask) {
    SmallVector<int64_t> shape(tensorOf(mask).getShape());
    shape.push_back(1);
    return ReshapeOp::create(
        b, loc, RankedTensorType::get(shape, tensorOf(mask).getElementType()),
        mask);
  }

  /// The lookup `op` into this rank's rows, summed over the tensor group.
  LogicalResult splitEmbedding(EmbeddingOp op, int64_t vocab) {
    if (op.getPaddingIdx())
      return op.emitError()
             << "--dsc-tensor-parallel: cannot split an embedding with "
                "padding_idx by vocabulary rows (its zero-gradient row is one "
                "rank's)";
    int64_t rows = vocab / ranks;
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto [clamped, mine] = localRows(b, loc, op.getIndices(), rows);
    op.getIndicesMutable().set(clamped);
    RankedTensorType type = tensorOf(op.getResult());
    b.setInsertionPointAfter(op);
    Value masked = SelectOp::create(b, loc, trailingOne(b, loc, mine),
                                    op.getResult(),
                                    scalar(b, loc, type.getElementType(), 0.0));
    auto sum = AllReduceOp::create(b, loc, masked, CollectiveGroup::tensor);
    op.getResult().replaceAllUsesExcept(sum, masked.getDefiningOp());
    embeddingSums.push_back(sum);
    return success();
  }

  /// The embeddings to split with a head of `vocab` rows reading `table`:
  /// those of `table` itself (tied), and those of another parameter of
  /// `vocab` rows that look up the graph's inputs (token ids).
  FailureOr<SmallVector<EmbeddingOp>>
  embeddingsToSplit(LinearOp head, StateOp table, int64_t vocab) {
    SmallVector<EmbeddingOp> found;
    bool ok = true;
    module.walk([&](EmbeddingOp op) {
      StateOp state = parameterLoaded(op.getTable(), symbols);
      if (!state || sliced.contains(state))
        return;
      if (state == table ||
          (state.getTensorType().getDimSize(0) == vocab &&
           isGraphInput(op.getIndices())))
        found.push_back(op);
    });
    // Every read of a table to split must be a lookup split with it, or
    // the head: any other reader would see only the rank's rows.
    llvm::SetVector<StateOp> tables;
    tables.insert(table);
    for (EmbeddingOp op : found)
      tables.insert(parameterLoaded(op.getTable(), symbols));
    for (StateOp state : tables)
      for (LoadOp load : loadsOf(state))
        for (OpOperand &use : load->getUses()) {
          auto lookup = dyn_cast<EmbeddingOp>(use.getOwner());
          bool split = lookup && use.getOperandNumber() == 0 &&
                       llvm::is_contained(found, lookup);
          bool isHead = use.getOwner() == head.getOperation() &&
                        use.get() == head.getWeight();
          if (!split && !isHead) {
            use.getOwner()->emitError()
                << "--dsc-tensor-parallel: @" << state.getSymName()
                << " is split by vocabulary rows, but this op reads it whole";
            ok = false;
          }
        }
    if (!ok)
      return failure();
    return found;
  }

  LogicalResult splitLoss(CrossEntropyOp ce) {
    int64_t vocab = tensorOf(ce.getLogits()).getShape().back();
    if (vocab % ranks != 0)
      return ce.emitError() << "--dsc-tensor-parallel: cannot split the "
                            << "vocabulary of " << vocab << " over the "
                            << ranks << " ranks of a tensor group: " << ranks
                            << " must divide it (pad the vocabulary when "
                               "exporting)";
    SmallVector<ReshapeOp> reshapes;
    LinearOp head = findHead(ce.getLogits(), reshapes);
    if (!head)
      return ce.emitError()
             << "--dsc-tensor-parallel: cannot split this cross-entropy by "
                "vocabulary: its logits are not a linear map of a parameter "
                "(through reshapes that nothing else reads)";
    StateOp table = parameterLoaded(head.getWeight(), symbols);
    FailureOr<SmallVector<EmbeddingOp>> lookups = embeddingsToSplit(head, table, vocab);
    if (failed(lookups))
      return failure();
    for (EmbeddingOp op : *lookups) {
      StateOp state = parameterLoaded(op.getTable(), symbols);
      if (failed(splitEmbedding(op, vocab)))
        return failure();
      sliceRows(state);
    }
    // Column-parallel head: the input enters through f.
    sliceRows(table);
    if (Value bias = head.getBias())
      sliceRows(parameterLoaded(bias, symbols));
    OpBuilder b(head);
    Location loc = head.getLoc();
    head.getInputMutable().set(
        ReplicateOp::create(b, loc, head.getInput(), CollectiveGroup::tensor));
    auto shrink = [&](Value v) {
      SmallVector<int64_t> shape(tensorOf(v).getShape());
      shape.back() /= ranks;
      v.setType(RankedTensorType::get(shape, tensorOf(v).getElementType()));
    };
    shrink(head.getResult());
    for (ReshapeOp reshape : llvm::reverse(reshapes))
      shrink(reshape.getResult());
    return buildLoss(ce, vocab / ranks);
  }

  /// Replaces `ce` by the loss computed from each rank's `rows` logits.
  LogicalResult buildLoss(CrossEntropyOp ce, int64_t rows) {
    OpBuilder b(ce);
    Location loc = ce.getLoc();
    Value logits = ce.getLogits(), targets = ce.getTargets();
    RankedTensorType type = tensorOf(logits);
    Type elem = type.getElementType();
    int64_t last = type.getRank() - 1;
    SmallVector<int64_t> lastDim{last};
    Value localMax = ReduceMaxOp::create(b, loc, logits, lastDim, true);
    Value max = AllReduceOp::create(b, loc, localMax, CollectiveGroup::tensor,
                                    /*maximum=*/true);
    Value shifted = SubOp::create(b, loc, logits, max);
    Value localSum = ReduceSumOp::create(
        b, loc, ExpOp::create(b, loc, shifted), lastDim, true);
    Value sum = AllReduceOp::create(b, loc, localSum, CollectiveGroup::tensor);
    auto [clamped, mine] = localRows(b, loc, targets, rows);
    Value picked = GatherOp::create(b, loc, shifted,
                                    trailingOne(b, loc, clamped), last);
    Value localTarget = SelectOp::create(b, loc, trailingOne(b, loc, mine),
                                         picked, scalar(b, loc, elem, 0.0));
    Value target =
        AllReduceOp::create(b, loc, localTarget, CollectiveGroup::tensor);
    Value perToken = SubOp::create(b, loc, LogOp::create(b, loc, sum), target);
    RankedTensorType targetType = tensorOf(targets);
    perToken = ReshapeOp::create(
        b, loc, RankedTensorType::get(targetType.getShape(), elem), perToken);
    Value counted = CompareOp::create(
        b, loc, ComparisonDirection::ne, targets,
        scalar(b, loc, targetType.getElementType(), double(ce.getIgnoreIndex())));
    perToken = SelectOp::create(b, loc, counted, perToken,
                                scalar(b, loc, elem, 0.0));
    Value loss = perToken;
    if (ce.getReduction() != LossReduction::none && targetType.getRank() > 0) {
      SmallVector<int64_t> all;
      for (int64_t d = 0; d < targetType.getRank(); ++d)
        all.push_back(d);
      loss = ReduceSumOp::create(b, loc, perToken, all, false);
    }
    if (ce.getReduction() == LossReduction::mean)
      loss = DivOp::create(b, loc, loss, ce.buildCountedTargets(b));
    if (loss.getType() != ce.getType())
      return ce.emitError() << "--dsc-tensor-parallel: the vocabulary-parallel "
                               "loss is "
                            << loss.getType() << ", the cross-entropy "
                            << ce.getType();
    ce.getResult().replaceAllUsesWith(loss);
    ce.erase();
    return success();
  }
};

} // namespace

Value mlir::dsc::tensorRankTimes(func::FuncOp func, int64_t ranks,
                                 int64_t stride, Type elem) {
  Block &entry = func.getBody().front();
  SmallVector<APInt> multiples;
  for (int64_t r = 0; r < ranks; ++r)
    multiples.push_back(APInt(elem.getIntOrFloatBitWidth(), r * stride));
  auto table = DenseElementsAttr::get(RankedTensorType::get({ranks}, elem),
                                      multiples);
  for (auto shard : entry.getOps<LocalShardOp>()) {
    auto cst = shard.getInput().getDefiningOp<ConstantOp>();
    if (shard.getGroup() == CollectiveGroup::tensor && cst &&
        cst.getValue() == table)
      return shard.getResult();
  }
  auto b = OpBuilder::atBlockBegin(&entry);
  Value all = ConstantOp::create(b, func.getLoc(), table);
  return LocalShardOp::create(b, func.getLoc(),
                              RankedTensorType::get({1}, elem), all,
                              CollectiveGroup::tensor);
}

LogicalResult
mlir::dsc::splitVocabulary(ModuleOp module, int64_t ranks,
                           SmallVectorImpl<AllReduceOp> &embeddingSums) {
  return VocabSplitter(module, ranks, embeddingSums).run();
}
