//===- Elementwise.cpp - gradients of elementwise ops ----------------------===//
//
// Formulas follow PyTorch's derivatives.yaml, so results agree with
// torch.autograd to rounding. A binary op's operands broadcast to the
// result: each operand's cotangent is summed back to its own shape.
//
//===----------------------------------------------------------------------===//

#include "GradientRules.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::grad;

namespace {
/// Small expression helpers over one element type.
struct Ops {
  OpBuilder &b;
  Location loc;
  Type elem;
  Value c(double v) { return scalar(b, loc, elem, v); }
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value cmp(ComparisonDirection d, Value x, Value y) {
    return CompareOp::create(b, loc, d, x, y);
  }
  Value select(Value cond, Value x, Value y) {
    return SelectOp::create(b, loc, cond, x, y);
  }
};

Ops opsFor(Gradient &g, Operation *op) {
  return {g.b, g.loc, tensorType(op->getResult(0)).getElementType()};
}

/// Sets the cotangents of a binary op's operands, each summed to its shape.
template <typename OpT>
void setBinary(OpT op, Gradient &g, Value dlhs, Value drhs) {
  if (dlhs)
    g.set(0, sumToShape(g.b, g.loc, dlhs, tensorType(op.getLhs()).getShape()));
  if (drhs)
    g.set(1, sumToShape(g.b, g.loc, drhs, tensorType(op.getRhs()).getShape()));
}
} // namespace

static LogicalResult addGrad(AddOp op, Gradient &g) {
  setBinary(op, g, g.dy(), g.dy());
  return success();
}

static LogicalResult subGrad(SubOp op, Gradient &g) {
  Value drhs = g.active(1) ? NegOp::create(g.b, g.loc, g.dy()) : Value();
  setBinary(op, g, g.dy(), drhs);
  return success();
}

static LogicalResult mulGrad(MulOp op, Gradient &g) {
  Ops o = opsFor(g, op);
  setBinary(op, g, g.active(0) ? o.mul(g.dy(), op.getRhs()) : Value(),
            g.active(1) ? o.mul(g.dy(), op.getLhs()) : Value());
  return success();
}

static LogicalResult divGrad(DivOp op, Gradient &g) {
  Ops o = opsFor(g, op);
  Value dlhs, drhs;
  if (g.active(0))
    dlhs = o.div(g.dy(), op.getRhs());
  if (g.active(1)) // -dy * lhs / (rhs * rhs)
    drhs = o.div(o.mul(NegOp::create(g.b, g.loc, g.dy()), op.getLhs()),
                 o.mul(op.getRhs(), op.getRhs()));
  setBinary(op, g, dlhs, drhs);
  return success();
}

static LogicalResult powGrad(PowOp op, Gradient &g) {
  Ops o = opsFor(g, op);
  Value x = op.getLhs(), p = op.getRhs(), zero = o.c(0.0);
  Value dlhs, drhs;
  if (g.active(0)) { // p == 0 ? 0 : dy * p * x^(p - 1)
    Value d = o.mul(g.dy(), o.mul(p, PowOp::create(g.b, g.loc, x, o.sub(p, o.c(1.0)))));
    dlhs = o.select(o.cmp(ComparisonDirection::eq, p, zero), zero, d);
  }
  if (g.active(1)) { // (x == 0 and p >= 0) ? 0 : dy * x^p * log(x)
    Value v = o.mul(op.getResult(), LogOp::create(g.b, g.loc, x));
    Value masked =
        o.select(o.cmp(ComparisonDirection::eq, x, zero),
                 o.select(o.cmp(ComparisonDirection::ge, p, zero), zero, v), v);
    drhs = o.mul(g.dy(), masked);
  }
  setBinary(op, g, dlhs, drhs);
  return success();
}

