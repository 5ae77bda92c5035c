//===- IndexingOps.cpp - gather, scatter_add, top_k, cumsum, one_hot, reduce ===//

#include "InferError.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"

using namespace mlir;
using namespace mlir::dsc;

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  InferError fail(location, getOperationName());
  auto input = fail.staticTensor(adaptor.getInput().getType(), "input");
  auto index = fail.staticTensor(adaptor.getIndex().getType(), "index");
  if (failed(input) || failed(index))
    return failure();
  int64_t rank = input->getRank(), dim = adaptor.getDim();
  if (index->getRank() != rank)
    return fail("index has rank ", index->getRank(), ", the input has rank ",
                rank);
  if (failed(fail.checkDim(dim, rank, "dim")))
    return failure();
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim && index->getDimSize(d) > input->getDimSize(d))
      return fail("index size ", index->getDimSize(d), " in dimension ", d,
                  " exceeds the input's ", input->getDimSize(d));
  inferred.push_back(
      RankedTensorType::get(index->getShape(), input->getElementType()));
  return success();
}

LogicalResult ScatterAddOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto index = cast<RankedTensorType>(getIndex().getType());
  auto src = cast<RankedTensorType>(getSrc().getType());
  int64_t rank = input.getRank(), dim = getDim();
  if (index.getRank() != rank || src.getRank() != rank)
    return emitOpError() << "input, index and src must have one rank, got "
                         << rank << ", " << index.getRank() << " and "
                         << src.getRank();
  if (dim < 0 || dim >= rank)
    return emitOpError() << "dim " << dim << " is out of range for rank "
                         << rank;
  if (src.getElementType() != input.getElementType())
    return emitOpError() << "adds " << src.getElementType()
                         << " values into a " << input.getElementType()
                         << " tensor";
  for (int64_t d = 0; d < rank; ++d) {
    if (index.getDimSize(d) > src.getDimSize(d))
      return emitOpError() << "index size " << index.getDimSize(d)
                           << " in dimension " << d << " exceeds src's "
                           << src.getDimSize(d);
    if (d != dim && index.getDimSize(d) > input.getDimSize(d))
      return emitOpError() << "index size " << index.getDimSize(d)
                           << " in dimension " << d << " exceeds the input's "
                           << input.getDimSize(d);
  }
  return success();
}

LogicalResult TopKOp::inferReturnTypes(MLIRContext *context,
                                       std::optional<Location> location,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  InferError fail(location, getOperationName());
  auto input = fail.staticTensor(adaptor.getInput().getType(), "input");
  if (failed(input))
    return failure();
  int64_t dim = adaptor.getDim(), k = adaptor.getK();
  if (failed(fail.checkDim(dim, input->getRank(), "dim")))
    return failure();
  int64_t size = input->getDimSize(dim);
  if (k < 1 || k > size)
    return fail("k ", k, " must be between 1 and the size ", size,
                " of dimension ", dim);
  SmallVector<int64_t> shape(input->getShape());
  shape[dim] = k;
  inferred.push_back(RankedTensorType::get(shape, input->getElementType()));
  inferred.push_back(RankedTensorType::get(shape, IntegerType::get(context, 64)));
  return success();
}

LogicalResult CumsumOp::verify() {
  int64_t rank = cast<RankedTensorType>(getInput().getType()).getRank();
  int64_t dim = getDim(); // I64Attr getters return uint64_t
  if (dim < 0 || dim >= rank)
    return emitOpError() << "dim " << dim << " is out of range for rank "
                         << rank;
  return success();
}

LogicalResult OneHotOp::verify() {
  auto indices = cast<RankedTensorType>(getIndices().getType());
  auto result = cast<RankedTensorType>(getType());
  if (result.getRank() != indices.getRank() + 1 ||
      result.getShape().drop_back() != indices.getShape())
    return emitOpError() << "result shape must be the indices' shape plus a "
                            "class dimension, got "
                         << result << " for indices " << indices;
  if (getNumClasses() < 1)
    return emitOpError() << "needs at least one class";
  return success();
}

LogicalResult mlir::dsc::inferReductionResult(std::optional<Location> loc,
                                              Type inputType,
                                              ArrayRef<int64_t> dims,
                                              bool keepDims,
                                              SmallVectorImpl<Type> &inferred) {
  auto fail = [&](auto &&...args) -> LogicalResult {
    return emitOptionalError(loc, args...);
  };
  auto input = dyn_cast<RankedTensorType>(inputType);
  if (!input || !input.hasStaticShape())
    return fail("input must be a statically shaped tensor, got ", inputType);
  if (dims.empty())
    return fail("dims must not be empty (list every dimension to reduce "
                "them all)");
  int64_t rank = input.getRank(), previous = -1;
  for (int64_t d : dims) {
    if (d < 0 || d >= rank)
      return fail("reduced dimension ", d, " is out of range for rank ", rank);
    if (d <= previous)
      return fail("dims must be strictly increasing");
    previous = d;
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!llvm::is_contained(dims, d))
      shape.push_back(input.getDimSize(d));
    else if (keepDims)
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}
