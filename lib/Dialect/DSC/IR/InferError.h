//===- InferError.h - diagnostics from shape inference ----------*- C++ -*-===//
//
// Shape inference runs both while parsing (before any verifier, so operands
// may have any type) and inside verification, sometimes without a location.
// InferError formats "'dsc.op' op <message>" at the location when there is
// one and always returns failure.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_DIALECT_DSC_IR_INFERERROR_H
#define DSC_LIB_DIALECT_DSC_IR_INFERERROR_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

#include <optional>

namespace mlir::dsc {

class InferError {
public:
  InferError(std::optional<Location> loc, StringRef opName)
      : loc(loc), opName(opName) {}

  template <typename... Args>
  LogicalResult operator()(Args &&...args) const {
    if (!loc)
      return failure();
    InFlightDiagnostic diag = emitError(*loc) << "'" << opName << "' op ";
    (diag << ... << std::forward<Args>(args));
    return diag;
  }

  /// `type` as a static ranked tensor, or a diagnostic naming `what`.
  FailureOr<RankedTensorType> staticTensor(Type type, StringRef what) const {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (tensor && tensor.hasStaticShape())
      return tensor;
    return (*this)(what, " must be a statically shaped tensor, got ", type);
  }

  /// Fails unless 0 <= dim < rank.
  LogicalResult checkDim(int64_t dim, int64_t rank, StringRef what) const {
    if (dim >= 0 && dim < rank)
      return success();
    return (*this)(what, " ", dim, " is out of range for rank ", rank,
                   " (expected 0 <= ", what, " < ", rank, ")");
  }

private:
  std::optional<Location> loc;
  StringRef opName;
};

} // namespace mlir::dsc

#endif // DSC_LIB_DIALECT_DSC_IR_INFERERROR_H
