//===- LibraryClassifier.cpp - cross-entropy as a library call ------------===//
//
// A per-token dsc.cross_entropy (reduction = none; the lowering expands sum
// and mean into it) is one call into the classifier (dsc/kernels/
// Classifier.h), and so is its gradient, dsc.cross_entropy_grad (the fused
// classifier without the loss). Targets outside the classes fail the step: the CPU kernel
// throws; the CUDA kernel records them where GeneratedCode.cuh's index check
// reads them (DSC_INDEX_FAULT adds that argument on CUDA).
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"
#include "LibraryCalls.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::cpp;

LogicalResult mlir::dsc::cpp::emitClassifierCall(LibraryCall &call) {
  if (auto grad = dyn_cast<CrossEntropyGradOp>(call.op())) {
    int64_t classes = cast<ShapedType>(grad.getLogits().getType()).getShape().back();
    int64_t rows = cast<ShapedType>(grad.getTargets().getType()).getNumElements();
    // No loss: the forward's dsc.cross_entropy computed it.
    std::string noLoss =
        "DSC_LIB(static_cast<" +
        cType(cast<ShapedType>(grad.getType()).getElementType()) + " *>(nullptr))";
    call.text += llvm::formatv(
        "  dsc_kernels::fusedClassifier(stream, {0}, {1}, {2}, {3}, {4}, 1, {5}, {6}, "
        "{7} DSC_INDEX_FAULT);\n",
        call.in(grad.getLogits()), call.in(grad.getTargets()), call.in(grad.getScale()),
        call.out(0), noLoss, rows, classes, int64_t(grad.getIgnoreIndex()));
    return success();
  }
  auto ce = cast<CrossEntropyOp>(call.op());
  int64_t classes = cast<ShapedType>(ce.getLogits().getType()).getShape().back();
  int64_t rows = cast<ShapedType>(ce.getTargets().getType()).getNumElements();
  call.text += llvm::formatv(
      "  dsc_kernels::crossEntropyForward(stream, {0}, {1}, {2}, {3}, {4}, {5} DSC_INDEX_FAULT);\n",
      call.in(ce.getLogits()), call.in(ce.getTargets()), call.out(0), rows, classes,
      int64_t(ce.getIgnoreIndex())); // I64Attr getters return uint64_t
  return success();
}
