//===- AttentionOps.cpp - dsc.attention and dsc.attention_grad -------------===//
//
// The shape rules both ops share: q [B, H, T, D], k [B, H, S, D],
// v [B, H, S, Dv] of one float type, a mask that broadcasts to
// [B, H, T, S] (i1, or the queries' float type), a finite scale, the
// log-sum-exp [B, H, T] f32. Each mismatch is its own error naming the
// operands and dimensions involved.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace mlir::dsc;

static RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The result type [B, H, T, Dv] of attention over `query` and `value`.
static RankedTensorType attentionResultType(Value query, Value value) {
  RankedTensorType q = tensorOf(query);
  ArrayRef<int64_t> qs = q.getShape(), vs = tensorOf(value).getShape();
  return RankedTensorType::get({qs[0], qs[1], qs[2], vs[3]}, q.getElementType());
}

/// The log-sum-exp type [B, H, T] f32 of attention over `query`.
static RankedTensorType logSumExpType(Value query) {
  ArrayRef<int64_t> qs = tensorOf(query).getShape();
  return RankedTensorType::get({qs[0], qs[1], qs[2]},
                               Float32Type::get(query.getContext()));
}

/// The rules on q, k, v, the mask and the scale; `result` and `logsumexp`
/// are the types the op has (results or operands) for them.
static LogicalResult verifyAttention(Operation *op, Value query, Value key,
                                     Value value, Value mask, double scale,
                                     Type result, Type logsumexp,
                                     StringRef resultName) {
  auto fail = [&]() { return op->emitOpError(); };
  for (auto [name, v] : {std::pair<StringRef, Value>{"query", query},
                         {"key", key},
                         {"value", value}})
    if (tensorOf(v).getRank() != 4)
      return fail() << "needs a rank-4 " << name
                    << " ([batch, heads, tokens, head_dim]), got "
                    << v.getType();
  Type element = tensorOf(query).getElementType();
  if (tensorOf(key).getElementType() != element ||
      tensorOf(value).getElementType() != element)
    return fail() << "needs query, key and value of one element type, got "
                  << element << ", " << tensorOf(key).getElementType()
                  << " and " << tensorOf(value).getElementType();
  ArrayRef<int64_t> q = tensorOf(query).getShape(), k = tensorOf(key).getShape(),
                    v = tensorOf(value).getShape();
  static const char *dimNames[] = {"batch", "heads"};
  for (int d = 0; d < 2; ++d)
    if (k[d] != q[d] || v[d] != q[d])
      return fail() << "needs one " << dimNames[d]
                    << " size (dimension " << d << ") in query, key and value, got "
                    << q[d] << ", " << k[d] << " and " << v[d];
  if (k[3] != q[3])
    return fail() << "needs the key's head size (dimension 3) " << k[3]
                  << " to equal the query's " << q[3];
  if (v[2] != k[2])
    return fail() << "needs as many values as keys (dimension 2), got "
                  << v[2] << " values and " << k[2] << " keys";
  if (!std::isfinite(scale))
    return fail() << "needs a finite scale, got " << scale;
  if (mask) {
    RankedTensorType m = tensorOf(mask);
    if (!m.getElementType().isInteger(1) && m.getElementType() != element)
      return fail() << "needs an i1 mask or one of the query's element type "
                    << element << ", got " << m.getElementType();
    SmallVector<int64_t> scores = {q[0], q[1], q[2], k[2]};
    if (m.getRank() > 4)
      return fail() << "needs a mask of rank <= 4 that broadcasts to the scores "
                    << "[" << q[0] << "x" << q[1] << "x" << q[2] << "x" << k[2]
                    << "], got " << m;
    for (int64_t i = 0; i < m.getRank(); ++i) {
      int64_t size = m.getShape()[m.getRank() - 1 - i];
      int64_t want = scores[3 - i];
      if (size != 1 && size != want)
        return fail() << "needs a mask that broadcasts to the scores ["
                      << q[0] << "x" << q[1] << "x" << q[2] << "x" << k[2]
                      << "]: its dimension " << m.getRank() - 1 - i << " is "
                      << size << ", not 1 or " << want;
    }
  }
  RankedTensorType wantResult = attentionResultType(query, value);
  if (result != wantResult)
    return fail() << "needs " << resultName << " of type " << wantResult
                  << " ([batch, heads, queries, value_dim] of the query's "
                     "element type), got "
                  << result;
  RankedTensorType wantLse = logSumExpType(query);
  if (logsumexp != wantLse)
    return fail() << "needs a log-sum-exp of type " << wantLse
                  << " ([batch, heads, queries] f32), got " << logsumexp;
  return success();
}

void AttentionOp::build(OpBuilder &builder, OperationState &state, Value query,
                        Value key, Value value, Value mask, double scale,
                        bool causal) {
  build(builder, state, attentionResultType(query, value),
        logSumExpType(query), query, key, value, mask,
        builder.getF64FloatAttr(scale),
        causal ? builder.getUnitAttr() : UnitAttr());
}

LogicalResult AttentionOp::verify() {
  return verifyAttention(*this, getQuery(), getKey(), getValue(), getMask(),
                         getScale().convertToDouble(), getResult().getType(),
                         getLogsumexp().getType(), "a result");
}

void AttentionGradOp::build(OpBuilder &builder, OperationState &state,
                            Value query, Value key, Value value, Value result,
                            Value resultGrad, Value logsumexp, Value mask,
                            double scale, bool causal) {
  build(builder, state, query.getType(), key.getType(), value.getType(), query,
        key, value, result, resultGrad, logsumexp, mask,
        builder.getF64FloatAttr(scale),
        causal ? builder.getUnitAttr() : UnitAttr());
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyAttention(*this, getQuery(), getKey(), getValue(),
                             getMask(), getScale().convertToDouble(),
                             getResult().getType(), getLogsumexp().getType(),
                             "a forward result")))
    return failure();
  if (getResultGrad().getType() != getResult().getType())
    return emitOpError() << "needs a result_grad of the forward result's type "
                         << getResult().getType() << ", got "
                         << getResultGrad().getType();
  return success();
}
