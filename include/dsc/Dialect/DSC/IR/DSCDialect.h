//===- DSCDialect.h - the dsc dialect ---------------------------*- C++ -*-===//

#ifndef DSC_DIALECT_DSC_IR_DSCDIALECT_H
#define DSC_DIALECT_DSC_IR_DSCDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dsc/Dialect/DSC/IR/DSCOpsDialect.h.inc"

#endif // DSC_DIALECT_DSC_IR_DSCDIALECT_H
