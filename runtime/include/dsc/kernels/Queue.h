//===- Queue.h - the queue argument of the CPU library kernels --*- C++ -*-===//
//
// Every library kernel takes the queue it runs on as its first argument, so
// that the CPU and CUDA forms of a kernel have the same argument list (the
// CUDA form takes a cudaStream_t). A CPU kernel runs as one task of its
// stream, on the calling thread: the queue carries nothing.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_QUEUE_H
#define DSC_KERNELS_QUEUE_H

namespace dsc::kernels::cpu {
struct Queue {};
} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_QUEUE_H
