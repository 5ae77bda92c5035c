//===- DSCInterfaces.h - dsc op interfaces ----------------------*- C++ -*-===//

#ifndef DSC_DIALECT_DSC_IR_DSCINTERFACES_H
#define DSC_DIALECT_DSC_IR_DSCINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "dsc/Dialect/DSC/IR/DSCInterfaces.h.inc"

#endif // DSC_DIALECT_DSC_IR_DSCINTERFACES_H
