//===- Optimizer.cpp - the CPU optimizer kernels, instantiated ------------===//
//
// The explicit instantiations that Optimizer.h declares extern, so that
// generated code links them from the runtime instead of compiling them.
//
//===----------------------------------------------------------------------===//

#include "dsc/kernels/Optimizer.h"

namespace dsc::kernels::cpu {

DSC_KERNELS_OPTIMIZER_INSTANCES(, float)
DSC_KERNELS_OPTIMIZER_INSTANCES(, dsc::rt::BFloat16)
DSC_KERNELS_OPTIMIZER_INSTANCES(, dsc::rt::Half)

} // namespace dsc::kernels::cpu
