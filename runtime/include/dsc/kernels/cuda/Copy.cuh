//===- Copy.cuh - buffer copies on the CUDA target --------------*- C++ -*-===//
//
// The CUDA counterpart of dsc/kernels/Copy.h: an asynchronous device-to-
// device copy on the kernel's stream (the copy engines, no kernel).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_COPY_CUH
#define DSC_KERNELS_CUDA_COPY_CUH

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace dsc::kernels::cuda {

/// Copies `bytes` bytes from `src` to `dst` (device memory, not
/// overlapping) on `stream`.
inline void copy(cudaStream_t stream, const void *src, void *dst, int64_t bytes) {
  if (bytes <= 0)
    return;
  cudaError_t status = cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes),
                                       cudaMemcpyDeviceToDevice, stream);
  if (status != cudaSuccess)
    throw std::runtime_error(std::string("copy: cudaMemcpyAsync failed: ") +
                             cudaGetErrorString(status));
}

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_COPY_CUH
