//===- Passes.h - dsc conversion passes -------------------------*- C++ -*-===//

#ifndef DSC_CONVERSION_PASSES_H
#define DSC_CONVERSION_PASSES_H

#include "dsc/Dialect/DSCRT/IR/DSCRTDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::dsc {

#define GEN_PASS_DECL
#include "dsc/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dsc/Conversion/Passes.h.inc"

} // namespace mlir::dsc

#endif // DSC_CONVERSION_PASSES_H
