//===- Queue.h - the queue argument of CPU library kernels ------*- C++ -*-===//
//
// Every library kernel takes its queue first: a cudaStream_t on CUDA, this
// empty struct on the CPU, where a kernel runs as one task of its stream and
// needs no handle. The argument lists are then the same on both targets, so
// the emitter writes one call for either.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_QUEUE_H
#define DSC_KERNELS_QUEUE_H

namespace dsc::kernels::cpu {
struct Queue {};
} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_QUEUE_H
