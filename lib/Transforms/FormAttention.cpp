//===- FormAttention.cpp - --dsc-form-attention ----------------------------===//
//
// Replaces the exported chain matmul(q, k^T) -> scale -> mask -> softmax ->
// matmul(., v) by one dsc.attention (Passes.td has the accepted forms). The
// match starts at each softmax over the last dimension of a rank-4 tensor
// and walks up to the scores' matmul and down to the output's, through the
// reshapes between [B, H, ...] and [B*H, ...]; q, k and v are then taken in
// the head layout, from before the reshapes that flattened them where there
// are such, through new reshapes (views) and a transpose otherwise.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>
#include <optional>

namespace mlir::dsc {
#define GEN_PASS_DEF_FORMATTENTION
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

/// Fill values at or below this hide a key as -inf does when the row keeps
/// another key: exp(fill - max) is 0 in every float type.
static constexpr double kHiddenBelow = -1e30;

static RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The one value of a float constant whose elements are all equal.
static std::optional<double> splatValue(Value v) {
  auto cst = v.getDefiningOp<ConstantOp>();
  auto dense = cst ? dyn_cast<DenseElementsAttr>(cst.getValue()) : nullptr;
  if (!dense || !dense.isSplat() || !isa<FloatType>(dense.getElementType()))
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

static int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

namespace {
/// One attention chain, its ops from the scores to the output.
struct Chain {
  int64_t batch = 0, heads = 0;
  MatmulOp scores, output;
  double scale = 1.0;
  bool causal = false;
  Value mask;
  /// Every op the chain replaces, in program order.
  SmallVector<Operation *> ops;
};

struct FormAttentionPass
    : public dsc::impl::FormAttentionBase<FormAttentionPass> {
  using FormAttentionBase::FormAttentionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<SoftmaxOp> softmaxes;
    module.walk([&](SoftmaxOp op) { softmaxes.push_back(op); });
    int formed = 0;
    for (SoftmaxOp softmax : softmaxes)
      if (std::optional<Chain> chain = match(softmax)) {
        replace(*chain);
        ++formed;
      }
    if (formed && dropUnreadBuffers)
      removeUnreadBuffers(module);
  }

  /// The chain around `softmax`, if it is one this pass replaces.
  std::optional<Chain> match(SoftmaxOp softmax) {
    RankedTensorType scoresType = tensorOf(softmax.getInput());
    if (scoresType.getRank() != 4 || softmax.getDim() != 3)
      return std::nullopt;
    ArrayRef<int64_t> shape = scoresType.getShape();
    Chain chain;
    chain.batch = shape[0];
    chain.heads = shape[1];
    int64_t queries = shape[2], keys = shape[3];

    // Up: [mask] <- [scale] <- [view] <- matmul(q, k^T).
    SmallVector<Operation *> up;
    Value x = softmax.getInput();
    auto singleUse = [](Value v) { return v.hasOneUse(); };
    if (!singleUse(x))
      return std::nullopt;
    auto hides = [](std::optional<double> fill) {
      return fill && *fill <= kHiddenBelow;
    };
    if (auto mask = x.getDefiningOp<CausalMaskOp>()) {
      double fill = mask.getFillValue()
                        ? mask.getFillValue()->convertToDouble()
                        : -INFINITY;
      // With T > S the first rows see no key: PyTorch's softmax gives NaN
      // there, dsc.attention 0; such graphs keep their chain.
      if (!hides(fill) || queries > keys)
        return std::nullopt;
      chain.causal = true;
      up.push_back(mask);
      x = mask.getInput();
    } else if (auto add = x.getDefiningOp<AddOp>()) {
      // scores + mask: the operand that leads to the scores' matmul.
      for (int side = 0; side < 2 && !chain.scores; ++side) {
        Chain tried = chain;
        SmallVector<Operation *> triedUp = up;
        triedUp.push_back(add);
        if (tensorOf(add->getOperand(side)) != scoresType ||
            !matchScores(add->getOperand(side), tried, triedUp, queries, keys))
          continue;
        tried.mask = add->getOperand(1 - side);
        chain = tried;
        up = triedUp;
      }
      if (!chain.scores)
        return std::nullopt;
      x = nullptr;
    } else if (auto select = x.getDefiningOp<SelectOp>()) {
      // select(keep, scores, -inf): a boolean mask.
      std::optional<double> fill = splatValue(select.getOnFalse());
      if (!fill || !std::isinf(*fill) || *fill > 0 ||
          tensorOf(select.getOnTrue()) != scoresType)
        return std::nullopt;
      chain.mask = select.getCondition();
      up.push_back(select);
      x = select.getOnTrue();
    }
    if (x && !matchScores(x, chain, up, queries, keys))
      return std::nullopt;
    // A mask operand is formed only on request (`masked`): see the pass's
    // description.
    if (chain.mask && !masked)
      return std::nullopt;
    // A mask of the scores' element type (an additive one) or i1.
    if (chain.mask) {
      Type element = tensorOf(chain.mask).getElementType();
      if (element != scoresType.getElementType() && !element.isInteger(1))
        return std::nullopt;
    }

    // Down: softmax -> [dropout p=0] -> [view] -> matmul(p, v).
    SmallVector<Operation *> down;
    Value y = softmax.getResult();
    if (!singleUse(y))
      return std::nullopt;
    Operation *user = *y.getUsers().begin();
    if (auto dropout = dyn_cast<DropoutOp>(user)) {
      if (!dropout.getP().isZero() || !singleUse(dropout.getResult()))
        return std::nullopt;
      down.push_back(dropout);
      y = dropout.getResult();
      user = *y.getUsers().begin();
    }
    if (auto view = dyn_cast<ReshapeOp>(user)) {
      if (!singleUse(view.getResult()))
        return std::nullopt;
      down.push_back(view);
      y = view.getResult();
      user = *y.getUsers().begin();
    }
    chain.output = dyn_cast<MatmulOp>(user);
    if (!chain.output || chain.output.getLhs() != y ||
        chain.output.getRhs() == y ||
        !isHeadMatmul(chain.output, chain, queries, -1))
      return std::nullopt;
    // The value rows are the keys.
    RankedTensorType v = tensorOf(chain.output.getRhs());
    if (v.getShape()[v.getRank() - (chain.output.getTransposeRhs() ? 1 : 2)] != keys)
      return std::nullopt;

    chain.ops.push_back(chain.scores);
    chain.ops.append(up.rbegin(), up.rend());
    chain.ops.push_back(softmax);
    chain.ops.append(down.begin(), down.end());
    chain.ops.push_back(chain.output);
    return chain;
  }

  /// [scale] <- [view] <- matmul(q, k^T) from the scores `x` up, each value
  /// read only by the next op.
  bool matchScores(Value x, Chain &chain, SmallVectorImpl<Operation *> &up,
                   int64_t queries, int64_t keys) {
    RankedTensorType scoresType = tensorOf(x);
    if (!x.hasOneUse())
      return false;
    if (auto mul = x.getDefiningOp<MulOp>()) {
      for (int side = 0; side < 2; ++side) {
        std::optional<double> c = splatValue(mul->getOperand(1 - side));
        if (c && tensorOf(mul->getOperand(side)) == scoresType) {
          chain.scale = *c;
          up.push_back(mul);
          x = mul->getOperand(side);
          break;
        }
      }
    } else if (auto div = x.getDefiningOp<DivOp>()) {
      std::optional<double> c = splatValue(div.getRhs());
      if (c && *c != 0 && tensorOf(div.getLhs()) == scoresType) {
        chain.scale = 1.0 / *c;
        up.push_back(div);
        x = div.getLhs();
      }
    }
    if (!x.hasOneUse())
      return false;
    if (auto view = x.getDefiningOp<ReshapeOp>()) {
      up.push_back(view);
      x = view.getInput();
      if (!x.hasOneUse())
        return false;
    }
    chain.scores = x.getDefiningOp<MatmulOp>();
    return chain.scores && isHeadMatmul(chain.scores, chain, queries, keys);
  }

  /// `mm` is a matmul over the B*H heads (batch dimensions of B*H elements,
  /// the same in both operands, no transposed lhs) with a [T, cols] result
  /// (cols = `cols` unless negative).
  static bool isHeadMatmul(MatmulOp mm, const Chain &chain, int64_t rows,
                           int64_t cols) {
    if (mm.getTransposeLhs())
      return false;
    ArrayRef<int64_t> out = tensorOf(mm.getResult()).getShape();
    ArrayRef<int64_t> lhs = tensorOf(mm.getLhs()).getShape();
    ArrayRef<int64_t> rhs = tensorOf(mm.getRhs()).getShape();
    if (out.size() < 3 || lhs.size() != out.size() || rhs.size() != out.size())
      return false;
    ArrayRef<int64_t> batch = out.drop_back(2);
    if (lhs.drop_back(2) != batch || rhs.drop_back(2) != batch ||
        product(batch) != chain.batch * chain.heads)
      return false;
    if (batch.size() == 2 && (batch[0] != chain.batch || batch[1] != chain.heads))
      return false;
    return out[out.size() - 2] == rows && (cols < 0 || out.back() == cols);
  }

  /// `v` ([..., rows, cols] with B*H batch elements) as [B, H, rows, cols]:
  /// the tensor a reshape made it from when that has this type, else a new
  /// reshape (a view).
  static Value toHeads(OpBuilder &b, Location loc, Value v, const Chain &chain) {
    ArrayRef<int64_t> shape = tensorOf(v).getShape();
    auto type = RankedTensorType::get(
        {chain.batch, chain.heads, shape[shape.size() - 2], shape.back()},
        tensorOf(v).getElementType());
    if (tensorOf(v) == type)
      return v;
    if (auto view = v.getDefiningOp<ReshapeOp>();
        view && tensorOf(view.getInput()) == type)
      return view.getInput();
    return ReshapeOp::create(b, loc, type, v);
  }

  /// `v` ([..., a, c] with B*H batch elements) as [B, H, c, a]: the tensor
  /// that was transposed (and viewed) into it where there is one, else a
  /// transpose of its head view.
  static Value transposedHeads(OpBuilder &b, Location loc, Value v,
                               const Chain &chain) {
    ArrayRef<int64_t> shape = tensorOf(v).getShape();
    auto type = RankedTensorType::get(
        {chain.batch, chain.heads, shape.back(), shape[shape.size() - 2]},
        tensorOf(v).getElementType());
    Value w = v;
    if (auto view = w.getDefiningOp<ReshapeOp>())
      w = view.getInput();
    if (auto t = w.getDefiningOp<TransposeOp>();
        t && tensorOf(t.getInput()) == type &&
        std::minmax(t.getDim0(), t.getDim1()) == std::minmax<uint64_t>(2, 3))
      return t.getInput();
    return TransposeOp::create(b, loc, toHeads(b, loc, v, chain),
                               b.getI64IntegerAttr(2), b.getI64IntegerAttr(3));
  }

  void replace(Chain &chain) {
    MatmulOp out = chain.output;
    Location loc = out.getLoc();
    OpBuilder b(out);
    MatmulOp scores = chain.scores;
    Value q = toHeads(b, loc, scores.getLhs(), chain);
    Value k = scores.getTransposeRhs()
                  ? toHeads(b, loc, scores.getRhs(), chain)
                  : transposedHeads(b, loc, scores.getRhs(), chain);
    Value v = out.getTransposeRhs() ? transposedHeads(b, loc, out.getRhs(), chain)
                                    : toHeads(b, loc, out.getRhs(), chain);
    auto attention = AttentionOp::create(b, loc, q, k, v, chain.mask,
                                         chain.scale, chain.causal);
    Value result = attention.getResult();
    if (result.getType() != out.getType())
      result = ReshapeOp::create(b, loc, out.getType(), result);
    out.getResult().replaceAllUsesWith(result);

    // The chain, last first, then whatever only it read (the views and
    // transposes of q, k, v, the scale constant).
    SmallVector<Operation *> dead(chain.ops.rbegin(), chain.ops.rend());
    SmallVector<Operation *> producers;
    llvm::SmallPtrSet<Operation *, 16> erased;
    auto erase = [&](Operation *op) {
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          producers.push_back(def);
      op->dropAllUses();
      op->erase();
      erased.insert(op);
    };
    for (Operation *op : dead)
      erase(op);
    while (!producers.empty()) {
      Operation *def = producers.pop_back_val();
      if (!erased.contains(def) && isOpTriviallyDead(def))
        erase(def);
    }
  }

  /// Buffer states that nothing reads or writes (GPT-2's per-layer masks
  /// once their chains are attention ops).
  void removeUnreadBuffers(ModuleOp module) {
    for (StateOp state : llvm::make_early_inc_range(module.getOps<StateOp>()))
      if (state.getRole() == StateRole::buffer &&
          SymbolTable::symbolKnownUseEmpty(state, module))
        state.erase();
  }
};
} // namespace
