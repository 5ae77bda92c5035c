//===- TensorSize.cpp - overflow-checked tensor sizes ---------------------===//

#include "dsc/Support/TensorSize.h"

#include "llvm/Support/MathExtras.h"

namespace mlir::dsc {

std::optional<int64_t> checkedNumElements(llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0)
      return std::nullopt;
    if (llvm::MulOverflow(count, dim, count))
      return std::nullopt;
  }
  return count;
}

int64_t bytesPerElement(unsigned bitWidth) {
  return bitWidth == 0 ? 0 : (static_cast<int64_t>(bitWidth) + 7) / 8;
}

std::optional<int64_t> checkedByteSize(llvm::ArrayRef<int64_t> shape,
                                       unsigned bitWidth) {
  std::optional<int64_t> count = checkedNumElements(shape);
  if (!count)
    return std::nullopt;
  int64_t bytes;
  if (llvm::MulOverflow(*count, bytesPerElement(bitWidth), bytes))
    return std::nullopt;
  return bytes;
}

} // namespace mlir::dsc
