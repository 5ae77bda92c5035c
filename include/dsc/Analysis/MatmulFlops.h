//===- MatmulFlops.h - the FLOPs of a graph's matrix products ---*- C++ -*-===//
//
// What a step's compute costs, counted the way FLOPs are usually counted
// for transformers: two per multiply-add of every matrix product (linear
// maps, batched matmuls, attention's two products and its gradient's
// four); elementwise work, normalizations and softmax are left out (a few
// per cent of a transformer's FLOPs). The data-efficiency variants are
// chosen and reported with it.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_ANALYSIS_MATMULFLOPS_H
#define DSC_ANALYSIS_MATMULFLOPS_H

namespace mlir {
class Operation;
} // namespace mlir

namespace mlir::dsc {

/// The matrix-product FLOPs of every op nested in `root` (ops inside
/// lowered kernels included), as a double: large models overflow nothing.
double matmulFlops(Operation *root);

} // namespace mlir::dsc

#endif // DSC_ANALYSIS_MATMULFLOPS_H