/// max/min: the cotangent goes to the operand that wins, half to each on a
/// tie (torch.maximum / torch.minimum).
template <typename OpT>
static LogicalResult extremumGrad(OpT op, Gradient &g) {
  Ops o = opsFor(g, op);
  bool isMax = std::is_same_v<OpT, MaximumOp>;
  Value lhs = op.getLhs(), rhs = op.getRhs(), zero = o.c(0.0);
  Value tie = o.select(o.cmp(ComparisonDirection::eq, lhs, rhs),
                       o.mul(g.dy(), o.c(0.5)), g.dy());
  auto lose = [&](Value self, Value other) {
    return o.cmp(isMax ? ComparisonDirection::lt : ComparisonDirection::gt,
                 self, other);
  };
  setBinary(op, g, g.active(0) ? o.select(lose(lhs, rhs), zero, tie) : Value(),
            g.active(1) ? o.select(lose(rhs, lhs), zero, tie) : Value());
  return success();
}

static LogicalResult negGrad(NegOp op, Gradient &g) {
  g.set(0, NegOp::create(g.b, g.loc, g.dy()));
  return success();
}

static LogicalResult reluGrad(ReluOp op, Gradient &g) {
  Ops o = opsFor(g, op);
  Value zero = o.c(0.0);
  g.set(0, o.select(o.cmp(ComparisonDirection::gt, op.getResult(), zero),
                    g.dy(), zero));
  return success();
}

static LogicalResult sigmoidGrad(SigmoidOp op, Gradient &g) {
  Ops o = opsFor(g, op);
  Value y = op.getResult();
  g.set(0, o.mul(o.mul(g.dy(), o.sub(o.c(1.0), y)), y));
  return success();
}

static LogicalResult siluGrad(SiluOp op, Gradient &g) {
  // dy * s * (1 + x * (1 - s)), s = sigmoid(x)
  Ops o = opsFor(g, op);
  Value x = op.getInput(), one = o.c(1.0);
  Value s = SigmoidOp::create(g.b, g.loc, x);
  g.set(0, o.mul(o.mul(g.dy(), s), o.add(one, o.mul(x, o.sub(one, s)))));
  return success();
}

static LogicalResult tanhGrad(TanhOp op, Gradient &g) {
  Ops o = opsFor(g, op);
  Value y = op.getResult();
  g.set(0, o.mul(g.dy(), o.sub(o.c(1.0), o.mul(y, y))));
  return success();
}

static LogicalResult expGrad(ExpOp op, Gradient &g) {
  g.set(0, opsFor(g, op).mul(g.dy(), op.getResult()));
  return success();
}

static LogicalResult cosGrad(CosOp op, Gradient &g) {
  // -dy * sin(x)
  Ops o = opsFor(g, op);
  g.set(0, o.mul(NegOp::create(g.b, g.loc, g.dy()),
                 SinOp::create(g.b, g.loc, op.getInput())));
  return success();
}

static LogicalResult sinGrad(SinOp op, Gradient &g) {
  g.set(0, opsFor(g, op).mul(g.dy(), CosOp::create(g.b, g.loc, op.getInput())));
  return success();
}

static LogicalResult logGrad(LogOp op, Gradient &g) {
  g.set(0, opsFor(g, op).div(g.dy(), op.getInput()));
  return success();
}

static LogicalResult sqrtGrad(SqrtOp op, Gradient &g) {
  Ops o = opsFor(g, op);
  g.set(0, o.div(g.dy(), o.mul(o.c(2.0), op.getResult())));
  return success();
}

static LogicalResult rsqrtGrad(RsqrtOp op, Gradient &g) {
  // -0.5 * dy * y^3
  Ops o = opsFor(g, op);
  Value y = op.getResult();
  g.set(0, o.mul(o.mul(o.c(-0.5), g.dy()), o.mul(o.mul(y, y), y)));
  return success();
}

static LogicalResult geluGrad(GeluOp op, Gradient &g) {
  Value d = GeluGradOp::create(g.b, g.loc, op.getApproximation(), op.getInput());
  g.set(0, opsFor(g, op).mul(g.dy(), d));
  return success();
}

