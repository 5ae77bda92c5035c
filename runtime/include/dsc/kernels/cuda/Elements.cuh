//===- Elements.cuh - element types of the CUDA library kernels -*- CUDA -*-===//
//
// What the CUDA kernels read each element type as (Wide: float for the
// 16-bit types), what their sums accumulate in (Acc: double for float data,
// as the CPU kernels, which H100-class GPUs do at full memory bandwidth;
// int64 for integers), and the one rounding back to the element type. Also
// the error check of the host side of every kernel.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_ELEMENTS_CUH
#define DSC_KERNELS_CUDA_ELEMENTS_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace dsc::kernels::cuda {

template <typename T> struct Element;

template <> struct Element<float> {
  using Wide = float;
  using Acc = double;
  static __device__ __forceinline__ Wide widen(float x) { return x; }
  template <typename A> static __device__ __forceinline__ float narrow(A a) { return float(a); }
  static __device__ __forceinline__ Wide lowest() { return -INFINITY; }
};
template <> struct Element<double> {
  using Wide = double;
  using Acc = double;
  static __device__ __forceinline__ Wide widen(double x) { return x; }
  template <typename A> static __device__ __forceinline__ double narrow(A a) { return double(a); }
  static __device__ __forceinline__ Wide lowest() { return -INFINITY; }
};
template <> struct Element<__nv_bfloat16> {
  using Wide = float;
  using Acc = double;
  static __device__ __forceinline__ Wide widen(__nv_bfloat16 x) { return __bfloat162float(x); }
  template <typename A> static __device__ __forceinline__ __nv_bfloat16 narrow(A a) {
    return __float2bfloat16(float(a));
  }
  static __device__ __forceinline__ Wide lowest() { return -INFINITY; }
};
template <> struct Element<__half> {
  using Wide = float;
  using Acc = double;
  static __device__ __forceinline__ Wide widen(__half x) { return __half2float(x); }
  template <typename A> static __device__ __forceinline__ __half narrow(A a) {
    return __float2half(float(a));
  }
  static __device__ __forceinline__ Wide lowest() { return -INFINITY; }
};
template <> struct Element<int64_t> {
  using Wide = int64_t;
  using Acc = int64_t;
  static __device__ __forceinline__ Wide widen(int64_t x) { return x; }
  template <typename A> static __device__ __forceinline__ int64_t narrow(A a) { return int64_t(a); }
  static __device__ __forceinline__ Wide lowest() { return INT64_MIN; }
};
template <> struct Element<int32_t> {
  using Wide = int32_t;
  using Acc = int64_t;
  static __device__ __forceinline__ Wide widen(int32_t x) { return x; }
  template <typename A> static __device__ __forceinline__ int32_t narrow(A a) { return int32_t(a); }
  static __device__ __forceinline__ Wide lowest() { return INT32_MIN; }
};

/// Throws std::runtime_error "<what>: <CUDA's message>" unless `status` is
/// cudaSuccess.
inline void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

/// Blocks for `items` work items, each block taking several when there are
/// more than the grid holds (kernels loop with a grid stride).
inline unsigned blocksFor(int64_t items) {
  constexpr int64_t kMaxBlocks = 65535LL * 16;
  return unsigned(items < 1 ? 1 : (items > kMaxBlocks ? kMaxBlocks : items));
}

/// Scratch memory ordered on `stream` (stream-ordered allocation, so a
/// kernel's partials need no allocation by the caller and stay capturable
/// in a CUDA graph); freed on the stream when it goes out of scope.
class StreamScratch {
public:
  StreamScratch(size_t bytes, cudaStream_t stream) : stream(stream) {
    if (bytes)
      check(cudaMallocAsync(&ptr, bytes, stream), "allocating a kernel's scratch memory");
  }
  ~StreamScratch() {
    if (ptr)
      cudaFreeAsync(ptr, stream);
  }
  StreamScratch(const StreamScratch &) = delete;
  StreamScratch &operator=(const StreamScratch &) = delete;
  template <typename T> T *as(size_t byteOffset = 0) const {
    return reinterpret_cast<T *>(static_cast<char *>(ptr) + byteOffset);
  }

private:
  void *ptr = nullptr;
  cudaStream_t stream;
};

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_ELEMENTS_CUH
