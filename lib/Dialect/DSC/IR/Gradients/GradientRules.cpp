//===- GradientRules.cpp - the gradient interface and its helpers ----------===//

#include "GradientRules.h"

using namespace mlir;
using namespace mlir::dsc;

#include "dsc/Dialect/DSC/IR/DSCInterfaces.cpp.inc"

RankedTensorType grad::tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

Value grad::scalar(OpBuilder &b, Location loc, Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute element = isa<FloatType>(elementType)
                          ? Attribute(b.getFloatAttr(elementType, value))
                          : Attribute(b.getIntegerAttr(elementType, int64_t(value)));
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, element));
}

Value grad::broadcastTo(OpBuilder &b, Location loc, Value v,
                        RankedTensorType type) {
  if (tensorType(v) == type)
    return v;
  return BroadcastOp::create(b, loc, type, v);
}

Value grad::zeros(OpBuilder &b, Location loc, RankedTensorType type) {
  return broadcastTo(b, loc, scalar(b, loc, type.getElementType(), 0.0), type);
}

Value grad::sumToShape(OpBuilder &b, Location loc, Value v,
                       ArrayRef<int64_t> shape) {
  ArrayRef<int64_t> from = tensorType(v).getShape();
  if (from == shape)
    return v;
  int64_t lead = int64_t(from.size()) - int64_t(shape.size());
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < int64_t(from.size()); ++d)
    if (d < lead || (shape[d - lead] == 1 && from[d] != 1))
      dims.push_back(d);
  Value sum = v;
  if (!dims.empty())
    sum = ReduceSumOp::create(b, loc, v, dims, /*keep_dims=*/false);
  auto target = RankedTensorType::get(shape, tensorType(v).getElementType());
  if (tensorType(sum) == target)
    return sum;
  return ReshapeOp::create(b, loc, target, sum);
}

Value grad::toFloat(OpBuilder &b, Location loc, Value condition,
                    Type elementType) {
  auto type = RankedTensorType::get(tensorType(condition).getShape(), elementType);
  return ConvertOp::create(b, loc, type, condition);
}

Value grad::keepDims(OpBuilder &b, Location loc, Value v,
                     ArrayRef<int64_t> inputShape, ArrayRef<int64_t> dims) {
  SmallVector<int64_t> shape(inputShape);
  for (int64_t d : dims)
    shape[d] = 1;
  auto type = RankedTensorType::get(shape, tensorType(v).getElementType());
  if (tensorType(v) == type)
    return v;
  return ReshapeOp::create(b, loc, type, v);
}
