//===- DSCRTInterfaces.h - dscrt op interfaces ------------------*- C++ -*-===//

#ifndef DSC_DIALECT_DSCRT_IR_DSCRTINTERFACES_H
#define DSC_DIALECT_DSCRT_IR_DSCRTINTERFACES_H

#include "mlir/IR/OpDefinition.h"

#include "dsc/Dialect/DSCRT/IR/DSCRTInterfaces.h.inc"

#endif // DSC_DIALECT_DSCRT_IR_DSCRTINTERFACES_H
