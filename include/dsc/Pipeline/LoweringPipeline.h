//===- LoweringPipeline.h - a dsc graph into the dscrt step -----*- C++ -*-===//
//
// The passes that turn the graph function into the dscrt step function the
// emitters translate: the lowering (buffers, kernels, streams) and the
// choice of library kernels. dsc-compile runs them (then
// --dsc-plan-memory); the step report runs them on a copy of the module to
// plan its memory as dsc-compile does.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_PIPELINE_LOWERINGPIPELINE_H
#define DSC_PIPELINE_LOWERINGPIPELINE_H

#include "mlir/Pass/PassManager.h"

namespace mlir::dsc {

/// Adds --dsc-lower-to-runtime and --dscrt-select-library to `pm` (a
/// module pass manager).
void buildLoweringPipeline(OpPassManager &pm);

} // namespace mlir::dsc

#endif // DSC_PIPELINE_LOWERINGPIPELINE_H
