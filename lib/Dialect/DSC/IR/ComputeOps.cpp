//===- ComputeOps.cpp - linear algebra, elementwise, norms, losses ---------===//

#include "InferError.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace mlir::dsc;

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, "x");
  os << "]";
  return s;
}

//===----------------------------------------------------------------------===//
// Broadcasting elementwise ops
//===----------------------------------------------------------------------===//

LogicalResult mlir::dsc::inferBroadcastResult(std::optional<Location> loc,
                                              ArrayRef<Type> operandTypes,
                                              Type elementType,
                                              SmallVectorImpl<Type> &inferred) {
  // The op name is not known here; the location identifies the op.
  auto fail = [&](auto &&...args) -> LogicalResult {
    return emitOptionalError(loc, args...);
  };
  SmallVector<int64_t> shape;
  Type firstElement;
  for (auto [i, type] : llvm::enumerate(operandTypes)) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape())
      return fail("operand #", i, " must be a statically shaped tensor, got ",
                  type);
    if (!firstElement)
      firstElement = tensor.getElementType();
    SmallVector<int64_t> next;
    if (!::mlir::OpTrait::util::getBroadcastedShape(shape, tensor.getShape(), next))
      return fail("operand shapes ", shapeString(shape), " and ",
                  shapeString(tensor.getShape()),
                  " do not broadcast (dimensions must be equal or 1)");
    shape = std::move(next);
  }
  inferred.push_back(
      RankedTensorType::get(shape, elementType ? elementType : firstElement));
  return success();
}

LogicalResult CompareOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  Type lhs = adaptor.getLhs().getType(), rhs = adaptor.getRhs().getType();
  auto lhsTensor = dyn_cast<TensorType>(lhs), rhsTensor = dyn_cast<TensorType>(rhs);
  if (lhsTensor && rhsTensor &&
      lhsTensor.getElementType() != rhsTensor.getElementType())
    return InferError(location, getOperationName())(
        "compares different element types ", lhsTensor.getElementType(),
        " and ", rhsTensor.getElementType());
  return inferBroadcastResult(location, {lhs, rhs},
                              IntegerType::get(context, 1), inferred);
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  Type onTrue = adaptor.getOnTrue().getType();
  Type onFalse = adaptor.getOnFalse().getType();
  auto trueTensor = dyn_cast<TensorType>(onTrue);
  auto falseTensor = dyn_cast<TensorType>(onFalse);
  if (trueTensor && falseTensor &&
      trueTensor.getElementType() != falseTensor.getElementType())
    return InferError(location, getOperationName())(
        "chooses between different element types ",
        trueTensor.getElementType(), " and ", falseTensor.getElementType());
  Type element = trueTensor ? trueTensor.getElementType() : Type();
  return inferBroadcastResult(
      location, {adaptor.getCondition().getType(), onTrue, onFalse}, element,
      inferred);
}

