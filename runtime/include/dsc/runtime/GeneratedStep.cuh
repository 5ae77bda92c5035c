//===- GeneratedStep.cuh - what a CUDA artifact's step unit needs -*- C++ -*-===//
//
// The step's translation unit of a split CUDA artifact (dsc-translate
// --dscrt-split-bytes) holds no kernel: it declares the kernels' entries,
// which the kernelsK units define, and calls them on the step's streams. It
// includes this header instead of GeneratedCode.cuh, which adds the kernel
// library and the loop macros on top of it: nvcc's front ends, its device
// compiler and ptxas would otherwise work through the whole library again
// for a unit that launches none of it (most of such a unit's build time).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_GENERATEDSTEP_CUH
#define DSC_RUNTIME_GENERATEDSTEP_CUH

#include <cuda_runtime.h>

// A unit of a split artifact uses only some of the helpers below: no
// "declared but never referenced" for them.
#pragma nv_diag_suppress 177

#include "dsc/runtime/Artifact.h"
#include "dsc/runtime/CudaStream.h"
#include "dsc/runtime/Stream.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define DSC_HD __host__ __device__

// 16-bit floats: CUDA's __nv_bfloat16 / __half, read as float and rounded
// to nearest even when written (CUDA's own conversions). Wrapped so that
// they convert to and from float only: CUDA's types also convert to every
// integer type and define 16-bit arithmetic operators, which makes the
// kernels' mixed float expressions ambiguous. Outside the anonymous
// namespace: nvcc warns about its unused functions.
struct dsc_bf16 {
  __nv_bfloat16 value;
  dsc_bf16() = default;
  DSC_HD dsc_bf16(float v) : value(__float2bfloat16(v)) {}
  DSC_HD operator float() const { return __bfloat162float(value); }
};
struct dsc_f16 {
  __half value;
  dsc_f16() = default;
  DSC_HD dsc_f16(float v) : value(__float2half(v)) {}
  DSC_HD operator float() const { return __half2float(value); }
};
static_assert(sizeof(dsc_bf16) == 2 && sizeof(dsc_f16) == 2, "2-byte elements");
struct dsc_index_fault_t {
  int state; // 0 none, 1 recorded
  long long index, size;
  char op[32];
};
// Static: each translation unit of a split artifact has its own record (a
// device variable is not shared between nvcc's whole-program units), and
// the step reads every one (dsc_raise_index_errors).
static __device__ dsc_index_fault_t dsc_index_fault;
// Constants of the step (dsc.constant) and emitted loops.
#define DSC_INF(T) static_cast<T>(INFINITY)
#define DSC_NAN(T) static_cast<T>(NAN)
#define DSC_LOWEST(T) std::numeric_limits<T>::lowest()

namespace {
using dsc::rt::ElementType;
using dsc_stream_t = cudaStream_t;
inline void dsc_check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}
// The CUDA stream behind a stream the runtime hands a CUDA artifact.
inline cudaStream_t dsc_handle(dsc::rt::Stream &stream) {
  if (std::strcmp(stream.backend(), "cuda") != 0)
    throw std::runtime_error("stream '" + stream.name() + "' is not a CUDA stream");
  return static_cast<dsc::rt::cuda::CudaStream &>(stream).handle();
}
// After every stream of the step is synchronized: fails the step when a
// kernel recorded an index outside its table.
inline void dsc_raise_index_error() {
  dsc_index_fault_t fault;
  dsc_check(cudaMemcpyFromSymbol(&fault, dsc_index_fault, sizeof fault),
            "reading the kernels' index check");
  if (fault.state == 0)
    return;
  const dsc_index_fault_t none = {};
  dsc_check(cudaMemcpyToSymbol(dsc_index_fault, &none, sizeof none),
            "clearing the kernels' index check");
  throw std::out_of_range(std::string(fault.op) + ": index " + std::to_string(fault.index) +
                          " is outside [0, " + std::to_string(fault.size) + ")");
}
template <typename T> const T *dsc_upload(const T *host, size_t bytes) {
  void *device = nullptr;
  dsc_check(cudaMalloc(&device, bytes), "cudaMalloc of a constant");
  dsc_check(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy of a constant");
  return static_cast<const T *>(device);
}
} // namespace

#endif // DSC_RUNTIME_GENERATEDSTEP_CUH
