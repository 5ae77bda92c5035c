//===- Row.cpp - the row kernels, compiled once ---------------------------===//
//
// Explicit instantiations of dsc/kernels/Row.h for the CPU element types,
// and the per-thread scratch buffers the kernels share.
//
//===----------------------------------------------------------------------===//

#include "dsc/kernels/Row.h"

#include <vector>

namespace dsc::kernels::cpu {
namespace detail {

float *threadScratch(std::size_t n) {
  static thread_local std::vector<float> buffer;
  if (buffer.size() < n)
    buffer.resize(n);
  return buffer.data();
}

double *threadPartials(std::size_t n) {
  static thread_local std::vector<double> buffer;
  if (buffer.size() < n)
    buffer.resize(n);
  return buffer.data();
}

} // namespace detail

DSC_KERNELS_ROW_DECLARE(, float)
DSC_KERNELS_ROW_DECLARE(, dsc::rt::BFloat16)
DSC_KERNELS_ROW_DECLARE(, dsc::rt::Half)

} // namespace dsc::kernels::cpu
