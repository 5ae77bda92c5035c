//===- LibraryKernels.h - which library kernel computes a body --*- C++ -*-===//
//
// dsc's kernel library (runtime/include/dsc/kernels/) holds tuned kernels
// for the ops that are not elementwise. The lowering records, on each
// dscrt.kernel, the library kernel that computes its body (the `library`
// attribute); this file is the one place that decides which body each
// library kernel accepts, so the selection pass and the verifier agree.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_DIALECT_DSCRT_IR_LIBRARYKERNELS_H
#define DSC_DIALECT_DSCRT_IR_LIBRARYKERNELS_H

#include "mlir/IR/Block.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace mlir::dscrt {

/// The name of the library kernel that computes `body` (a dscrt.kernel's
/// body), or nullopt when only generated loops can: the body holds an op
/// no library kernel implements, or an element type the library is not
/// instantiated for (f32, bf16, f16 and i64 everywhere; every type for the
/// kernels that only move elements; f64 and i32 too for reductions,
/// routing, embedding and the causal mask; f64 too for the row kernels
/// and the classifier).
std::optional<llvm::StringRef> matchLibraryKernel(Block &body);

/// The batch stride, in elements, of a dsc.matmul operand of shape
/// `operand` (its last two dims are the matrix) in a product whose result
/// has batch dims `batch`: the matrix size when the operand has the whole
/// batch, 0 when it has none (it is broadcast), nullopt when it broadcasts
/// some batch dims only (one stride cannot place its items).
std::optional<int64_t> matmulBatchStride(llvm::ArrayRef<int64_t> operand,
                                         llvm::ArrayRef<int64_t> batch);

/// Every library kernel name, in the order docs/kernels.md lists them.
llvm::ArrayRef<llvm::StringLiteral> libraryKernelNames();

} // namespace mlir::dscrt

#endif // DSC_DIALECT_DSCRT_IR_LIBRARYKERNELS_H
