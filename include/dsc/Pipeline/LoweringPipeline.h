//===- LoweringPipeline.h - a dsc graph into the dscrt step -----*- C++ -*-===//
//
// The passes that turn the graph function into the dscrt step function the
// emitters translate, one job each: decompose the graph into ops the kernel
// library computes, form the fused kernels, convert to buffers, kernels and
// streams, verify the step's stream order, and choose the library kernels.
// `--dsc-lower-to-runtime` names the first four; dsc-compile runs them and
// the choice (then --dsc-plan-memory); the step report runs the same
// pipeline on a copy of the module to plan its memory as dsc-compile does.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_PIPELINE_LOWERINGPIPELINE_H
#define DSC_PIPELINE_LOWERINGPIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::dsc {

struct LowerToRuntimeOptions
    : public PassPipelineOptions<LowerToRuntimeOptions> {
  Option<bool> fuseElementwise{
      *this, "fuse-elementwise",
      llvm::cl::desc("fuse chains of elementwise ops into one kernel "
                     "(--dsc-form-kernels)"),
      llvm::cl::init(true)};
};

/// Adds --dsc-decompose-for-library, --dsc-form-kernels,
/// --dsc-convert-to-runtime and --dscrt-verify-step to `pm` (a module pass
/// manager): the pipeline `--dsc-lower-to-runtime`.
void buildLowerToRuntimePipeline(OpPassManager &pm,
                                 const LowerToRuntimeOptions &options);

/// The whole lowering: --dsc-lower-to-runtime with its default options,
/// then --dscrt-select-library.
void buildLoweringPipeline(OpPassManager &pm);

/// Registers `--dsc-lower-to-runtime`.
void registerLowerToRuntimePipeline();

} // namespace mlir::dsc

#endif // DSC_PIPELINE_LOWERINGPIPELINE_H
