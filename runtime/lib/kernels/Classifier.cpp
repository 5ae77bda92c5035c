//===- Classifier.cpp - the fused classifier, compiled once ---------------===//
//
// Explicit instantiations of dsc/kernels/Classifier.h for the CPU element
// and index types, and its index error.
//
//===----------------------------------------------------------------------===//

#include "dsc/kernels/Classifier.h"

#include <stdexcept>
#include <string>

namespace dsc::kernels::cpu {
namespace detail {

void throwIndexError(const char *what, std::int64_t index, std::int64_t size) {
  throw std::out_of_range(std::string(what) + ": index " + std::to_string(index) +
                          " is outside [0, " + std::to_string(size) + ")");
}

} // namespace detail

DSC_KERNELS_CLASSIFIER_DECLARE(, float, std::int64_t)
DSC_KERNELS_CLASSIFIER_DECLARE(, dsc::rt::BFloat16, std::int64_t)
DSC_KERNELS_CLASSIFIER_DECLARE(, dsc::rt::Half, std::int64_t)
DSC_KERNELS_CLASSIFIER_DECLARE(, float, std::int32_t)
DSC_KERNELS_CLASSIFIER_DECLARE(, dsc::rt::BFloat16, std::int32_t)
DSC_KERNELS_CLASSIFIER_DECLARE(, dsc::rt::Half, std::int32_t)

} // namespace dsc::kernels::cpu
