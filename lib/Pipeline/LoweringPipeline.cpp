//===- LoweringPipeline.cpp - a dsc graph into the dscrt step -------------===//

#include "dsc/Pipeline/LoweringPipeline.h"

#include "dsc/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

void mlir::dsc::buildLoweringPipeline(OpPassManager &pm) {
  pm.addPass(createLowerToRuntime());
  pm.addNestedPass<func::FuncOp>(createSelectLibraryKernels());
}
