//===- KernelEmitter.h - C++ text of one dscrt.kernel -----------*- C++ -*-===//

#ifndef DSC_LIB_TARGET_CPP_KERNELEMITTER_H
#define DSC_LIB_TARGET_CPP_KERNELEMITTER_H

#include "dsc/Dialect/DSCRT/IR/DSCRTDialect.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::dsc::cpp {

/// The C type of an element type, or "" when the CPU target lacks it.
std::string cType(Type elementType);

/// Row-major strides of `shape`.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape);

/// Writes `static void NAME(params) { body }` for `kernel` to `os`; fails
/// with a diagnostic on the op it cannot emit.
LogicalResult emitKernel(dscrt::KernelOp kernel, StringRef name,
                         llvm::raw_ostream &os);

} // namespace mlir::dsc::cpp

#endif // DSC_LIB_TARGET_CPP_KERNELEMITTER_H