static LogicalResult convertGrad(ConvertOp op, Gradient &g) {
  // Only float -> float conversions are on a gradient path: integer and
  // boolean values are never active, and neither are their conversions.
  Type in = tensorType(op.getInput()).getElementType();
  if (!isa<FloatType>(in))
    return op.emitOpError("has no gradient for a conversion from ") << in;
  g.set(0, ConvertOp::create(g.b, g.loc, op.getInput().getType(), g.dy()));
  return success();
}

static LogicalResult selectGrad(SelectOp op, Gradient &g) {
  Ops o = opsFor(g, op);
  Value zero = o.c(0.0);
  if (g.active(1))
    g.set(1, sumToShape(g.b, g.loc, o.select(op.getCondition(), g.dy(), zero),
                        tensorType(op.getOnTrue()).getShape()));
  if (g.active(2))
    g.set(2, sumToShape(g.b, g.loc, o.select(op.getCondition(), zero, g.dy()),
                        tensorType(op.getOnFalse()).getShape()));
  return success();
}

static LogicalResult dropoutGrad(DropoutOp op, Gradient &g) {
  // The same key, p, seed and part draw the same mask: the cotangent is
  // dropped where the input was, and scaled alike.
  g.set(0, DropoutOp::create(g.b, g.loc, g.dy(), op.getKey(), op.getPAttr(),
                             op.getSeedAttr(), op.getSamplesAttr(),
                             op.getPart(), op.getPartsAttr()));
  return success();
}

static LogicalResult allReduceGrad(AllReduceOp op, Gradient &g) {
  // Megatron's "g": the all-reduce's result is replicated on every rank,
  // and so is its cotangent, because everything after it (the loss) is
  // computed redundantly on every rank from replicated values. The adjoint
  // of a sum over ranks is then the broadcast of the cotangent to every
  // rank's input, which each rank already holds: the identity. (Summing the
  // cotangents again would count every rank's loss N times.) The same
  // holds within a tensor group, whose ranks compute everything after the
  // sum that ends a tensor-parallel block alike, and so over the data
  // group of a tensor-parallel mesh: its sum (the loss's) is replicated on
  // the data group's ranks, and so on every rank of their tensor groups.
  // A pipeline's sum of its stages' losses (only the last stage's is not
  // zero) is replicated on every stage, and each stage's loss enters it
  // once: the identity again. Over another group smaller than the world
  // the result is replicated only within the group, so that argument does
  // not hold: such sums are gradient reductions, which come after autodiff.
  // A maximum has no gradient (DSCOps.td): nothing passes through it.
  if (op.getMaximum())
    return success();
  if (op.getGroup() != CollectiveGroup::world &&
      op.getGroup() != CollectiveGroup::tensor &&
      op.getGroup() != CollectiveGroup::data &&
      op.getGroup() != CollectiveGroup::pipeline)
    return op.emitOpError("has no gradient over the ")
           << stringifyCollectiveGroup(op.getGroup()) << " group";
  g.set(0, g.dy());
  return success();
}

static LogicalResult replicateGrad(ReplicateOp op, Gradient &g) {
  // Megatron's "f": each rank's cotangent covers only its own slice of the
  // work the value feeds; the value's cotangent is their sum.
  g.set(0, AllReduceOp::create(g.b, g.loc, g.dy(), op.getGroup()));
  return success();
}

static LogicalResult allGatherGrad(AllGatherOp op, Gradient &g) {
  // With `alike`, the ranks use the whole alike and its cotangent is the
  // same on each: the shard's cotangent is its block of it, on its owner.
  if (op.getAlike()) {
    g.set(0, LocalShardOp::create(g.b, g.loc, op.getInput().getType(), g.dy(),
                                  op.getGroup()));
    return success();
  }
  // Each rank's cotangent of the gathered whole is its own partial (the
  // ranks' losses differ by their micro-batches); the shard's cotangent on
  // its owner is the sum of every rank's cotangent of that block.
  g.set(0, ReduceScatterOp::create(g.b, g.loc, op.getInput().getType(), g.dy(),
                                   op.getGroup()));
  return success();
}

