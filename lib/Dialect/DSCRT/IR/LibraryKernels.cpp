//===- LibraryKernels.cpp - which library kernel computes a body -----------===//

#include "dsc/Dialect/DSCRT/IR/LibraryKernels.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Dialect/DSCRT/IR/DSCRTDialect.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dsc;

static constexpr llvm::StringLiteral kNames[] = {
    "copy",      "gemm",    "row",    "classifier", "reduce",  "embedding",
    "permute",   "gather",  "scatter_add", "top_k", "cumsum",  "one_hot",
    "slice",     "concat",  "broadcast", "causal_mask", "attention",
    "adam_update", "sgd_update", "sum_squares", "moe_slots", "moe_dispatch",
    "moe_combine", "moe_route_dot", "dropout", "random_ltd_indices",
    "random_uniform"};

llvm::ArrayRef<llvm::StringLiteral> mlir::dscrt::libraryKernelNames() {
  return kNames;
}

/// Element types the library's templates are instantiated for.
static bool isLibraryType(Type type) {
  Type elem = cast<ShapedType>(type).getElementType();
  return elem.isF32() || elem.isBF16() || elem.isF16() || elem.isInteger(64);
}

static Type elementOf(Value v) { return cast<ShapedType>(v.getType()).getElementType(); }

/// Ops whose kernels are instantiated for f64 and i32 data besides the
/// library's types (Reduce.h, Routing.h, Embedding.h, Layout.h's causal
/// mask: every type their ops take but i1); their index operands are int64
/// all the same.
static bool takesEveryNumericType(Operation *op) {
  Value index;
  if (auto s = dyn_cast<ScatterAddOp>(op))
    index = s.getIndex();
  else if (auto e = dyn_cast<EmbeddingOp>(op))
    index = e.getIndices();
  else if (auto o = dyn_cast<OneHotOp>(op))
    index = o.getIndices();
  else if (!isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, TopKOp, CumsumOp, CausalMaskOp>(op))
    return false;
  if (index && !elementOf(index).isInteger(64))
    return false;
  auto numeric = [](Type type) {
    Type elem = cast<ShapedType>(type).getElementType();
    return isa<FloatType>(elem) || elem.isInteger(64) || elem.isInteger(32);
  };
  return llvm::all_of(op->getOperandTypes(), numeric) &&
         llvm::all_of(op->getResultTypes(), numeric);
}

/// Row ops with f64 kernels besides the templates (RowF64.h: they compute
/// in double): f64 data throughout, a cross-entropy's targets int64.
static bool hasF64RowKernel(Operation *op) {
  if (!isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, CrossEntropyOp>(op))
    return false;
  if (auto ce = dyn_cast<CrossEntropyOp>(op))
    return elementOf(ce.getLogits()).isF64() && elementOf(ce.getResult()).isF64() &&
           elementOf(ce.getTargets()).isInteger(64);
  auto isF64 = [](Type type) { return cast<ShapedType>(type).getElementType().isF64(); };
  return llvm::all_of(op->getOperandTypes(), isF64) &&
         llvm::all_of(op->getResultTypes(), isF64);
}

/// Ops whose kernels only move elements: they copy words of the element's
/// width (Permute.h, Layout.h, Routing.h's gather), so every element type
/// of the dialect is theirs; a gather's index is int64 all the same.
static bool movesElements(Operation *op) {
  if (auto g = dyn_cast<GatherOp>(op))
    return elementOf(g.getIndex()).isInteger(64);
  return isa<TransposeOp, PermuteOp, SliceOp, ConcatOp, BroadcastOp>(op);
}

std::optional<int64_t>
mlir::dscrt::matmulBatchStride(llvm::ArrayRef<int64_t> operand,
                               llvm::ArrayRef<int64_t> batch) {
  ArrayRef<int64_t> own = operand.drop_back(2);
  int64_t matrix = ShapedType::getNumElements(operand.take_back(2));
  if (ShapedType::getNumElements(own) == 1)
    return 0;
  // Broadcasting aligns shapes at the right: leading dims of the batch that
  // the operand lacks must be 1 for one stride to place every item.
  if (own.size() > batch.size() || own != batch.take_back(own.size()) ||
      ShapedType::getNumElements(batch.drop_back(own.size())) != 1)
    return std::nullopt;
  return matrix;
}

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}

/// Whether the reduced dims of a dsc.reduce_* are adjacent (one
/// (outer, n, inner) view of the input).
static bool reducesAdjacentDims(ArrayRef<int64_t> dims) {
  return !dims.empty() && dims.back() - dims.front() + 1 == int64_t(dims.size());
}

