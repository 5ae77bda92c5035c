//===- LibraryCopy.cpp - buffer copies as library calls --------------------===//

#include "LibraryCalls.h"

#include "dsc/Support/TensorSize.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::cpp;

LogicalResult mlir::dsc::cpp::emitCopyCall(LibraryCall &call) {
  auto yield = cast<dscrt::YieldOp>(call.kernel.getBody().front().getTerminator());
  for (auto [i, v] : llvm::enumerate(yield.getValues())) {
    auto type = cast<ShapedType>(v.getType());
    int64_t bytes = type.getNumElements() *
                    bytesPerElement(type.getElementTypeBitWidth());
    call.text += "  dsc_kernels::copy(stream, " + call.in(v) + ", " + call.out(i) +
                 ", " + std::to_string(bytes) + ");\n";
  }
  return success();
}
