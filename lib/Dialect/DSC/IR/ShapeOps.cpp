//===- ShapeOps.cpp - reshape, transpose, permute, slice, concat, broadcast ===//

#include "InferError.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Support/TensorSize.h"

#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::dsc;

LogicalResult ReshapeOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getType());
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "changes the element type from "
                         << in.getElementType() << " to "
                         << out.getElementType() << "; use dsc.convert";
  // Sizes are bounded by the BoundedTensorSize trait, checked before this.
  std::optional<int64_t> inCount = checkedNumElements(in.getShape());
  std::optional<int64_t> outCount = checkedNumElements(out.getShape());
  if (inCount != outCount)
    return emitOpError() << "changes the element count from "
                         << inCount.value_or(-1) << " to "
                         << outCount.value_or(-1);
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  InferError fail(location, getOperationName());
  auto input = fail.staticTensor(adaptor.getInput().getType(), "input");
  if (failed(input))
    return failure();
  int64_t rank = input->getRank();
  int64_t dim0 = adaptor.getDim0(), dim1 = adaptor.getDim1();
  if (failed(fail.checkDim(dim0, rank, "dim0")) ||
      failed(fail.checkDim(dim1, rank, "dim1")))
    return failure();
  SmallVector<int64_t> shape(input->getShape());
  std::swap(shape[dim0], shape[dim1]);
  inferred.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

LogicalResult PermuteOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  InferError fail(location, getOperationName());
  auto input = fail.staticTensor(adaptor.getInput().getType(), "input");
  if (failed(input))
    return failure();
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  int64_t rank = input->getRank();
  if (static_cast<int64_t>(perm.size()) != rank)
    return fail("permutation has ", perm.size(),
                " entries but the input has rank ", rank);
  llvm::SmallBitVector seen(rank);
  SmallVector<int64_t> shape;
  for (int64_t dim : perm) {
    if (failed(fail.checkDim(dim, rank, "permutation entry")))
      return failure();
    if (seen.test(dim))
      return fail("permutation repeats dimension ", dim);
    seen.set(dim);
    shape.push_back(input->getDimSize(dim));
  }
  inferred.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> location,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  InferError fail(location, getOperationName());
  auto input = fail.staticTensor(adaptor.getInput().getType(), "input");
  if (failed(input))
    return failure();
  int64_t dim = adaptor.getDim();
  if (failed(fail.checkDim(dim, input->getRank(), "dim")))
    return failure();
  int64_t size = input->getDimSize(dim);
  int64_t start = adaptor.getStart(), end = adaptor.getEnd();
  int64_t step = adaptor.getStep();
  if (start < 0 || start > end || end > size)
    return fail("bounds [", start, ", ", end,
                ") must satisfy 0 <= start <= end <= ", size);
  if (step < 1)
    return fail("step must be >= 1, got ", step);
  SmallVector<int64_t> shape(input->getShape());
  shape[dim] = llvm::divideCeil(end - start, step);
  inferred.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  InferError fail(location, getOperationName());
  if (adaptor.getInputs().empty())
    return fail("needs at least one input");
  auto first = fail.staticTensor(adaptor.getInputs().front().getType(),
                                 "input #0");
  if (failed(first))
    return failure();
  int64_t dim = adaptor.getDim();
  if (failed(fail.checkDim(dim, first->getRank(), "dim")))
    return failure();
  SmallVector<int64_t> shape(first->getShape());
  for (auto [i, value] : llvm::enumerate(adaptor.getInputs().drop_front())) {
    auto next = fail.staticTensor(value.getType(), "input");
    if (failed(next))
      return failure();
    if (next->getRank() != first->getRank())
      return fail("input #", i + 1, " has rank ", next->getRank(),
                  ", input #0 has rank ", first->getRank());
    for (int64_t d = 0; d < first->getRank(); ++d) {
      if (d == dim)
        continue;
      if (next->getDimSize(d) != shape[d])
        return fail("input #", i + 1, " has size ", next->getDimSize(d),
                    " in dimension ", d, ", input #0 has ", shape[d],
                    " (only dimension ", dim, " may differ)");
    }
    if (llvm::AddOverflow(shape[dim], next->getDimSize(dim), shape[dim]))
      return fail("concatenated size overflows int64");
  }
  inferred.push_back(RankedTensorType::get(shape, first->getElementType()));
  return success();
}

LogicalResult BroadcastOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getType());
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "changes the element type from "
                         << in.getElementType() << " to "
                         << out.getElementType();
  if (in.getRank() > out.getRank())
    return emitOpError() << "cannot broadcast rank " << in.getRank()
                         << " to the smaller rank " << out.getRank();
  int64_t offset = out.getRank() - in.getRank();
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t from = in.getDimSize(d), to = out.getDimSize(d + offset);
    if (from != to && from != 1)
      return emitOpError() << "input dimension " << d << " of size " << from
                           << " cannot broadcast to size " << to
                           << " (must be equal or 1)";
  }
  return success();
}
