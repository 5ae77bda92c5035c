//===- IndexFault.cuh - the first bad index a CUDA kernel saw ---*- C++ -*-===//
//
// A CUDA kernel cannot throw: a kernel that meets an index outside its table
// (an embedding id, a class target) skips the element and records the first
// such index here, in device memory the caller passes; the host reads the
// record after synchronizing and raises "<op>: index I is outside [0, N)",
// as the CPU kernels do. The layout is that of the record generated CUDA
// code keeps (dsc_index_fault_t, dsc/runtime/GeneratedCode.cuh), so either
// can be passed.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_INDEXFAULT_CUH
#define DSC_KERNELS_CUDA_INDEXFAULT_CUH

#include <cstdint>

namespace dsc::kernels::cuda {

struct IndexFault {
  int state; // 0 none, 1 recorded
  long long index, size;
  char op[32];
};

/// Records (op, index, size) in `fault` unless an index is recorded already.
/// A null `fault` records nothing (the caller checks no indices).
__device__ inline void recordIndexFault(IndexFault *fault, const char *op,
                                        std::int64_t index, std::int64_t size) {
  if (!fault || atomicCAS(&fault->state, 0, 1) != 0)
    return;
  fault->index = index;
  fault->size = size;
  int k = 0;
  for (; k < 31 && op[k]; ++k)
    fault->op[k] = op[k];
  fault->op[k] = 0;
  __threadfence();
}

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_INDEXFAULT_CUH
