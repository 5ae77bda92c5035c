//===- TensorParallel.cpp - --dsc-tensor-parallel --------------------------===//
//
// Splits attention and feed-forward blocks over the ranks of a tensor group,
// Megatron's way (Passes.td has the rule). A block is found from its last
// linear map upwards; the split is then followed forward from the block's
// first linear maps through every op to the last one: each value of the
// block carries the dimension it is split along and how that dimension is
// laid out ([outer, T, inner], the rank holding [:, r, :]), each op either
// keeps the split whole (an elementwise op, a slice of whole blocks, a
// reshape that keeps the T factor in one dimension, a batched product over
// a split batch dimension) or the slicing tried does not fit. The first
// slicing that fits every op is applied in place: the ops keep their
// attributes but for slices' bounds, and their types shrink by T.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Dialect/DSC/IR/DSCTraits.h"
#include "dsc/Transforms/Passes.h"

#include "FeedForwardBlocks.h"
#include "SequenceParallel.h"
#include "VocabParallel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_TENSORPARALLEL
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

namespace {
/// How a value of a split block is split: along `dim`, whose extent is
/// laid out as [outer, T, inner]; each rank holds [:, its index, :].
struct Split {
  int64_t dim = 0;
  int64_t inner = 1;
};

/// A block to split: the linear maps that read its input (column-parallel),
/// the ops between them and the last one (row-parallel).
struct SplitBlock {
  enum Kind { FeedForward, Attention } kind;
  Value input;
  SmallVector<LinearOp, 3> first;
  llvm::SetVector<Operation *> chain; // in program order once matched
  LinearOp last;
};

/// The split of every value of a block, and the new shapes and slice
/// bounds that keep it, for one slicing of the first maps' outputs.
struct Plan {
  DenseMap<Value, Split> splits;
  DenseMap<Value, RankedTensorType> types;
  DenseMap<Operation *, std::pair<int64_t, int64_t>> sliceBounds;
  int64_t firstBlocks = 1; // B of the first maps' output features
};

/// Whether `op` may sit between the linear maps of an attention block.
bool isAttentionOp(Operation *op) {
  return isa<ReshapeOp, SliceOp, TransposeOp, PermuteOp, MatmulOp, SoftmaxOp,
             CausalMaskOp, ConcatOp, DropoutOp>(op) ||
         (isElementwise(op) && op->getNumResults() == 1);
}

/// An operand that enters a block from outside it without being its
/// input: constants and buffers (masks, rotary tables), scalars and the
/// step's key (a dropout's). (A parameter would be read by every rank for
/// its own slice only, and its gradient be partial: a block that reads one
/// is left whole.)
bool isSideInput(Value v, SymbolTable &symbols) {
  if (tensorOf(v).getRank() == 0)
    return true;
  Operation *def = v.getDefiningOp();
  if (isa_and_nonnull<ConstantOp, StepKeyOp>(def))
    return true;
  auto load = dyn_cast_or_null<LoadOp>(def);
  if (!load)
    return false;
  auto state = symbols.lookup<StateOp>(load.getState());
  return state && state.getRole() == StateRole::buffer;
}

struct TensorParallelPass
    : public dsc::impl::TensorParallelBase<TensorParallelPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    ranks = lookupTensorParallelSize(module);
    if (ranks <= 1) {
      // As Megatron-LM does: sequence parallelism splits the work of a
      // tensor group, and without one there is nothing to split.
      if (sequenceParallel)
        module.emitWarning("--dsc-tensor-parallel: sequence-parallel does "
                           "nothing without a tensor group of more than one "
                           "rank (tensor-parallel > 1)");
      return;
    }
    SymbolTable symbols(module);
    llvm::StringMap<int> loads;
    module.walk([&](LoadOp load) { ++loads[load.getState()]; });
    SmallVector<SplitBlock> blocks;
    module.walk([&](LinearOp last) {
      if (std::optional<SplitBlock> block = match(last, symbols, loads))
        blocks.push_back(std::move(*block));
    });
    if (blocks.empty() && !vocabParallel) {
      module.emitError("--dsc-tensor-parallel found no attention or "
                       "feed-forward block to split over the ")
          << ranks << " ranks of a tensor group";
      return signalPassFailure();
    }
    llvm::MapVector<func::FuncOp, SmallVector<SplitBlockEnds>> ends;
    for (SplitBlock &block : blocks) {
      FailureOr<std::optional<Plan>> plan = planSplit(block);
      if (failed(plan))
        return signalPassFailure();
      if (!*plan)
        continue; // left whole
      auto func = block.last->getParentOfType<func::FuncOp>();
      FailureOr<SplitBlockEnds> end = apply(block, **plan, symbols);
      if (failed(end))
        return signalPassFailure();
      ends[func].push_back(*end);
    }
    SmallVector<AllReduceOp> embeddingSums;
    if (vocabParallel &&
        failed(splitVocabulary(module, ranks, embeddingSums)))
      return signalPassFailure();
    // After the vocabulary split, whose head input is one more f that the
    // sequence's gather replaces, and whose embedding sums the sequence's
    // region can begin at.
    if (sequenceParallel)
      for (auto &[func, funcEnds] : ends) {
        SmallVector<AllReduceOp> funcSums;
        for (AllReduceOp sum : embeddingSums)
          if (sum->getParentOfType<func::FuncOp>() == func)
            funcSums.push_back(sum);
        if (failed(splitSequence(func, funcEnds, funcSums, ranks)))
          return signalPassFailure();
      }
  }

