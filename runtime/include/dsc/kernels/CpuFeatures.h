//===- CpuFeatures.h - which of a kernel's compiled versions runs -*- C++ -*-===//
//
// The runtime is compiled for any x86-64 (no -march flag), so kernels whose
// hot loops gain from wider vectors compile them twice, once with a target
// attribute, and ask here at run time which one this CPU can run.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CPUFEATURES_H
#define DSC_KERNELS_CPUFEATURES_H

namespace dsc::kernels {

/// Whether the CPU has AVX2.
inline bool cpuHasAvx2() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return has;
#else
  return false;
#endif
}

/// Whether the CPU has AVX2 and FMA.
inline bool cpuHasAvx2Fma() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
#else
  return false;
#endif
}

} // namespace dsc::kernels

#endif // DSC_KERNELS_CPUFEATURES_H
