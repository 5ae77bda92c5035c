//===- Classifier.cpp - the fused classifier, compiled once ---------------===//
//
// Explicit instantiations of dsc/kernels/Classifier.h for the CPU element
// and index types.
//
//===----------------------------------------------------------------------===//

#include "dsc/kernels/Classifier.h"

namespace dsc::kernels::cpu {

DSC_KERNELS_CLASSIFIER_DECLARE(, float, std::int64_t)
DSC_KERNELS_CLASSIFIER_DECLARE(, dsc::rt::BFloat16, std::int64_t)
DSC_KERNELS_CLASSIFIER_DECLARE(, dsc::rt::Half, std::int64_t)
DSC_KERNELS_CLASSIFIER_DECLARE(, float, std::int32_t)
DSC_KERNELS_CLASSIFIER_DECLARE(, dsc::rt::BFloat16, std::int32_t)
DSC_KERNELS_CLASSIFIER_DECLARE(, dsc::rt::Half, std::int32_t)

} // namespace dsc::kernels::cpu
