//===- KernelCudaTestSupport.h - CUDA kernel tests against the CPU kernels -===//
//
// Device buffers, the CUDA type of each CPU element type (same bits), and
// the skip when no GPU is there: the tests build everywhere the toolkit is
// and check the CUDA kernels against the CPU library where a GPU is.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_TESTS_KERNELS_KERNELCUDATESTSUPPORT_H
#define DSC_RUNTIME_TESTS_KERNELS_KERNELCUDATESTSUPPORT_H

#include "KernelTestSupport.h"

#include "dsc/kernels/cuda/IndexFault.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <gtest/gtest.h>

#include <type_traits>
#include <vector>

namespace dsc::kernels::test {

template <typename T> struct CudaTypeOf { using type = T; };
template <> struct CudaTypeOf<BFloat16> { using type = __nv_bfloat16; };
template <> struct CudaTypeOf<Half> { using type = __half; };
template <typename T> using CudaType = typename CudaTypeOf<T>::type;

inline bool haveGpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

#define DSC_REQUIRE_GPU()                                                      \
  do {                                                                         \
    if (!::dsc::kernels::test::haveGpu())                                      \
      GTEST_SKIP() << "no CUDA device";                                        \
  } while (0)

/// A device copy of a host vector of T, seen by kernels as CudaType<T>
/// (or as T itself for types with no CUDA counterpart).
template <typename T> class DeviceBuffer {
public:
  explicit DeviceBuffer(const std::vector<T> &host) : count(host.size()) {
    EXPECT_EQ(cudaMalloc(&ptr, bytes()), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr, host.data(), bytes(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  explicit DeviceBuffer(size_t count, T fill = T()) : DeviceBuffer(std::vector<T>(count, fill)) {}
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  CudaType<T> *get() const { return static_cast<CudaType<T> *>(ptr); }
  std::vector<T> host() const {
    std::vector<T> out(count);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(out.data(), ptr, bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

private:
  size_t bytes() const { return count * sizeof(T); }
  void *ptr = nullptr;
  size_t count;
};

/// After the kernels that may record into `fault` finished: throws
/// std::out_of_range "<op>: index I is outside [0, N)" and clears the
/// record if one is there (as the generated step's dsc_raise_index_error).
inline void raiseIndexFault(dsc::kernels::cuda::IndexFault *fault) {
  dsc::kernels::cuda::IndexFault seen;
  EXPECT_EQ(cudaMemcpy(&seen, fault, sizeof seen, cudaMemcpyDeviceToHost), cudaSuccess);
  if (seen.state == 0)
    return;
  EXPECT_EQ(cudaMemset(fault, 0, sizeof seen), cudaSuccess);
  throw std::out_of_range(std::string(seen.op) + ": index " + std::to_string(seen.index) +
                          " is outside [0, " + std::to_string(seen.size) + ")");
}

/// A zeroed index-fault record in device memory.
struct DeviceFault {
  DeviceFault() {
    EXPECT_EQ(cudaMalloc(&ptr, sizeof *ptr), cudaSuccess);
    EXPECT_EQ(cudaMemset(ptr, 0, sizeof *ptr), cudaSuccess);
  }
  ~DeviceFault() { cudaFree(ptr); }
  DeviceFault(const DeviceFault &) = delete;
  DeviceFault &operator=(const DeviceFault &) = delete;
  dsc::kernels::cuda::IndexFault *ptr = nullptr;
};

} // namespace dsc::kernels::test

#endif // DSC_RUNTIME_TESTS_KERNELS_KERNELCUDATESTSUPPORT_H
