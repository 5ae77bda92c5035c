//===- TensorSize.h - overflow-checked tensor sizes -------------*- C++ -*-===//
//
// Element counts and byte sizes of tensors, computed without overflow.
// MLIR's ShapedType::getNumElements multiplies without checking; every size
// that reaches dsc from user input goes through these instead.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_SUPPORT_TENSORSIZE_H
#define DSC_SUPPORT_TENSORSIZE_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>

namespace mlir::dsc {

/// Product of `shape`, or nullopt when a dimension is negative (dynamic) or
/// the product overflows int64. The empty shape (a scalar) has 1 element.
std::optional<int64_t> checkedNumElements(llvm::ArrayRef<int64_t> shape);

/// Bytes one element occupies in memory: the bit width rounded up to whole
/// bytes (i1 takes a byte, as torch.bool does).
int64_t bytesPerElement(unsigned bitWidth);

/// checkedNumElements(shape) * bytesPerElement(bitWidth), or nullopt on
/// overflow.
std::optional<int64_t> checkedByteSize(llvm::ArrayRef<int64_t> shape,
                                       unsigned bitWidth);

} // namespace mlir::dsc

#endif // DSC_SUPPORT_TENSORSIZE_H
