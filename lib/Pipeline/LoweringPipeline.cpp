//===- LoweringPipeline.cpp - a dsc graph into the dscrt step -------------===//

#include "dsc/Pipeline/LoweringPipeline.h"

#include "dsc/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void mlir::dsc::buildLowerToRuntimePipeline(
    OpPassManager &pm, const LowerToRuntimeOptions &options) {
  OpPassManager &graph = pm.nest<func::FuncOp>();
  graph.addPass(createDecomposeForLibrary());
  graph.addPass(createFormKernels({/*fuseElementwise=*/options.fuseElementwise}));
  pm.addPass(createConvertToRuntime());
  OpPassManager &step = pm.nest<func::FuncOp>();
  step.addPass(createAssignStreams());
  step.addPass(createVerifyStep());
}

void mlir::dsc::buildLoweringPipeline(OpPassManager &pm) {
  buildLowerToRuntimePipeline(pm, LowerToRuntimeOptions());
  pm.addNestedPass<func::FuncOp>(createSelectLibraryKernels());
}

void mlir::dsc::registerLowerToRuntimePipeline() {
  PassPipelineRegistration<LowerToRuntimeOptions>(
      "dsc-lower-to-runtime",
      "lowers the dsc graph to the dscrt step: --dsc-decompose-for-library, "
      "--dsc-form-kernels, --dsc-convert-to-runtime, --dscrt-assign-streams, "
      "--dscrt-verify-step",
      buildLowerToRuntimePipeline);
}
