//===- Passes.h - dsc passes above the lowering -----------------*- C++ -*-===//

#ifndef DSC_PIPELINE_PASSES_H
#define DSC_PIPELINE_PASSES_H

#include "dsc/Dialect/DSCRT/IR/DSCRTDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dsc {

#define GEN_PASS_DECL
#include "dsc/Pipeline/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dsc/Pipeline/Passes.h.inc"

} // namespace mlir::dsc

#endif // DSC_PIPELINE_PASSES_H
