//===- LibraryRow.cpp - softmax, log-softmax and layer norm as library calls ===//
//
// One call per op into the row kernels (dsc/kernels/Row.h): a softmax's
// dimension splits its tensor into (outer, n, inner), the reduced dimension
// in the middle; a layer norm's normalized trailing dims are the rows.
//
//===----------------------------------------------------------------------===//

#include "LibraryCalls.h"

#include "KernelEmitter.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::cpp;

static LogicalResult emitSoftmax(Operation *op, int64_t dim, StringRef function,
                                 LibraryCall &call) {
  ArrayRef<int64_t> shape = cast<ShapedType>(op->getResult(0).getType()).getShape();
  int64_t outer = ShapedType::getNumElements(shape.take_front(dim));
  int64_t inner = ShapedType::getNumElements(shape.drop_front(dim + 1));
  call.text += llvm::formatv("  dsc_kernels::{0}(stream, {1}, {2}, {3}, {4}, {5});\n",
                             function, call.in(op->getOperand(0)), call.out(0), outer,
                             shape[dim], inner);
  return success();
}

static LogicalResult emitLayerNorm(LayerNormOp ln, LibraryCall &call) {
  auto type = cast<ShapedType>(ln.getType());
  int64_t n = ShapedType::getNumElements(type.getShape().take_back(ln.getNormalizedRank()));
  int64_t rows = n ? type.getNumElements() / n : 0;
  std::string none =
      "DSC_LIB(static_cast<const " + cType(type.getElementType()) + " *>(nullptr))";
  // The statistics are for a backward pass that takes them; this one
  // recomputes its own (no buffer for them).
  call.text += llvm::formatv(
      "  dsc_kernels::layerNormForward(stream, {0}, {1}, {2}, {3}, static_cast<float *>(nullptr), "
      "static_cast<float *>(nullptr), {4}, {5}, {6});\n",
      call.in(ln.getInput()), ln.getWeight() ? call.in(ln.getWeight()) : none,
      ln.getBias() ? call.in(ln.getBias()) : none, call.out(0), rows, n,
      literal(ln.getEpsilon().convertToDouble(), Float64Type::get(ln.getContext())));
  return success();
}

LogicalResult mlir::dsc::cpp::emitRowCall(LibraryCall &call) {
  Operation *op = call.op();
  if (auto sm = dyn_cast<SoftmaxOp>(op))
    return emitSoftmax(op, int64_t(sm.getDim()), "softmaxForward", call);
  if (auto lsm = dyn_cast<LogSoftmaxOp>(op))
    return emitSoftmax(op, int64_t(lsm.getDim()), "logSoftmaxForward", call);
  return emitLayerNorm(cast<LayerNormOp>(op), call);
}
