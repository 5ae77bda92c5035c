//===- GeneratedCode.cuh - what generated CUDA code is written against -*- C++ -*-===//
//
// An artifact's CUDA (dsc-translate --dscrt-to-cuda) includes this header
// first: the CUDA forms of GeneratedCode.h's macros and helpers (emitted
// loops as grid-stride loops in __global__ functions, library calls into
// dsc::kernels::cuda, the 16-bit types, the device-side index check).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_GENERATEDCODE_CUH
#define DSC_RUNTIME_GENERATEDCODE_CUH

#include "dsc/kernels/cuda/Kernels.cuh"
#include "dsc/runtime/Artifact.h"
#include "dsc/runtime/CpuGemm.h"
#include "dsc/runtime/Stream.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

// A unit of a split artifact uses only some of the helpers below: no
// "declared but never referenced" for them.
#pragma nv_diag_suppress 177

#define DSC_GLOBAL static __global__
#define DSC_FOR(i, n) for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)
#define DSC_SERIAL_FOR(i, n) for (int64_t i = 0; i < (n); ++i)
#define DSC_LAUNCH(f, n, ...) f<<<dsc_blocks(n), 256, 0, stream>>>(__VA_ARGS__)
#define DSC_LAUNCH_SERIAL(f, ...) f<<<1, 1, 0, stream>>>(__VA_ARGS__)
#define DSC_GEMM(s, a, b, c, alpha, beta) dsc_gemm(s, a, b, c, alpha, beta, stream)
#define DSC_INF(T) static_cast<T>(INFINITY)
#define DSC_NAN(T) static_cast<T>(NAN)
#define DSC_LOWEST(T) std::numeric_limits<T>::lowest()
// An index check records the first bad index in device memory and skips
// the element; the host reads the record once the step's streams are
// synchronized (dsc_raise_index_error) and fails the step.
#define DSC_INDEX_ERROR(op, index, size) { dsc_index_error(op, index, size); continue; }
#define DSC_HD __host__ __device__

// The runtime's cuBLASLt GEMM and CUDA streams, resolved when dsc-run loads
// the artifact.
#include "dsc/runtime/CudaGemm.h"
#include "dsc/runtime/CudaStream.h"

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
inline __device__ void dsc_index_error(const char *op, int64_t index, int64_t size) {
  if (atomicCAS(&dsc_index_fault.state, 0, 1) != 0)
    return;
  dsc_index_fault.index = index;
  dsc_index_fault.size = size;
  int k = 0;
  for (; k < 31 && op[k]; ++k)
    dsc_index_fault.op[k] = op[k];
  dsc_index_fault.op[k] = 0;
  __threadfence();
}
inline void dsc_gemm(const dsc::rt::cuda::GemmShape &s, const float *a, const float *b,
                     float *c, float alpha, float beta, cudaStream_t stream) {
  dsc::rt::cuda::gemmF32(s, a, b, c, alpha, beta, stream);
}
inline void dsc_gemm(const dsc::rt::cuda::GemmShape &s, const dsc_bf16 *a, const dsc_bf16 *b,
                     dsc_bf16 *c, float alpha, float beta, cudaStream_t stream) {
  dsc::rt::cuda::gemmBF16(s, reinterpret_cast<const uint16_t *>(a),
                          reinterpret_cast<const uint16_t *>(b),
                          reinterpret_cast<uint16_t *>(c), alpha, beta, stream);
}
inline void dsc_gemm(const dsc::rt::cuda::GemmShape &s, const dsc_f16 *a, const dsc_f16 *b,
                     dsc_f16 *c, float alpha, float beta, cudaStream_t stream) {
  dsc::rt::cuda::gemmF16(s, reinterpret_cast<const uint16_t *>(a),
                         reinterpret_cast<const uint16_t *>(b),
                         reinterpret_cast<uint16_t *>(c), alpha, beta, stream);
}

namespace {
using dsc::rt::ElementType;
using dsc_stream_t = cudaStream_t;
namespace dsc_kernels = dsc::kernels::cuda;
// Library kernels take CUDA's own 16-bit types; dsc_bf16 and dsc_f16 are
// the same 2-byte words.
template <typename T> T *dsc_lib(T *p) { return p; }
inline __nv_bfloat16 *dsc_lib(dsc_bf16 *p) { return reinterpret_cast<__nv_bfloat16 *>(p); }
inline const __nv_bfloat16 *dsc_lib(const dsc_bf16 *p) {
  return reinterpret_cast<const __nv_bfloat16 *>(p);
}
inline __half *dsc_lib(dsc_f16 *p) { return reinterpret_cast<__half *>(p); }
inline const __half *dsc_lib(const dsc_f16 *p) { return reinterpret_cast<const __half *>(p); }
#define DSC_LIB(p) dsc_lib(p)
template <typename T> struct dsc_lib_type { using type = T; };
template <> struct dsc_lib_type<dsc_bf16> { using type = __nv_bfloat16; };
template <> struct dsc_lib_type<dsc_f16> { using type = __half; };

inline unsigned dsc_blocks(int64_t n) {
  int64_t blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}
inline void dsc_check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}
// Multi-tensor kernels (optimizer updates) read a table of tensors in device
// memory: each call site uploads its rows when they differ from the last
// ones it uploaded (the step's buffers do not move: once), and keeps its
// scratch memory.
template <typename E, int64_t N> struct dsc_table_t {
  E last[N];
  E *device = nullptr;
  const E *get(const E *rows, cudaStream_t stream) {
    if (device && std::memcmp(last, rows, sizeof last) == 0)
      return device;
    if (!device)
      dsc_check(cudaMalloc(&device, sizeof last), "cudaMalloc of a kernel's table");
    std::memcpy(last, rows, sizeof last);
    dsc_check(cudaMemcpyAsync(device, last, sizeof last, cudaMemcpyHostToDevice, stream),
              "uploading a kernel's table");
    return device;
  }
};
struct dsc_workspace_t {
  void *device = nullptr;
  size_t size = 0;
  void *get(size_t bytes) {
    if (bytes > size) {
      if (device)
        dsc_check(cudaFree(device), "cudaFree of a kernel's scratch");
      dsc_check(cudaMalloc(&device, bytes), "cudaMalloc of a kernel's scratch");
      size = bytes;
    }
    return device;
  }
};
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
// Library kernels that check indices record the first bad one in
// dsc_index_fault too (dsc/kernels/cuda/IndexFault.cuh has its layout), as
// their last argument.
static_assert(sizeof(dsc_index_fault_t) == sizeof(dsc::kernels::cuda::IndexFault),
              "one layout for the index record");
inline dsc::kernels::cuda::IndexFault *dsc_index_fault_record() {
  static void *const address = [] { // looked up once, by whichever stream comes first
    void *a = nullptr;
    dsc_check(cudaGetSymbolAddress(&a, dsc_index_fault), "locating the kernels' index check");
    return a;
  }();
  return static_cast<dsc::kernels::cuda::IndexFault *>(address);
}
#define DSC_INDEX_FAULT , dsc_index_fault_record()
template <typename T> const T *dsc_upload(const T *host, size_t bytes) {
  void *device = nullptr;
  dsc_check(cudaMalloc(&device, bytes), "cudaMalloc of a constant");
  dsc_check(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy of a constant");
  return static_cast<const T *>(device);
}
} // namespace

#include "dsc/runtime/GeneratedCommon.h"

#endif // DSC_RUNTIME_GENERATEDCODE_CUH