static LogicalResult localShardGrad(LocalShardOp op, Gradient &g) {
  // The input is the same on every rank of the group and each shard feeds
  // its own rank's work: the input's cotangent is every rank's shard
  // cotangent, in rank order.
  g.set(0, AllGatherOp::create(g.b, g.loc, op.getInput().getType(), g.dy(),
                               op.getGroup()));
  return success();
}

static LogicalResult reduceScatterGrad(ReduceScatterOp op, Gradient &g) {
  // Every rank's input reaches every block of the sum: its cotangent is the
  // cotangent of each block, gathered from the block's owner.
  g.set(0, AllGatherOp::create(g.b, g.loc, op.getInput().getType(), g.dy(),
                               op.getGroup()));
  return success();
}

/// A transfer's gradient belongs to the same model chunk as the transfer
/// (the interleaved schedule runs each chunk's backward as its own action).
static void keepChunk(Operation *transfer, Operation *gradient) {
  if (Attribute chunk = transfer->getAttr(kPipelineChunkAttrName))
    gradient->setAttr(kPipelineChunkAttrName, chunk);
}

static LogicalResult pipelineSendGrad(PipelineSendOp op, Gradient &g) {
  // The send's result is a zero the stage adds to its loss; what the loss
  // owes `input` is computed by the stages after this one, and their
  // gradient of it comes back from the peer the activation went to.
  auto recv = PipelineRecvOp::create(g.b, g.loc, op.getInput().getType(),
                                     op.getPeer(), op.getMicroBatch());
  keepChunk(op, recv);
  g.set(0, recv);
  return success();
}

static LogicalResult pipelineRecvGrad(PipelineRecvOp op, Gradient &g) {
  // The received activation has no operand here: its cotangent belongs to
  // the stage that sent it, which waits for it.
  keepChunk(op, PipelineSendOp::create(g.b, g.loc, g.dy(), op.getPeer(),
                                       op.getMicroBatch()));
  return success();
}

static LogicalResult allToAllGrad(AllToAllOp op, Gradient &g) {
  // The exchange permutes the blocks of all the group's ranks; a
  // permutation's transpose is its inverse, which is the same exchange:
  // block j of rank i's cotangent goes back to rank j's block i.
  g.set(0, AllToAllOp::create(g.b, g.loc, g.dy(), op.getGroup()));
  return success();
}

void grad::registerElementwiseGradients(MLIRContext *context) {
  attach<AddOp, addGrad>(context);
  attach<SubOp, subGrad>(context);
  attach<MulOp, mulGrad>(context);
  attach<DivOp, divGrad>(context);
  attach<PowOp, powGrad>(context);
  attach<MaximumOp, extremumGrad<MaximumOp>>(context);
  attach<MinimumOp, extremumGrad<MinimumOp>>(context);
  attach<NegOp, negGrad>(context);
  attach<ReluOp, reluGrad>(context);
  attach<SigmoidOp, sigmoidGrad>(context);
  attach<SiluOp, siluGrad>(context);
  attach<TanhOp, tanhGrad>(context);
  attach<ExpOp, expGrad>(context);
  attach<CosOp, cosGrad>(context);
  attach<SinOp, sinGrad>(context);
  attach<LogOp, logGrad>(context);
  attach<SqrtOp, sqrtGrad>(context);
  attach<RsqrtOp, rsqrtGrad>(context);
  attach<GeluOp, geluGrad>(context);
  attach<ConvertOp, convertGrad>(context);
  attach<SelectOp, selectGrad>(context);
  attach<DropoutOp, dropoutGrad>(context);
  attach<AllReduceOp, allReduceGrad>(context);
  attach<AllGatherOp, allGatherGrad>(context);
  attach<LocalShardOp, localShardGrad>(context);
  attach<ReplicateOp, replicateGrad>(context);
  attach<AllToAllOp, allToAllGrad>(context);
  attach<PipelineSendOp, pipelineSendGrad>(context);
  attach<PipelineRecvOp, pipelineRecvGrad>(context);
  attach<ReduceScatterOp, reduceScatterGrad>(context);
}