private:
  int64_t ranks = 1;

  /// The block `last` ends, if it ends one whose parameters it alone reads.
  std::optional<SplitBlock> match(LinearOp last, SymbolTable &symbols,
                             const llvm::StringMap<int> &loads) {
    std::optional<SplitBlock> block;
    if (std::optional<FeedForward> ffn = matchFeedForward(last, symbols)) {
      block = SplitBlock{SplitBlock::FeedForward, ffn->input, {}, ffn->chain, last};
      block->first.append(ffn->first.begin(), ffn->first.end());
    } else {
      block = matchAttention(last, symbols);
    }
    if (!block)
      return std::nullopt;
    SmallVector<LinearOp> linears(block->first.begin(), block->first.end());
    linears.push_back(last);
    for (LinearOp linear : linears)
      for (Value operand : {linear.getWeight(), linear.getBias()})
        if (operand && loads.lookup(parameterLoaded(operand, symbols)
                                        .getSymName()) != 1)
          return std::nullopt; // tied to another block: left whole
    SmallVector<Operation *> ordered(block->chain.begin(), block->chain.end());
    llvm::sort(ordered, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    block->chain = llvm::SetVector<Operation *>(ordered.begin(), ordered.end());
    return block;
  }

  /// An attention block ending in `last`: a graph of isAttentionOp ops fed
  /// by one to three parameter linear maps of one value, with a softmax.
  std::optional<SplitBlock> matchAttention(LinearOp last, SymbolTable &symbols) {
    if (!isParameterLinear(last, symbols))
      return std::nullopt;
    SplitBlock block{SplitBlock::Attention, Value(), {}, {}, last};
    SmallVector<Value> work{last.getInput()};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (!def)
        return std::nullopt;
      if (auto linear = dyn_cast<LinearOp>(def)) {
        if (!isParameterLinear(linear, symbols))
          return std::nullopt;
        if (!llvm::is_contained(block.first, linear))
          block.first.push_back(linear);
        continue;
      }
      if (!isAttentionOp(def))
        return std::nullopt;
      if (!block.chain.insert(def))
        continue;
      for (Value operand : def->getOperands())
        if (!isSideInput(operand, symbols))
          work.push_back(operand);
    }
    if (block.first.empty() || block.first.size() > 3 ||
        llvm::none_of(block.chain, [](Operation *op) { return isa<SoftmaxOp>(op); }))
      return std::nullopt;
    block.input = block.first.front().getInput();
    for (LinearOp linear : block.first)
      if (linear.getInput() != block.input)
        return std::nullopt;
    if (tensorOf(last.getResult()).getShape().back() !=
        tensorOf(block.input).getShape().back())
      return std::nullopt;
    // Nothing but the block reads its inner values.
    auto inside = [&](Operation *user) {
      return user == last || block.chain.contains(user);
    };
    for (Operation *op : block.chain)
      if (!llvm::all_of(op->getUsers(), inside))
        return std::nullopt;
    for (LinearOp linear : block.first)
      if (!llvm::all_of(linear->getUsers(), inside))
        return std::nullopt;
    return block;
  }

  /// The first slicing of the first maps' output features, [B, T, C] with
  /// the fewest blocks B, that every op of `block` keeps; none when no
  /// slicing fits and one failed at a dropout (whose slice would not be a
  /// part of each sample): the block is left whole, which is correct.
  FailureOr<std::optional<Plan>> planSplit(SplitBlock &block) {
    int64_t features = tensorOf(block.first.front().getResult()).getShape().back();
    for (LinearOp linear : block.first)
      if (tensorOf(linear.getResult()).getShape().back() != features)
        return block.last.emitError()
               << "--dsc-tensor-parallel: the linear maps that begin this "
                  "block differ in width";
    std::string reason;
    bool atDropout = false;
    if (features % ranks == 0) {
      for (int64_t blocks = 1; blocks <= features / ranks; ++blocks) {
        if ((features / ranks) % blocks != 0)
          continue;
        Plan plan;
        plan.firstBlocks = blocks;
        if (succeeded(follow(block, plan, features / (ranks * blocks), reason)))
          return std::optional<Plan>(std::move(plan));
        atDropout |= StringRef(reason).starts_with(
            DropoutOp::getOperationName());
      }
    }
    if (atDropout)
      return std::optional<Plan>();
    InFlightDiagnostic diag = block.last.emitError()
        << "--dsc-tensor-parallel: cannot split this "
        << (block.kind == SplitBlock::Attention ? "attention" : "feed-forward")
        << " block over the " << ranks << " ranks of a tensor group: ";
    if (block.kind == SplitBlock::Attention)
      diag << ranks << " must divide its heads";
    else
      diag << ranks << " must divide its " << features << " hidden features";
    if (!reason.empty())
      diag << " (" << reason << ")";
    return failure();
  }

  /// Follows the split from the first maps (features [outer, T, inner])
  /// through the block; fails with `reason` at the first op that does not
  /// keep it.
  LogicalResult follow(SplitBlock &block, Plan &plan, int64_t inner,
                       std::string &reason) {
    for (LinearOp linear : block.first) {
      RankedTensorType type = tensorOf(linear.getResult());
      plan.splits[linear.getResult()] = {type.getRank() - 1, inner};
      plan.types[linear.getResult()] = shrink(type, type.getRank() - 1);
    }
    for (Operation *op : block.chain) {
      // Work on side inputs alone (a mask's reshape) is the same on every
      // rank: it stays whole.
      if (llvm::none_of(op->getOperands(),
                        [&](Value v) { return plan.splits.contains(v); }))
        continue;
      std::optional<Split> split = through(op, plan, reason);
      if (!split)
        return failure();
      Value result = op->getResult(0);
      plan.splits[result] = *split;
      plan.types[result] = shrink(tensorOf(result), split->dim);
    }
    Value input = block.last.getInput();
    auto it = plan.splits.find(input);
    if (it == plan.splits.end() ||
        it->second.dim != tensorOf(input).getRank() - 1) {
      reason = "the last linear map's input features are not the split ones";
      return failure();
    }
    return success();
  }

  RankedTensorType shrink(RankedTensorType type, int64_t dim) {
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] /= ranks;
    return RankedTensorType::get(shape, type.getElementType());
  }

  /// The split of `op`'s result, given its operands'.
  std::optional<Split> through(Operation *op, Plan &plan, std::string &reason) {
    auto fail = [&](const Twine &why) -> std::optional<Split> {
      reason = (op->getName().getStringRef() + ": " + why).str();
      return std::nullopt;
    };
    auto splitOf = [&](Value v) -> std::optional<Split> {
      auto it = plan.splits.find(v);
      if (it == plan.splits.end())
        return std::nullopt;
      return it->second;
    };
    Value in = op->getOperand(0);
    if (auto reshape = dyn_cast<ReshapeOp>(op))
      return throughReshape(*splitOf(in), tensorOf(in).getShape(),
                            tensorOf(reshape.getResult()).getShape(), reason);
    if (auto slice = dyn_cast<SliceOp>(op)) {
      Split split = *splitOf(in);
      int64_t start = slice.getStart(), end = slice.getEnd();
      if (int64_t(slice.getDim()) != split.dim)
        return split;
      int64_t whole = ranks * split.inner;
      if (int64_t(slice.getStep()) != 1 || start < 0 || start % whole != 0 ||
          end % whole != 0)
        return fail("slices across the ranks' features");
      plan.sliceBounds[op] = {start / ranks, end / ranks};
      return split;
    }
    if (auto transpose = dyn_cast<TransposeOp>(op)) {
      Split split = *splitOf(in);
      int64_t dim0 = transpose.getDim0(), dim1 = transpose.getDim1();
      if (split.dim == dim0)
        split.dim = dim1;
      else if (split.dim == dim1)
        split.dim = dim0;
      return split;
    }
    if (auto permute = dyn_cast<PermuteOp>(op)) {
      Split split = *splitOf(in);
      split.dim = llvm::find(permute.getPermutation(), split.dim) -
                  permute.getPermutation().begin();
      return split;
    }
    if (auto matmul = dyn_cast<MatmulOp>(op)) {
      std::optional<Split> lhs = splitOf(matmul.getLhs()),
                           rhs = splitOf(matmul.getRhs());
      int64_t rank = tensorOf(matmul.getResult()).getRank();
      if (!lhs || !rhs || lhs->dim != rhs->dim || lhs->inner != rhs->inner ||
          tensorOf(matmul.getLhs()).getRank() != rank ||
          tensorOf(matmul.getRhs()).getRank() != rank || lhs->dim >= rank - 2)
        return fail("multiplies along the split features");
      return lhs;
    }
    if (auto softmax = dyn_cast<SoftmaxOp>(op)) {
      Split split = *splitOf(in);
      if (int64_t(softmax.getDim()) == split.dim)
        return fail("normalises along the split features");
      return split;
    }
    if (auto dropout = dyn_cast<DropoutOp>(op)) {
      // The rank's slice must be the r-th of T contiguous parts of each
      // sample for it to draw that part of the whole's mask: the blocks
      // before the T factor ([outer, T, inner] of the split dimension and
      // every dimension before it) must be the samples. The exported
      // [B, H, S, S] probabilities with the heads split have B of them.
      Split split = *splitOf(in);
      ArrayRef<int64_t> shape = tensorOf(in).getShape();
      int64_t blocks = shape[split.dim] / (ranks * split.inner);
      for (int64_t d = 0; d < split.dim; ++d)
        blocks *= shape[d];
      if (dropout.getPart() || blocks != int64_t(dropout.getSamples()))
        return fail("draws its mask across the ranks' parts of a sample");
      return split;
    }
    if (isa<CausalMaskOp>(op)) {
      Split split = *splitOf(in);
      if (split.dim >= tensorOf(in).getRank() - 2)
        return fail("masks along the split features");
      return split;
    }
    if (auto concat = dyn_cast<ConcatOp>(op)) {
      std::optional<Split> split = splitOf(concat.getInputs().front());
      for (Value operand : concat.getInputs()) {
        std::optional<Split> other = splitOf(operand);
        if (!other || !split || other->dim != split->dim ||
            other->inner != split->inner)
          return fail("joins values split differently");
      }
      if (int64_t(concat.getDim()) == split->dim)
        return fail("joins along the split features");
      return split;
    }
    // Elementwise, with NumPy broadcasting: every split operand split
    // alike, every other one constant along the split dimension.
    int64_t rank = tensorOf(op->getResult(0)).getRank();
    std::optional<Split> split;
    for (Value operand : op->getOperands()) {
      int64_t offset = rank - tensorOf(operand).getRank();
      std::optional<Split> own = splitOf(operand);
      if (!own)
        continue;
      Split aligned{own->dim + offset, own->inner};
      if (tensorOf(operand).getDimSize(own->dim) !=
          tensorOf(op->getResult(0)).getDimSize(aligned.dim))
        return fail("broadcasts a split operand");
      if (split && (split->dim != aligned.dim || split->inner != aligned.inner))
        return fail("combines values split differently");
      split = aligned;
    }
    for (Value operand : op->getOperands()) {
      if (splitOf(operand))
        continue;
      int64_t at = split->dim - (rank - tensorOf(operand).getRank());
      if (at >= 0 && tensorOf(operand).getDimSize(at) != 1)
        return fail("combines the split features with a whole tensor");
    }
    return split;
  }

  /// A reshape keeps the split when the T factor (stride inner * S, S the
  /// elements after the split dimension) falls inside one dimension of the
  /// result, at a whole number of its elements.
  std::optional<Split> throughReshape(Split split, ArrayRef<int64_t> from,
                                      ArrayRef<int64_t> to,
                                      std::string &reason) {
    int64_t after = 1;
    for (int64_t d = split.dim + 1; d < int64_t(from.size()); ++d)
      after *= from[d];
    int64_t stride = split.inner * after; // of the T factor, flattened
    int64_t below = 1;                    // elements after dimension j
    for (int64_t j = int64_t(to.size()) - 1; j >= 0; --j) {
      if (below <= stride && stride < below * to[j]) {
        if (stride % below != 0 || to[j] % (ranks * (stride / below)) != 0)
          break;
        return Split{j, stride / below};
      }
      below *= to[j];
    }
    reason = "dsc.reshape: regroups the ranks' features";
    return std::nullopt;
  }

  /// The state `operand` loads becomes this rank's slice of it: the whole
  /// viewed as [blocks, T, C].
  void sliceState(OpOperand &operand, RankedTensorType local, int64_t blocks,
                  SymbolTable &symbols) {
    auto load = operand.get().getDefiningOp<LoadOp>();
    StateOp state = parameterLoaded(load.getResult(), symbols);
    Builder b(state.getContext());
    state.setPartitionOfAttr(
        b.getDenseI64ArrayAttr(state.getTensorType().getShape()));
    state.setPartitionGroup(CollectiveGroup::tensor);
    if (blocks > 1)
      state.setPartitionBlocksAttr(b.getI64IntegerAttr(blocks));
    state.setType(local);
    load.getResult().setType(local);
  }

  FailureOr<SplitBlockEnds> apply(SplitBlock &block, Plan &plan,
                                  SymbolTable &symbols) {
    // f: the block's input, alike on every rank of the group, enters the
    // ranks' own work; its gradient sums theirs.
    OpBuilder b(block.first.front());
    b.setInsertionPointAfterValue(block.input);
    auto replicated = ReplicateOp::create(b, block.input.getLoc(), block.input,
                                          CollectiveGroup::tensor);
    // Column-parallel: the output features [B, T, C] of weight [N, K] and
    // bias [N] are B blocks of T slices of C * K and C elements.
    for (LinearOp linear : block.first) {
      linear.getInputMutable().set(replicated);
      RankedTensorType weight = tensorOf(linear.getWeight());
      sliceState(linear.getWeightMutable(), shrink(weight, 0),
                 plan.firstBlocks, symbols);
      if (linear.getBias())
        sliceState(linear.getBiasMutable()[0], shrink(tensorOf(linear.getBias()), 0),
                   plan.firstBlocks, symbols);
      linear.getResult().setType(plan.types.lookup(linear.getResult()));
    }
    for (Operation *op : block.chain) {
      auto type = plan.types.find(op->getResult(0));
      if (type == plan.types.end())
        continue; // whole
      op->getResult(0).setType(type->second);
      if (auto dropout = dyn_cast<DropoutOp>(op))
        drawTensorPart(dropout, ranks);
      if (auto slice = dyn_cast<SliceOp>(op)) {
        auto it = plan.sliceBounds.find(op);
        if (it != plan.sliceBounds.end()) {
          slice.setStart(it->second.first);
          slice.setEnd(it->second.second);
        }
      }
    }
    // Row-parallel: the input features of weight [N, K], [outer, T, inner]
    // per row, are N * outer blocks of T slices of inner elements. Each
    // rank's product is partial; g sums them, then the bias is added once.
    LinearOp last = block.last;
    Split in = plan.splits.lookup(last.getInput());
    RankedTensorType weight = tensorOf(last.getWeight());
    int64_t rowBlocks = weight.getDimSize(0) *
                        (weight.getDimSize(1) / (ranks * in.inner));
    sliceState(last.getWeightMutable(), shrink(weight, 1), rowBlocks, symbols);
    b.setInsertionPoint(last);
    Location loc = last.getLoc();
    Value partial =
        LinearOp::create(b, loc, last.getInput(), last.getWeight(), Value());
    auto sum = AllReduceOp::create(b, loc, partial, CollectiveGroup::tensor);
    Value out = sum;
    if (Value bias = last.getBias())
      out = AddOp::create(b, loc, out, bias);
    last.getResult().replaceAllUsesWith(out);
    last.erase();
    return SplitBlockEnds{replicated, sum};
  }
};
} // namespace