LogicalResult ConvertOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getType());
  if (in.getShape() != out.getShape())
    return emitOpError() << "changes the shape from " << shapeString(in.getShape())
                         << " to " << shapeString(out.getShape())
                         << "; only the element type may change";
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  InferError fail(location, getOperationName());
  auto lhs = fail.staticTensor(adaptor.getLhs().getType(), "lhs");
  auto rhs = fail.staticTensor(adaptor.getRhs().getType(), "rhs");
  if (failed(lhs) || failed(rhs))
    return failure();
  if (lhs->getRank() < 2 || rhs->getRank() < 2)
    return fail("operands must have rank >= 2, got ", lhs->getRank(), " and ",
                rhs->getRank());
  if (lhs->getElementType() != rhs->getElementType())
    return fail("multiplies different element types ", lhs->getElementType(),
                " and ", rhs->getElementType());
  ArrayRef<int64_t> a = lhs->getShape(), b = rhs->getShape();
  int64_t m = a[a.size() - 2], k = a.back();
  if (adaptor.getTransposeLhs())
    std::swap(m, k);
  int64_t k2 = b[b.size() - 2], n = b.back();
  if (adaptor.getTransposeRhs())
    std::swap(k2, n);
  if (k != k2)
    return fail("contracting dimensions differ: lhs has ", k, ", rhs has ", k2);
  SmallVector<int64_t> batch;
  if (!::mlir::OpTrait::util::getBroadcastedShape(a.drop_back(2), b.drop_back(2),
                                          batch))
    return fail("batch dimensions ", shapeString(a.drop_back(2)), " and ",
                shapeString(b.drop_back(2)), " do not broadcast");
  batch.push_back(m);
  batch.push_back(n);
  inferred.push_back(RankedTensorType::get(batch, lhs->getElementType()));
  return success();
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  InferError fail(location, getOperationName());
  auto input = fail.staticTensor(adaptor.getInput().getType(), "input");
  auto weight = fail.staticTensor(adaptor.getWeight().getType(), "weight");
  if (failed(input) || failed(weight))
    return failure();
  if (input->getRank() < 1)
    return fail("input must have rank >= 1");
  if (weight->getRank() != 2)
    return fail("weight must be [out_features, in_features], got rank ",
                weight->getRank());
  Type element = input->getElementType();
  if (weight->getElementType() != element)
    return fail("weight element type ", weight->getElementType(),
                " differs from the input's ", element);
  int64_t inFeatures = weight->getDimSize(1), outFeatures = weight->getDimSize(0);
  if (input->getShape().back() != inFeatures)
    return fail("input has ", input->getShape().back(),
                " features but the weight expects ", inFeatures);
  if (Value bias = adaptor.getBias()) {
    auto biasType = fail.staticTensor(bias.getType(), "bias");
    if (failed(biasType))
      return failure();
    if (biasType->getShape() != ArrayRef<int64_t>{outFeatures} ||
        biasType->getElementType() != element)
      return fail("bias must be ",
                  RankedTensorType::get({outFeatures}, element), ", got ",
                  *biasType);
  }
  SmallVector<int64_t> shape(input->getShape());
  shape.back() = outFeatures;
  inferred.push_back(RankedTensorType::get(shape, element));
  return success();
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  InferError fail(location, getOperationName());
  auto table = fail.staticTensor(adaptor.getTable().getType(), "table");
  auto indices = fail.staticTensor(adaptor.getIndices().getType(), "indices");
  if (failed(table) || failed(indices))
    return failure();
  if (table->getRank() != 2)
    return fail("table must be [num_embeddings, embedding_dim], got rank ",
                table->getRank());
  if (std::optional<int64_t> pad = adaptor.getPaddingIdx()) {
    if (*pad < 0 || *pad >= table->getDimSize(0))
      return fail("padding_idx ", *pad, " is not a row of a table with ",
                  table->getDimSize(0), " rows");
  }
  SmallVector<int64_t> shape(indices->getShape());
  shape.push_back(table->getDimSize(1));
  inferred.push_back(RankedTensorType::get(shape, table->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization and attention
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  int64_t rank = input.getRank();
  int64_t normalizedRank = getNormalizedRank();
  if (normalizedRank < 1 || normalizedRank > rank)
    return emitOpError() << "normalized_rank " << normalizedRank
                         << " must be between 1 and the input rank " << rank;
  double eps = getEpsilon().convertToDouble();
  if (!std::isfinite(eps) || eps < 0)
    return emitOpError() << "epsilon must be finite and >= 0, got " << eps;
  ArrayRef<int64_t> normalized = input.getShape().take_back(normalizedRank);
  for (auto [name, value] : {std::pair<StringRef, Value>{"weight", getWeight()},
                             {"bias", getBias()}}) {
    if (!value)
      continue;
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getShape() != normalized ||
        type.getElementType() != input.getElementType())
      return emitOpError()
             << name << " must have the normalized shape "
             << RankedTensorType::get(normalized, input.getElementType())
             << ", got " << type;
  }
  return success();
}

template <typename SoftmaxLike>
static LogicalResult verifySoftmaxLike(SoftmaxLike op) {
  int64_t rank = cast<RankedTensorType>(op.getInput().getType()).getRank();
  int64_t dim = op.getDim(); // I64Attr getters return uint64_t
  if (dim < 0 || dim >= rank)
    return op.emitOpError() << "dim " << dim << " is out of range for rank "
                            << rank;
  return success();
}

LogicalResult SoftmaxOp::verify() { return verifySoftmaxLike(*this); }
LogicalResult LogSoftmaxOp::verify() { return verifySoftmaxLike(*this); }

LogicalResult CausalMaskOp::verify() {
  int64_t rank = cast<RankedTensorType>(getInput().getType()).getRank();
  if (rank < 2)
    return emitOpError() << "needs scores of rank >= 2 ([..., queries, "
                            "keys]), got rank "
                         << rank;
  if (std::optional<APFloat> fill = getFillValue();
      fill && fill->isNaN())
    return emitOpError() << "fill_value must not be NaN";
  return success();
}

LogicalResult StepKeyOp::verify() {
  // A negative offset would name samples before the call's first, which
  // belong to another call (or to no sample of the step). I64Attr's
  // accessor is unsigned: the attribute's value is read signed.
  int64_t offset = getSampleOffsetAttr().getInt();
  if (offset < 0)
    return emitOpError() << "sample_offset must be >= 0, got " << offset;
  return success();
}

