//===- InitAll.cpp - register every dialect and pass dsc tools use ---------===//

#include "dsc/InitAll.h"

#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void mlir::dsc::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<DSCDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect>();
}

void mlir::dsc::registerAllPasses() {
  registerDSCPasses();
  mlir::registerTransformsPasses();
}
