//===- KernelEmitter.h - C++/CUDA text of one dscrt.kernel ------*- C++ -*-===//
//
// A dscrt.kernel becomes a host function `kernelN(...)` that launches one or
// more loop functions. Loop bodies are written once and compiled for either
// target through the macros of the runtime's header for generated code
// (dsc/runtime/GeneratedCode.h, .cuh): DSC_GLOBAL/DSC_FOR are
// an OpenMP loop on the CPU and a grid-stride loop in a __global__ function
// on CUDA; DSC_LAUNCH calls or launches it; DSC_GEMM is the runtime's GEMM
// for the target (OpenBLAS or cuBLASLt) and the element type (f32, or bf16
// and f16 computed in fp32). The host function's first parameter
// is the stream the kernel runs on (`dsc_stream_t`: a cudaStream_t on CUDA,
// where launches and GEMMs go on it; unused on the CPU, where the whole call
// is a task of the stream).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_TARGET_CPP_KERNELEMITTER_H
#define DSC_LIB_TARGET_CPP_KERNELEMITTER_H

#include "dsc/Dialect/DSCRT/IR/DSCRTDialect.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::dsc::cpp {

enum class Target { Cpu, Cuda };

/// The C type of an element type, or "" when the targets lack it.
std::string cType(Type elementType);

/// The C type kernels compute an element type in: float for bf16 and f16
/// (stored as 2-byte words, see Kernels.cpp), the storage type otherwise.
std::string computeType(Type elementType);

/// A C/CUDA literal of `value` in `t`'s compute type (infinities and NaN
/// through GeneratedCode.h's DSC_INF / DSC_NAN).
std::string literal(double value, Type t);

/// Row-major strides of `shape`.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape);

/// The parameters of the host function of `kernel`, after its stream:
/// `const T *__restrict inI` per input, `T *__restrict outI` per output;
/// fails with a diagnostic on an element type the targets lack.
FailureOr<std::string> kernelParameters(dscrt::KernelOp kernel);

/// Writes the loop functions and the host function `name` of `kernel`; fails
/// with a diagnostic on the op it cannot emit.
LogicalResult emitKernel(dscrt::KernelOp kernel, StringRef name,
                         llvm::raw_ostream &os);

/// Whether the code of `kernel` keeps state per call site (a function-local
/// static: the optimizer family's table of tensors and scratch), so that
/// two launches must not share its function even when their code is equal.
bool keepsCallSiteState(dscrt::KernelOp kernel);

} // namespace mlir::dsc::cpp

#endif // DSC_LIB_TARGET_CPP_KERNELEMITTER_H
