//===- GeneratedCommon.h - what both targets' generated code shares -*- C++ -*-===//
//
// Included last by GeneratedCode.h (CPU) and GeneratedCode.cuh (CUDA), once
// the target has defined DSC_HD (host/device qualifiers of the helpers
// below).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_GENERATEDCOMMON_H
#define DSC_RUNTIME_GENERATEDCOMMON_H

#ifndef DSC_HD
#error "include dsc/runtime/GeneratedCode.h or GeneratedCode.cuh, not this file"
#endif

// NaN-propagating maximum and minimum, as torch.maximum / torch.minimum.
template <typename T> DSC_HD inline T dsc_max(T a, T b) { return a != a || a > b ? a : b; }
template <typename T> DSC_HD inline T dsc_min(T a, T b) { return a != a || a < b ? a : b; }

// tanh in emitted loops: the standard one (the CPU's GeneratedCode.h
// overloads it for float).
template <typename T> DSC_HD inline auto dsc_tanh(T x) { return tanh(x); }

#endif // DSC_RUNTIME_GENERATEDCOMMON_H
