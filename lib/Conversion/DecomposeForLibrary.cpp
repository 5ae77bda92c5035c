//===- DecomposeForLibrary.cpp - --dsc-decompose-for-library ---------------===//
//
// Some forms of non-elementwise ops have no kernel in the kernel library
// (runtime/include/dsc/kernels/) but become library kernels after a cheap
// rewrite in the graph: a conversion, a permute or a broadcast in front.
// The lowering applies these rewrites before it forms kernels, so that the
// emitter never has to generate a loop for a non-elementwise op. With
// gradient accumulation, the graph is also put in the order the conversion
// emits: what runs on every micro-step before the optimizer boundary.
//
//===----------------------------------------------------------------------===//

#include "dsc/Conversion/Passes.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Dialect/DSC/IR/GraphUtils.h"
#include "dsc/Dialect/DSCRT/IR/LibraryKernels.h"

#include "mlir/IR/Builders.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_DECOMPOSEFORLIBRARY
#include "dsc/Conversion/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

static RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// `v` converted to element type `elem` by a dsc.convert before `user`.
static Value convertBefore(Operation *user, Value v, Type elem) {
  OpBuilder b(user);
  return ConvertOp::create(b, user->getLoc(), tensorOf(v).clone(elem), v);
}

/// An i32 index operand becomes the i64 the library's kernels take.
static void widenIndex(OpOperand &index) {
  if (!tensorOf(index.get()).getElementType().isInteger(32))
    return;
  Operation *user = index.getOwner();
  index.set(convertBefore(user, index.get(), IntegerType::get(user->getContext(), 64)));
}

/// Replaces `op` by `replacement`, which keeps `op`'s discardable
/// attributes (the names passes give blocks of the graph).
static void replace(Operation *op, Value replacement) {
  if (Operation *def = replacement.getDefiningOp())
    def->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  op->getResult(0).replaceAllUsesWith(replacement);
  op->erase();
}

/// dsc.scatter_add of i1 data: the sum on i64 data, then `!= 0` back to i1
/// (a sum of booleans is their or, as torch's scatter_add on bool).
static void scatterBooleansAsI64(ScatterAddOp scatter) {
  Type i1 = IntegerType::get(scatter.getContext(), 1);
  RankedTensorType type = tensorOf(scatter.getResult());
  if (type.getElementType() != i1)
    return;
  Type i64 = IntegerType::get(scatter.getContext(), 64);
  OpBuilder b(scatter);
  Location loc = scatter.getLoc();
  Value sum = ScatterAddOp::create(b, loc, type.clone(i64),
                                   convertBefore(scatter, scatter.getInput(), i64),
                                   scatter.getIndex(),
                                   convertBefore(scatter, scatter.getSrc(), i64),
                                   scatter.getDim());
  sum.getDefiningOp()->setDiscardableAttrs(scatter->getDiscardableAttrDictionary());
  replace(scatter, ConvertOp::create(b, loc, type, sum));
}

/// A reduction over dims that are not adjacent: the input permuted so that
/// they come last (kept dims first, each group in its order), reduced over
/// the trailing dims, which is the library's row reduction.
template <typename ReduceOpT> static void reduceTrailingDims(ReduceOpT op) {
  ArrayRef<int64_t> dims = op.getDims();
  if (dims.empty() || dims.back() - dims.front() + 1 == int64_t(dims.size()))
    return;
  int64_t rank = tensorOf(op.getInput()).getRank();
  SmallVector<int64_t> permutation, trailing;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(dims, d))
      permutation.push_back(d);
  for (int64_t d : dims) {
    trailing.push_back(int64_t(permutation.size()));
    permutation.push_back(d);
  }
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value permuted = PermuteOp::create(b, loc, op.getInput(), permutation);
  Value reduced = ReduceOpT::create(b, loc, permuted, trailing, /*keep_dims=*/false);
  // keep_dims' size-1 dims change no element's position.
  if (op.getKeepDims())
    reduced = ReshapeOp::create(b, loc, op.getType(), reduced);
  replace(op, reduced);
}

/// A matmul operand that broadcasts some of the result's batch dims only:
/// broadcast to the whole batch, so that one batch stride places its items.
static void broadcastPartialBatch(MatmulOp mm) {
  ArrayRef<int64_t> batch = tensorOf(mm.getResult()).getShape().drop_back(2);
  for (OpOperand *operand : {&mm.getLhsMutable(), &mm.getRhsMutable()}) {
    RankedTensorType type = tensorOf(operand->get());
    if (dscrt::matmulBatchStride(type.getShape(), batch))
      continue;
    SmallVector<int64_t> shape(batch);
    llvm::append_range(shape, type.getShape().take_back(2));
    OpBuilder b(mm);
    operand->set(BroadcastOp::create(b, mm.getLoc(), type.clone(shape), operand->get()));
  }
}

