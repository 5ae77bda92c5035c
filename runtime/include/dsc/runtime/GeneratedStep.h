//===- GeneratedStep.h - what a CPU artifact's step unit needs --*- C++ -*-===//
//
// The step's translation unit of a split artifact (dsc-translate
// --dscrt-split-bytes) holds no kernel: it declares the kernels' entries,
// which the kernelsK units define, and enqueues them. It includes this
// header instead of GeneratedCode.h, which adds the kernel library and the
// loop macros on top of it, so that the compiler does not parse the library
// once more for a unit that calls none of it.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_GENERATEDSTEP_H
#define DSC_RUNTIME_GENERATEDSTEP_H

#include "dsc/kernels/Queue.h"
#include "dsc/runtime/Artifact.h"
#include "dsc/runtime/Float16.h"
#include "dsc/runtime/Stream.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

// An artifact compiled with AVX2 (dsc-compile --cpu-isa) says so, and
// dsc-run refuses to run it on a CPU without AVX2 rather than die of an
// illegal instruction. Weak: every unit of a split artifact defines it.
#ifdef __AVX2__
extern "C" __attribute__((weak, visibility("default"))) int dsc_artifact_needs_avx2() {
  return 1;
}
#endif

// Constants of the step (dsc.constant) and emitted loops.
#define DSC_INF(T) std::numeric_limits<T>::infinity()
#define DSC_NAN(T) std::numeric_limits<T>::quiet_NaN()
#define DSC_LOWEST(T) std::numeric_limits<T>::lowest()

namespace {
using dsc::rt::ElementType;
// A kernel is one task of its stream: it needs no handle (the stream runs it).
// Library kernels (dsc/kernels/) take the CPU's empty queue in its place.
using dsc_stream_t = dsc::kernels::cpu::Queue;
// 16-bit floats: 2-byte words read as float, rounded to nearest even when
// written (dsc/runtime/Float16.h).
using dsc_bf16 = dsc::rt::BFloat16;
using dsc_f16 = dsc::rt::Half;

// The first index outside its table that a loop of this unit found
// (DSC_INDEX_ERROR in GeneratedCode.h records it).
struct dsc_index_fault_t {
  std::atomic<int> state{0}; // 0 none, 1 being written, 2 recorded
  const char *op = nullptr;
  int64_t index = 0, size = 0;
};
dsc_index_fault_t dsc_index_fault;
void dsc_raise_index_error() {
  if (dsc_index_fault.state.load(std::memory_order_acquire) != 2)
    return;
  std::string message = std::string(dsc_index_fault.op) + ": index " +
                        std::to_string(dsc_index_fault.index) + " is outside [0, " +
                        std::to_string(dsc_index_fault.size) + ")";
  dsc_index_fault.state.store(0);
  throw std::out_of_range(message);
}
} // namespace

#endif // DSC_RUNTIME_GENERATEDSTEP_H
