//===- Attention.cpp - the CPU attention kernels, compiled once ------------===//
//
// Explicit instantiations of the templates in dsc/kernels/Attention.h for
// the element types artifacts use; generated code links against these
// instead of compiling the templates in every artifact.
//
//===----------------------------------------------------------------------===//

#include "dsc/kernels/Attention.h"

namespace dsc::kernels::cpu {
#define DSC_KERNELS_ATTENTION_DEFINE(T, M) DSC_KERNELS_ATTENTION_DECLARE(, T, M)
DSC_KERNELS_ATTENTION_INSTANCES(DSC_KERNELS_ATTENTION_DEFINE)
} // namespace dsc::kernels::cpu
