//===- Queue.h - the CPU kernel library's queue argument --------*- C++ -*-===//
//
// Every kernel of the library takes its target's queue first, so that the
// emitter writes the same call on both targets: cudaStream_t on CUDA, and
// on the CPU this empty type (CPU kernels run to completion in the call).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_QUEUE_H
#define DSC_KERNELS_QUEUE_H

namespace dsc::kernels::cpu {
struct Queue {};
} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_QUEUE_H
