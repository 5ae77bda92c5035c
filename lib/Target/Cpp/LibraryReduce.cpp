//===- LibraryReduce.cpp - dsc.reduce_sum/mean/max as library calls -------===//
//
// A reduction over adjacent dimensions is one call on the (outer, n, inner)
// view of its input (dsc/kernels/Reduce.h): outer the product of the
// dimensions before the reduced ones, n of the reduced ones, inner of those
// after. The selection (dscrt::matchLibraryKernel) admits adjacent reduced
// dimensions only; keep_dims changes no byte of the result.
//
//===----------------------------------------------------------------------===//

#include "LibraryCalls.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::cpp;

LogicalResult mlir::dsc::cpp::emitReduceCall(LibraryCall &call) {
  Operation *op = call.op();
  StringRef function = "reduceMax";
  ArrayRef<int64_t> dims;
  if (auto r = dyn_cast<ReduceSumOp>(op))
    function = "reduceSum", dims = r.getDims();
  else if (auto r = dyn_cast<ReduceMeanOp>(op))
    function = "reduceMean", dims = r.getDims();
  else
    dims = cast<ReduceMaxOp>(op).getDims();
  Value input = op->getOperand(0);
  ArrayRef<int64_t> shape = cast<ShapedType>(input.getType()).getShape();
  int64_t first = dims.front(), last = dims.back();
  call.text += llvm::formatv(
      "  dsc_kernels::{0}(stream, {1}, {2}, {3}, {4}, {5});\n", function, call.in(input),
      call.out(0), ShapedType::getNumElements(shape.take_front(first)),
      ShapedType::getNumElements(shape.slice(first, last - first + 1)),
      ShapedType::getNumElements(shape.drop_front(last + 1)));
  return success();
}
