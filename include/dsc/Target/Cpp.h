//===- Cpp.h - the dscrt -> C++ emitter -------------------------*- C++ -*-===//
//
// Prints a lowered module (`@step` in the dscrt dialect, arena planned) as one
// C++ translation unit implementing the runtime's artifact interface
// (runtime/include/dsc/runtime/Artifact.h): the state/input/output tables, one
// function per dscrt.kernel (static shapes, OpenMP loops; GEMMs call the
// runtime's OpenBLAS-backed gemm), and dsc_artifact_step calling them in order.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_TARGET_CPP_H
#define DSC_TARGET_CPP_H

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::dsc {

/// Emits `module` as C++ for the CPU target (OpenMP loops, OpenBLAS) or, with
/// `cuda`, as CUDA for nvcc (the same loops as __global__ grid-stride
/// kernels, cuBLASLt). Fails with a diagnostic on ops or element types the
/// targets do not support yet.
LogicalResult emitCpp(ModuleOp module, llvm::raw_ostream &os, bool cuda = false);

/// Registers `--dscrt-to-cpp` and `--dscrt-to-cuda` with translate tools.
void registerToCppTranslation();

} // namespace mlir::dsc

#endif // DSC_TARGET_CPP_H
