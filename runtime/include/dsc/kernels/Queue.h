//===- Queue.h - what a CPU library kernel runs on --------------*- C++ -*-===//
//
// Every kernel of the library takes, first, the queue it runs on: a CUDA
// stream on the CUDA target (dsc/kernels/cuda/), this empty value on the
// CPU, where a kernel runs on the calling thread (the runtime calls it as a
// task of its stream) and parallelises with OpenMP. Generated code calls
// both targets' kernels with the same text.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_QUEUE_H
#define DSC_KERNELS_QUEUE_H

namespace dsc::kernels::cpu {

struct Queue {};

} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_QUEUE_H
