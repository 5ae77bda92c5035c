//===- GeneratedCode.h - what generated CPU code is written against -*- C++ -*-===//
//
// An artifact's C++ (dsc-translate --dscrt-to-cpp) includes this header
// first. Emitted loops are written once for both targets against the
// macros below (DSC_GLOBAL, DSC_FOR, DSC_LAUNCH, ...: an OpenMP loop here,
// a grid-stride loop on CUDA, GeneratedCode.cuh); library calls against
// dsc_kernels, dsc_stream_t and DSC_LIB. Everything the helpers define has
// internal linkage: each translation unit of a split artifact has its own.
// GeneratedStep.h has what a unit needs without kernels (the step's unit of
// a split artifact includes that one alone).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_GENERATEDCODE_H
#define DSC_RUNTIME_GENERATEDCODE_H

#include "dsc/runtime/GeneratedStep.h"

#include "dsc/kernels/Kernels.h"
#include "dsc/kernels/Tanh.h"
#include "dsc/runtime/CpuGemm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

// Emitted loops (KernelEmitter.h in the compiler). A parallel loop is
// also a simd loop: its iterations are independent, and without the
// pragma GCC's -O2 (its "very cheap" cost model) vectorises none of them,
// as OpenMP splits the trip count into chunks whose size it cannot see.
#define DSC_GLOBAL static
#define DSC_FOR(i, n) _Pragma("omp parallel for simd") for (int64_t i = 0; i < (n); ++i)
#define DSC_SERIAL_FOR(i, n) for (int64_t i = 0; i < (n); ++i)
// An index check inside a loop records the first bad index and skips the
// element (an exception must not leave an OpenMP region); each launch raises
// what its loop recorded, as an error of the stream task running the kernel.
#define DSC_LAUNCH(f, n, ...) do { f(__VA_ARGS__); dsc_raise_index_error(); } while (0)
#define DSC_LAUNCH_SERIAL(f, ...) do { f(__VA_ARGS__); dsc_raise_index_error(); } while (0)
#define DSC_GEMM(s, a, b, c, alpha, beta) dsc_gemm(s, a, b, c, alpha, beta)
#define DSC_INDEX_ERROR(op, index, size) { dsc_index_error(op, index, size); continue; }
#define DSC_HD

namespace {
namespace dsc_kernels = dsc::kernels::cpu;
#define DSC_LIB(p) (p)
// Library kernels that check indices throw on the CPU (no record argument).
#define DSC_INDEX_FAULT
// Multi-tensor kernels (optimizer updates) read a table of tensors: on the
// CPU the rows the call built; scratch memory is kept by each call site.
template <typename T> struct dsc_lib_type { using type = T; };
template <typename E, int64_t N> struct dsc_table_t {
  const E *get(const E *rows, dsc_stream_t) const { return rows; }
};
struct dsc_workspace_t {
  std::vector<double> scratch;
  void *get(size_t bytes) {
    if (scratch.size() * sizeof(double) < bytes)
      scratch.resize((bytes + sizeof(double) - 1) / sizeof(double));
    return scratch.data();
  }
};
inline void dsc_gemm(const dsc::rt::cpu::GemmShape &s, const float *a, const float *b,
                     float *c, float alpha, float beta) {
  dsc::rt::cpu::gemmF32(s, a, b, c, alpha, beta);
}
inline void dsc_gemm(const dsc::rt::cpu::GemmShape &s, const dsc_bf16 *a, const dsc_bf16 *b,
                     dsc_bf16 *c, float alpha, float beta) {
  dsc::rt::cpu::gemmBF16(s, a, b, c, alpha, beta);
}
inline void dsc_gemm(const dsc::rt::cpu::GemmShape &s, const dsc_f16 *a, const dsc_f16 *b,
                     dsc_f16 *c, float alpha, float beta) {
  dsc::rt::cpu::gemmF16(s, a, b, c, alpha, beta);
}
// Unqualified math calls pick the float overloads for float arguments.
using std::erf; using std::exp; using std::log; using std::pow; using std::sqrt;
using std::tanh; using std::cos; using std::sin;

// Records the first index outside its table that a loop found
// (DSC_INDEX_ERROR); the launch raises it (dsc_raise_index_error).
void dsc_index_error(const char *op, int64_t index, int64_t size) {
  int none = 0;
  if (!dsc_index_fault.state.compare_exchange_strong(none, 1))
    return;
  dsc_index_fault.op = op;
  dsc_index_fault.index = index;
  dsc_index_fault.size = size;
  dsc_index_fault.state.store(2, std::memory_order_release);
}

// tanh of a float in emitted loops (GELU's tanh approximation and its
// gradient): arithmetic the loop vectorises, not libm's scalar call.
// GeneratedCommon.h has dsc_tanh of the other types.
inline float dsc_tanh(float x) { return dsc::kernels::tanhF32(x); }
} // namespace

#include "dsc/runtime/GeneratedCommon.h"

#endif // DSC_RUNTIME_GENERATEDCODE_H
