//===- DecomposeForLibrary.h - ops the library computes after a rewrite ---===//
//
// Some forms of non-elementwise ops have no kernel in the kernel library
// (runtime/include/dsc/kernels/) but become library kernels after a cheap
// rewrite in the graph: a conversion, a permute or a broadcast in front.
// The lowering applies these rewrites before it forms kernels, so that the
// emitter never has to generate a loop for a non-elementwise op.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_CONVERSION_DECOMPOSEFORLIBRARY_H
#define DSC_LIB_CONVERSION_DECOMPOSEFORLIBRARY_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::dsc {

/// Rewrites, in `graph`:
/// - i32 index operands (dsc.embedding, dsc.gather, dsc.scatter_add,
///   dsc.one_hot, dsc.cross_entropy's targets) into i64 ones, by a
///   dsc.convert: the library's indices are int64;
/// - a dsc.scatter_add of i1 data into the sum on i64 data and a
///   conversion back (`!= 0`: a sum of booleans is their or);
/// - a dsc.reduce_* over dims that are not adjacent into a dsc.permute that
///   moves them last and the reduction over the trailing dims (a dsc.reshape
///   restores keep_dims' size-1 dims);
/// - a batched dsc.matmul whose operand broadcasts some batch dims only
///   into a dsc.broadcast of that operand to the whole batch and one
///   strided-batched GEMM.
void decomposeForLibrary(func::FuncOp graph);

} // namespace mlir::dsc

#endif // DSC_LIB_CONVERSION_DECOMPOSEFORLIBRARY_H
