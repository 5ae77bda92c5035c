//===- GeneratedCode.cuh - what generated CUDA code is written against -*- C++ -*-===//
//
// An artifact's CUDA (dsc-translate --dscrt-to-cuda) includes this header
// first: the CUDA forms of GeneratedCode.h's macros and helpers (emitted
// loops as grid-stride loops in __global__ functions, library calls into
// dsc::kernels::cuda, the device-side index check). GeneratedStep.cuh has
// what a unit needs without kernels (the step's unit of a split artifact
// includes that one alone).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_GENERATEDCODE_CUH
#define DSC_RUNTIME_GENERATEDCODE_CUH

#include "dsc/runtime/GeneratedStep.cuh"

#include "dsc/kernels/cuda/Kernels.cuh"
#include "dsc/runtime/CpuGemm.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#define DSC_GLOBAL static __global__
#define DSC_FOR(i, n) for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)
#define DSC_SERIAL_FOR(i, n) for (int64_t i = 0; i < (n); ++i)
#define DSC_LAUNCH(f, n, ...) f<<<dsc_blocks(n), 256, 0, stream>>>(__VA_ARGS__)
#define DSC_LAUNCH_SERIAL(f, ...) f<<<1, 1, 0, stream>>>(__VA_ARGS__)
#define DSC_GEMM(s, a, b, c, alpha, beta) dsc_gemm(s, a, b, c, alpha, beta, stream)
// An index check records the first bad index in device memory and skips
// the element; the host reads the record once the step's streams are
// synchronized (dsc_raise_index_error) and fails the step.
#define DSC_INDEX_ERROR(op, index, size) { dsc_index_error(op, index, size); continue; }

// The runtime's cuBLASLt GEMM, resolved when dsc-run loads the artifact.
#include "dsc/runtime/CudaGemm.h"

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
} // namespace

#include "dsc/runtime/GeneratedCommon.h"

#endif // DSC_RUNTIME_GENERATEDCODE_CUH