/// Reductions (Reduce.h), lookups, layout and routing (Embedding.h,
/// Permute.h, Layout.h, Routing.h). Top-k needs both its results in memory.
static std::optional<StringRef> matchLayoutOp(Operation *op) {
  if (auto r = dyn_cast<ReduceSumOp>(op); r && reducesAdjacentDims(r.getDims()))
    return StringRef("reduce");
  if (auto r = dyn_cast<ReduceMeanOp>(op); r && reducesAdjacentDims(r.getDims()))
    return StringRef("reduce");
  if (auto r = dyn_cast<ReduceMaxOp>(op); r && reducesAdjacentDims(r.getDims()))
    return StringRef("reduce");
  if (isa<EmbeddingOp>(op))
    return StringRef("embedding");
  // Permutes, broadcasts, gathers and scatters above the library's rank
  // (dsc::kernels::kMaxRank) are refused by the emitter, with their op's
  // location.
  if (isa<TransposeOp, PermuteOp>(op))
    return StringRef("permute");
  if (isa<BroadcastOp>(op))
    return StringRef("broadcast");
  // Slices and concats take any rank: the (outer, n, inner) view.
  if (isa<SliceOp>(op))
    return StringRef("slice");
  if (isa<ConcatOp>(op))
    return StringRef("concat");
  if (isa<CausalMaskOp>(op))
    return StringRef("causal_mask");
  if (isa<GatherOp, ScatterAddOp>(op))
    return isa<GatherOp>(op) ? StringRef("gather") : StringRef("scatter_add");
  if (isa<TopKOp>(op) && llvm::all_of(op->getResults(), [&](Value v) {
        return llvm::is_contained(op->getBlock()->getTerminator()->getOperands(), v);
      }))
    return StringRef("top_k");
  if (isa<CumsumOp>(op))
    return StringRef("cumsum");
  if (isa<OneHotOp>(op))
    return StringRef("one_hot");
  return std::nullopt;
}

/// The library kernel of a body that is one op (besides the yield).
static std::optional<StringRef> matchOp(Operation *op) {
  // GEMMs take float operands (OpenBLAS, cuBLASLt; fp32 accumulation).
  bool isFloat = isa<FloatType>(
      cast<ShapedType>(op->getResult(0).getType()).getElementType());
  if (isa<LinearOp>(op) && isFloat)
    return StringRef("gemm");
  if (auto mm = dyn_cast<MatmulOp>(op); mm && isFloat) {
    ArrayRef<int64_t> batch = shapeOf(mm.getResult()).drop_back(2);
    if (dscrt::matmulBatchStride(shapeOf(mm.getLhs()), batch) &&
        dscrt::matmulBatchStride(shapeOf(mm.getRhs()), batch))
      return StringRef("gemm");
  }
  // Rows: softmax and log-softmax along any dimension, layer norm
  // (dsc/kernels/Row.h).
  if (isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp>(op) && isFloat)
    return StringRef("row");
  // Per-token cross-entropy (the lowering expands sum and mean into it):
  // the classifier (dsc/kernels/Classifier.h).
  if (auto ce = dyn_cast<CrossEntropyOp>(op);
      ce && isFloat && ce.getReduction() == LossReduction::none)
    return StringRef("classifier");
  // Its gradient, in the same pass over each row.
  if (isa<CrossEntropyGradOp>(op) && isFloat)
    return StringRef("classifier");
  if (std::optional<StringRef> layout = matchLayoutOp(op))
    return layout;
  // Flash attention (dsc/kernels/Attention.h): float data, and a mask of
  // the data's type or i1.
  if (isa<AttentionOp, AttentionGradOp>(op) && isFloat)
    return StringRef("attention");
  // Multi-tensor optimizer kernels (dsc/kernels/Optimizer.h); the verifiers
  // hold the ops to the library's types.
  if (isa<AdamUpdateOp>(op))
    return StringRef("adam_update");
  if (isa<SgdUpdateOp>(op))
    return StringRef("sgd_update");
  if (isa<SumSquaresOp>(op))
    return StringRef("sum_squares");
  // Random ops (dsc/kernels/Random.h).
  if (isa<DropoutOp>(op) && isFloat)
    return StringRef("dropout");
  if (isa<RandomLtdIndicesOp>(op))
    return StringRef("random_ltd_indices");
  if (isa<RandomUniformOp>(op))
    return StringRef("random_uniform");
  // Mixture-of-experts routing (dsc/kernels/Moe.h): every form the ops
  // take, rows of the library's float types.
  return llvm::TypeSwitch<Operation *, std::optional<StringRef>>(op)
      .Case([](MoeSlotsOp) { return StringRef("moe_slots"); })
      .Case([](MoeDispatchOp) { return StringRef("moe_dispatch"); })
      .Case([](MoeCombineOp) { return StringRef("moe_combine"); })
      .Case([](MoeRouteDotOp) { return StringRef("moe_route_dot"); })
      .Default(std::optional<StringRef>());
}

std::optional<StringRef> mlir::dscrt::matchLibraryKernel(Block &body) {
  auto yield = cast<YieldOp>(body.getTerminator());
  // A body that yields its inputs unchanged copies them, bytes of any type.
  if (&body.front() == yield.getOperation())
    return llvm::all_of(yield.getValues(), llvm::IsaPred<BlockArgument>)
               ? std::optional<StringRef>("copy")
               : std::nullopt;
  if (std::next(body.begin()) != std::prev(body.end()))
    return std::nullopt; // more than one op: a fused elementwise chain
  Operation *op = &body.front();
  if (movesElements(op) || takesEveryNumericType(op) || hasF64RowKernel(op))
    return matchOp(op);
  auto isArgumentType = [&](Type type) {
    // An attention mask may be i1 (a boolean mask), and so is the flag
    // that skips an optimizer update.
    return isLibraryType(type) ||
           (cast<ShapedType>(type).getElementType().isInteger(1) &&
            llvm::any_of(body, llvm::IsaPred<AttentionOp, AttentionGradOp,
                                             AdamUpdateOp, SgdUpdateOp>));
  };
  if (!llvm::all_of(body.getArgumentTypes(), isArgumentType) ||
      !llvm::all_of(yield.getValues().getTypes(), isLibraryType))
    return std::nullopt;
  return matchOp(op);
}
