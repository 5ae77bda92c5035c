//===- HostKernels.h - the host kernels of a CUDA artifact ------*- C++ -*-===//
//
// A CUDA artifact with ZeRO-Offload has kernels that run on the host CPU
// (the optimizer's update on host states): they are written into a unit of
// their own, host.cpp, compiled by the host compiler against
// GeneratedCode.h, and enqueued by the CUDA step as host tasks
// (HostKernels.cpp says why).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_TARGET_CPP_HOSTKERNELS_H
#define DSC_LIB_TARGET_CPP_HOSTKERNELS_H

#include "KernelEmitter.h"

#include <utility>

namespace mlir::dsc::cpp {

/// Whether `kernel` runs on the host: it writes host memory.
bool isHostKernel(dscrt::KernelOp kernel);

/// The arguments of a call of `kernel`'s host function from an array of
/// untyped buffers, `array` (inputs, then outputs): the CPU's empty queue,
/// then each buffer cast to its type. The CPU step's tasks and the host
/// unit's entries call kernels this way.
SmallVector<std::string> kernelArgumentsFrom(dscrt::KernelOp kernel, StringRef array);

/// `kernelN_host_part`, the host unit's entry of kernel `kernelName`.
std::string hostEntryName(StringRef kernelName);

/// `void kernelN_host_part(void *const *buffers)` (hidden): the entry takes
/// the kernel's inputs, then its outputs, as untyped pointers.
std::string hostEntryDeclaration(StringRef kernelName);

/// The host unit: GeneratedCode.h, the kernels (named), and their entries.
LogicalResult emitHostUnit(ArrayRef<std::pair<dscrt::KernelOp, std::string>> kernels,
                           llvm::raw_ostream &os);

} // namespace mlir::dsc::cpp

#endif // DSC_LIB_TARGET_CPP_HOSTKERNELS_H
