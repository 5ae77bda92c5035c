//===- Cpp.h - the dscrt -> C++ emitter -------------------------*- C++ -*-===//
//
// Prints a lowered module (`@step` in the dscrt dialect, arena planned) as one
// C++ translation unit (or several, see emitCpp) implementing the runtime's artifact interface
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
///
/// With `partBytes` > 0 the artifact is several translation units, so that
/// the host compiler builds them in parallel: `step.cpp` (the tables, the
/// constants and dsc_artifact_step) and `kernels1.cpp`, `kernels2.cpp`, ...
/// (consecutive kernels, about `partBytes` of text each), written one after
/// the other, each after a `//--- NAME` line (LLVM split-file's format;
/// `.cu` for CUDA). Every unit has the preamble; a kernel's entry
/// `kernelN_part` has hidden visibility.
///
/// With `shareKernels`, launches whose kernels are the same code (every
/// layer's) call one function; without, each launch has its own (for
/// comparing code size and compile time).
LogicalResult emitCpp(ModuleOp module, llvm::raw_ostream &os, bool cuda = false,
                      int64_t partBytes = 0, bool shareKernels = true);

/// The unit (0, 1, ...) of each of consecutive kernels whose texts have
/// `kernelBytes`, split into units of about `partBytes` each: a kernel goes
/// to the unit its text's midpoint falls in; there are as many units as the
/// total needs (at least one, at most one per kernel), none empty, in order.
SmallVector<int64_t> splitIntoUnits(ArrayRef<int64_t> kernelBytes, int64_t partBytes);

/// Registers `--dscrt-to-cpp` and `--dscrt-to-cuda` with translate tools.
void registerToCppTranslation();

} // namespace mlir::dsc

#endif // DSC_TARGET_CPP_H
