//===- IndexFault.cuh - bad indices found by CUDA kernels -------*- CUDA -*-===//
//
// A CUDA kernel cannot throw: one that reads run-time indices skips a bad
// element and records it in an IndexFault in device memory that its caller
// passes (the generated step keeps one for all its kernels and reads it
// once the step's streams are synchronized). The first record wins; later
// ones are dropped. The layout is the emitted preamble's dsc_index_fault_t.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_INDEXFAULT_CUH
#define DSC_KERNELS_CUDA_INDEXFAULT_CUH

#include "dsc/kernels/cuda/Elements.cuh"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace dsc::kernels::cuda {

struct IndexFault {
  int state; // 0 none, 1 recorded
  long long index, size;
  char op[32];
};

/// Records (index, size, op) unless a fault is recorded already; nothing
/// when `fault` is null.
__device__ inline void recordIndexFault(IndexFault *fault, const char *op, int64_t index,
                                        int64_t size) {
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

/// Host side, after the kernels that may record into `fault` finished:
/// throws std::out_of_range "<op>: index I is outside [0, N)" and clears
/// the record if one is there.
inline void raiseIndexFault(IndexFault *fault) {
  IndexFault seen;
  check(cudaMemcpy(&seen, fault, sizeof seen, cudaMemcpyDeviceToHost),
        "reading the kernels' index check");
  if (seen.state == 0)
    return;
  check(cudaMemset(fault, 0, sizeof seen), "clearing the kernels' index check");
  throw std::out_of_range(std::string(seen.op) + ": index " + std::to_string(seen.index) +
                          " is outside [0, " + std::to_string(seen.size) + ")");
}

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_INDEXFAULT_CUH
