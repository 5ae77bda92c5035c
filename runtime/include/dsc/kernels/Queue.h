//===- Queue.h - the queue argument of the CPU kernel library ---*- C++ -*-===//
//
// Every kernel of the library takes the queue it runs on as its first
// parameter, so that a call site is the same on both targets: a
// cudaStream_t on CUDA, this empty struct on the CPU (where the whole call
// is one task of the step's stream).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_QUEUE_H
#define DSC_KERNELS_QUEUE_H

namespace dsc::kernels::cpu {
struct Queue {};
} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_QUEUE_H
