//===- DSCRTDialect.h - dsc's runtime-call level ----------------*- C++ -*-===//

#ifndef DSC_DIALECT_DSCRT_IR_DSCRTDIALECT_H
#define DSC_DIALECT_DSCRT_IR_DSCRTDIALECT_H

#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Dialect/DSCRT/IR/DSCRTInterfaces.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dsc/Dialect/DSCRT/IR/DSCRTOpsDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dsc/Dialect/DSCRT/IR/DSCRTOpsAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dsc/Dialect/DSCRT/IR/DSCRTOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "dsc/Dialect/DSCRT/IR/DSCRTOps.h.inc"

namespace mlir::dscrt {
/// The stream of a collective (a StreamUserOpInterface op whose
/// isCollective holds), or null for any other op.
Value getCollectiveStream(Operation *op);
/// The stream `op` enqueues work on (StreamUserOpInterface), or null for an
/// op that launches no work.
Value getWorkStream(Operation *op);
/// The stream `op` enqueues work on, when it is not the compute stream
/// (kComputeStreamName): a collective's, a copy's on a copy stream, a host
/// kernel's. Null for any other op. Buffers such work uses are busy until
/// compute has waited for an event recorded after it.
Value getAsyncStream(Operation *op);
} // namespace mlir::dscrt

#endif // DSC_DIALECT_DSCRT_IR_DSCRTDIALECT_H
