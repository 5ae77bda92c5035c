//===- InitAll.cpp - register every dialect and pass dsc tools use ---------===//

#include "dsc/InitAll.h"

#include "dsc/Conversion/Passes.h"
#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSCRT/IR/DSCRTDialect.h"
#include "dsc/Pipeline/LoweringPipeline.h"
#include "dsc/Pipeline/Passes.h"
#include "dsc/Pipeline/TrainingPipeline.h"
#include "dsc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void mlir::dsc::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<DSCDialect, mlir::dscrt::DSCRTDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect>();
}

void mlir::dsc::registerAllPasses() {
  registerDSCPasses();
  registerDSCConversionPasses();
  registerDSCPipelinePasses();
  registerTrainingPipeline();
  registerLowerToRuntimePipeline();
  mlir::registerTransformsPasses();
}