LogicalResult DropoutOp::verify() {
  double p = getP().convertToDouble();
  if (!(p >= 0.0 && p < 1.0))
    return emitOpError() << "p must be in [0, 1), got " << p;
  int64_t samples = getSamples();
  int64_t numel = getInput().getType().getNumElements();
  if (samples < 1 || numel % samples != 0)
    return emitOpError() << "samples must be >= 1 and divide the input's "
                         << numel << " elements, got " << samples;
  // A part count without the part's index (or the reverse) would draw the
  // whole input's first part on every rank.
  int64_t parts = getParts();
  if (parts < 1)
    return emitOpError() << "parts must be >= 1, got " << parts;
  if ((parts > 1) != bool(getPart()))
    return emitOpError() << "takes the index of its part (`part %r of G`) "
                            "exactly when it is one of G > 1 parts";
  return success();
}

LogicalResult RandomLtdIndicesOp::verify() {
  ArrayRef<int64_t> shape = getResult().getType().getShape();
  int64_t length = getLength();
  if (shape.size() != 2)
    return emitOpError() << "result must be [samples, kept], got rank "
                         << shape.size();
  if (length < 1 || shape[1] < 1 || shape[1] > length)
    return emitOpError() << "kept length must lie in [1, length = " << length
                         << "], got " << shape[1];
  return success();
}

LogicalResult RandomUniformOp::verify() {
  double low = getLow().convertToDouble(), high = getHigh().convertToDouble();
  if (!std::isfinite(low) || !std::isfinite(high) || !(low < high))
    return emitOpError() << "needs finite low < high, got [" << low << ", "
                         << high << "]";
  int64_t samples = getSamples();
  int64_t numel = getResult().getType().getNumElements();
  if (samples < 1 || numel % samples != 0)
    return emitOpError() << "samples must be >= 1 and divide the result's "
                         << numel << " elements, got " << samples;
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  InferError fail(location, getOperationName());
  auto logits = fail.staticTensor(adaptor.getLogits().getType(), "logits");
  auto targets = fail.staticTensor(adaptor.getTargets().getType(), "targets");
  if (failed(logits) || failed(targets))
    return failure();
  if (logits->getRank() < 1)
    return fail("logits must have a class dimension (rank >= 1)");
  ArrayRef<int64_t> batch = logits->getShape().drop_back();
  if (targets->getShape() != batch)
    return fail("targets must have the logits' shape without the class "
                "dimension, ",
                shapeString(batch), ", got ", shapeString(targets->getShape()));
  Type element = logits->getElementType();
  // While parsing, absent default-valued attributes are still null here.
  LossReductionAttr reduction = adaptor.getReductionAttr();
  if (reduction && reduction.getValue() == LossReduction::none)
    inferred.push_back(RankedTensorType::get(batch, element));
  else
    inferred.push_back(RankedTensorType::get({}, element));
  return success();
}

LogicalResult CrossEntropyGradOp::verify() {
  auto logits = cast<RankedTensorType>(getLogits().getType());
  auto targets = cast<RankedTensorType>(getTargets().getType());
  auto scale = cast<RankedTensorType>(getScale().getType());
  if (logits.getRank() < 1)
    return emitOpError("logits must have a class dimension (rank >= 1)");
  ArrayRef<int64_t> batch = logits.getShape().drop_back();
  if (targets.getShape() != batch)
    return emitOpError() << "targets must have the logits' shape without the "
                            "class dimension, "
                         << shapeString(batch) << ", got "
                         << shapeString(targets.getShape());
  if (scale.getShape() != batch ||
      scale.getElementType() != logits.getElementType())
    return emitOpError() << "scale must be " << shapeString(batch)
                         << " of the logits' element type, got " << scale;
  return success();
}

Value CrossEntropyOp::buildCountedTargets(OpBuilder &b) {
  Location loc = getLoc();
  auto targets = cast<RankedTensorType>(getTargets().getType());
  Type elem = cast<RankedTensorType>(getType()).getElementType();
  auto ignore = ConstantOp::create(
      b, loc, DenseElementsAttr::get(
                  RankedTensorType::get({}, targets.getElementType()),
                  b.getIntegerAttr(targets.getElementType(),
                                   int64_t(getIgnoreIndex()))));
  auto counted = CompareOp::create(b, loc, ComparisonDirection::ne,
                                   getTargets(), ignore);
  Value count = ConvertOp::create(
      b, loc, RankedTensorType::get(targets.getShape(), elem), counted);
  if (targets.getRank() == 0)
    return count;
  SmallVector<int64_t> all;
  for (int64_t d = 0; d < targets.getRank(); ++d)
    all.push_back(d);
  return ReduceSumOp::create(b, loc, count, all, /*keep_dims=*/false);
}
