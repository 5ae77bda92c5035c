//===- SequenceRetype.cpp - a graph's ops at a shorter sequence -----------===//

#include "SequenceRetype.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Dialect/DSC/IR/DSCTraits.h"

#include "mlir/Interfaces/InferTypeOpInterface.h"

using namespace mlir;
using namespace mlir::dsc;

static int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

/// One changed input dimension: `outer` elements before it, its size goes
/// from `size` to `newSize`, `inner` elements after it.
static std::optional<SmallVector<int64_t>>
scaleOne(SmallVector<int64_t> to, int64_t outer, int64_t size, int64_t newSize,
         int64_t inner) {
  int64_t rank = to.size();
  // An output dimension holding the changed one whole, with some of the
  // outer and inner elements merged into it ([B, T, D] -> [B*T, D]).
  for (int64_t q = 0; q < rank; ++q) {
    int64_t before = product(ArrayRef(to).take_front(q));
    int64_t after = product(ArrayRef(to).drop_front(q + 1));
    if (outer % before || inner % after)
      continue;
    if (to[q] == (outer / before) * size * (inner / after)) {
      to[q] = to[q] / size * newSize;
      return to;
    }
  }
  // The changed dimension split into several ([B*T, D] -> [B, T, D]): the
  // last of them whose new size divides evenly takes the change.
  for (int64_t q = 0; q < rank; ++q) {
    if (product(ArrayRef(to).take_front(q)) != outer)
      continue;
    for (int64_t r = q + 1; r < rank; ++r) {
      if (product(ArrayRef(to).drop_front(r + 1)) != inner ||
          product(ArrayRef(to).slice(q, r - q + 1)) != size)
        continue;
      for (int64_t k = r; k >= q; --k) {
        int64_t others = size / to[k];
        if (newSize % others == 0) {
          to[k] = newSize / others;
          return to;
        }
      }
    }
  }
  return std::nullopt;
}

std::optional<SmallVector<int64_t>>
mlir::dsc::reshapeForLength(ArrayRef<int64_t> from, ArrayRef<int64_t> newFrom,
                            ArrayRef<int64_t> to) {
  SmallVector<int64_t> current(from), result(to);
  for (size_t p = 0; p < from.size(); ++p) {
    if (from[p] == newFrom[p])
      continue;
    std::optional<SmallVector<int64_t>> next =
        scaleOne(result, product(ArrayRef(current).take_front(p)), from[p],
                 newFrom[p], product(ArrayRef(current).drop_front(p + 1)));
    if (!next)
      return std::nullopt;
    result = *next;
    current[p] = newFrom[p];
  }
  return result;
}

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

static RankedTensorType withShape(Type type, ArrayRef<int64_t> shape) {
  return cast<RankedTensorType>(type).clone(shape);
}

FailureOr<SmallVector<Type>>
SequenceRetyper::resultTypes(Operation *op, Operation *clone) {
  SmallVector<Type> types;
  if (auto infer = dyn_cast<InferTypeOpInterface>(clone)) {
    if (failed(infer.inferReturnTypes(
            clone->getContext(), clone->getLoc(), clone->getOperands(),
            clone->getRawDictionaryAttrs(), clone->getPropertiesStorage(),
            clone->getRegions(), types)))
      return op->emitError("the shortened sequence does not fit this op");
    return types;
  }
  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    std::optional<SmallVector<int64_t>> shape =
        reshapeForLength(shapeOf(reshape.getInput()),
                         shapeOf(clone->getOperand(0)), shapeOf(reshape));
    if (!shape)
      return op->emitError("cannot follow the sequence dimension through this "
                           "reshape");
    types.push_back(withShape(reshape.getType(), *shape));
    return types;
  }
  if (auto attention = dyn_cast<AttentionOp>(op)) {
    ArrayRef<int64_t> q = shapeOf(clone->getOperand(0));
    ArrayRef<int64_t> v = shapeOf(clone->getOperand(2));
    SmallVector<int64_t> result(q);
    result.back() = v.back();
    types.push_back(withShape(attention.getResult().getType(), result));
    types.push_back(withShape(attention.getLogsumexp().getType(), q.drop_back()));
    return types;
  }
  if (auto broadcast = dyn_cast<BroadcastOp>(op)) {
    // NumPy alignment at the right: a changed input dimension changes the
    // result's dimension it is aligned with.
    ArrayRef<int64_t> from = shapeOf(broadcast.getInput());
    ArrayRef<int64_t> to = shapeOf(clone->getOperand(0));
    SmallVector<int64_t> result(shapeOf(broadcast));
    size_t offset = result.size() - from.size();
    for (size_t i = 0; i < from.size(); ++i)
      if (from[i] != to[i])
        result[offset + i] = to[i];
    types.push_back(withShape(broadcast.getType(), result));
    return types;
  }
  // Ops whose results have an operand's shape (normalizations, softmax,
  // masks, dropout): the result keeps that operand's new shape.
  for (Value result : op->getResults()) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    std::optional<Type> found;
    for (auto [old, now] : llvm::zip(op->getOperands(), clone->getOperands()))
      if (type && isa<RankedTensorType>(old.getType()) &&
          shapeOf(old) == type.getShape()) {
        found = withShape(type, shapeOf(now));
        break;
      }
    if (!found)
      return op->emitError("cannot derive this op's result type for a "
                           "shortened sequence");
    types.push_back(*found);
  }
  return types;
}

FailureOr<Operation *> SequenceRetyper::retype(Operation *op) {
  if (llvm::none_of(op->getOperands(),
                    [&](Value v) { return mapping.contains(v); }))
    return static_cast<Operation *>(nullptr);
  OpBuilder b(op);
  // Elementwise ops broadcast: an operand the sequence does not flow into
  // that is aligned with a shortened dimension of full size must be cut
  // too (position embeddings, mask buffers).
  SmallVector<Value> operands;
  for (Value operand : op->getOperands())
    operands.push_back(mapping.lookupOrDefault(operand));
  if (isElementwise(op)) {
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      if (mapping.contains(operand))
        continue;
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      if (!type)
        continue;
      SmallVector<int64_t> wanted(type.getShape());
      for (Value other : op->getOperands()) {
        if (!mapping.contains(other))
          continue;
        ArrayRef<int64_t> from = shapeOf(other);
        ArrayRef<int64_t> to = shapeOf(mapping.lookup(other));
        for (int64_t d = 0; d < type.getRank(); ++d) {
          int64_t o = int64_t(from.size()) - type.getRank() + d;
          if (o >= 0 && from[o] != to[o] && wanted[d] == from[o])
            wanted[d] = to[o];
        }
      }
      if (wanted == type.getShape())
        continue;
      FailureOr<Value> fitted = fit(b, op, operand, wanted);
      if (failed(fitted))
        return failure();
      operands[i] = *fitted;
    }
  }
  Operation *clone = b.clone(*op);
  clone->setOperands(operands);
  FailureOr<SmallVector<Type>> types = resultTypes(op, clone);
  if (failed(types)) {
    clone->erase();
    return failure();
  }
  for (auto [result, type] : llvm::zip(clone->getResults(), *types))
    result.setType(type);
  for (auto [full, shortened] : llvm::zip(op->getResults(), clone->getResults()))
    mapping.map(full, shortened);
  return clone;
}