/// A summed or averaged cross-entropy becomes per-token losses (one
/// independent row each: a parallel kernel) and reductions, instead of one
/// serial loop over every token's logits: the LM head's loss dominated
/// GPT-2's CPU step otherwise.
static void expandCrossEntropy(func::FuncOp graph) {
  SmallVector<CrossEntropyOp> losses;
  graph.walk([&](CrossEntropyOp ce) {
    if (ce.getReduction() != LossReduction::none)
      losses.push_back(ce);
  });
  for (CrossEntropyOp ce : losses) {
    OpBuilder b(ce);
    Location loc = ce.getLoc();
    auto targets = cast<RankedTensorType>(ce.getTargets().getType());
    SmallVector<int64_t> all;
    for (int64_t d = 0; d < targets.getRank(); ++d)
      all.push_back(d);
    Value perToken = CrossEntropyOp::create(b, loc, ce.getLogits(), ce.getTargets(),
                                            ce.getIgnoreIndex(), LossReduction::none);
    Value total = all.empty() ? perToken
                              : ReduceSumOp::create(b, loc, perToken, all, false).getResult();
    Value result = total;
    if (ce.getReduction() == LossReduction::mean)
      result = DivOp::create(b, loc, total, ce.buildCountedTargets(b));
    ce.replaceAllUsesWith(result);
    ce.erase();
  }
}

/// An f64 dsc.cross_entropy_grad, which the fused classifier (float,
/// bf16, f16) does not take: (softmax(logits) - one_hot(targets)) * scale,
/// scale zeroed on the ignored rows, with the f64 row kernels.
static void expandF64CrossEntropyGrad(CrossEntropyGradOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto logits = cast<RankedTensorType>(op.getLogits().getType());
  auto targets = cast<RankedTensorType>(op.getTargets().getType());
  Type elem = logits.getElementType();
  Value probs = SoftmaxOp::create(b, loc, op.getLogits(), logits.getRank() - 1);
  Value hot = OneHotOp::create(b, loc, logits, op.getTargets());
  Value ignore = ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(RankedTensorType::get({}, targets.getElementType()),
                             b.getIntegerAttr(targets.getElementType(),
                                              int64_t(op.getIgnoreIndex()))));
  Value counted = ConvertOp::create(
      b, loc, RankedTensorType::get(targets.getShape(), elem),
      CompareOp::create(b, loc, ComparisonDirection::ne, op.getTargets(), ignore));
  SmallVector<int64_t> rowShape(targets.getShape());
  rowShape.push_back(1);
  Value scale = ReshapeOp::create(b, loc, RankedTensorType::get(rowShape, elem),
                                  MulOp::create(b, loc, op.getScale(), counted));
  op.replaceAllUsesWith(
      MulOp::create(b, loc, SubOp::create(b, loc, probs, hot), scale).getResult());
  op.erase();
}

/// Gradient accumulation: the ops that read the graph's
/// dsc.optimizer_boundary, directly or not, run once per optimizer step;
/// they move after it and every other op before it, each side in its
/// order, so that a call which ends no optimizer step can stop at the
/// boundary.
static void orderAroundBoundary(Block &body) {
  auto boundaries = body.getOps<OptimizerBoundaryOp>();
  if (boundaries.empty())
    return;
  Operation *boundary = *boundaries.begin();
  DenseSet<Operation *> perUpdate{boundary};
  for (Operation *op = boundary->getNextNode(); op;) {
    Operation *next = op->getNextNode();
    if (op->hasTrait<mlir::OpTrait::IsTerminator>())
      break;
    if (llvm::any_of(op->getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return def && perUpdate.contains(def);
        }))
      perUpdate.insert(op);
    else
      op->moveBefore(boundary);
    op = next;
  }
}

static void decomposeForLibrary(func::FuncOp graph) {
  SmallVector<Operation *> ops;
  graph.walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : ops) {
    if (auto e = dyn_cast<EmbeddingOp>(op))
      widenIndex(e.getIndicesMutable());
    else if (auto g = dyn_cast<GatherOp>(op))
      widenIndex(g.getIndexMutable());
    else if (auto ce = dyn_cast<CrossEntropyOp>(op))
      widenIndex(ce.getTargetsMutable());
    else if (auto grad = dyn_cast<CrossEntropyGradOp>(op)) {
      widenIndex(grad.getTargetsMutable());
      if (cast<ShapedType>(grad.getType()).getElementType().isF64())
        expandF64CrossEntropyGrad(grad);
    } else if (auto s = dyn_cast<ScatterAddOp>(op)) {
      widenIndex(s.getIndexMutable());
      scatterBooleansAsI64(s);
    } else if (auto o = dyn_cast<OneHotOp>(op))
      widenIndex(o.getIndicesMutable());
    else if (auto r = dyn_cast<ReduceSumOp>(op))
      reduceTrailingDims(r);
    else if (auto r = dyn_cast<ReduceMeanOp>(op))
      reduceTrailingDims(r);
    else if (auto r = dyn_cast<ReduceMaxOp>(op))
      reduceTrailingDims(r);
    else if (auto mm = dyn_cast<MatmulOp>(op))
      broadcastPartialBatch(mm);
  }
}

namespace {
struct DecomposeForLibraryPass
    : public dsc::impl::DecomposeForLibraryBase<DecomposeForLibraryPass> {
  void runOnOperation() override {
    func::FuncOp graph = getOperation();
    if (graph.isExternal())
      return; // nothing to lower: --dsc-convert-to-runtime reports it
    if (failed(verifyLowerableGraph(graph)))
      return signalPassFailure();
    expandCrossEntropy(graph);
    decomposeForLibrary(graph);
    orderAroundBoundary(graph.getBody().front());
  }
};
} // namespace
