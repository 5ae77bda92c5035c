//===- InitAll.h - register every dialect and pass dsc tools use -*- C++ -*-===//

#ifndef DSC_INITALL_H
#define DSC_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::dsc {

/// The dsc dialect and the upstream dialects dsc IR uses (builtin, func,
/// arith).
void registerAllDialects(mlir::DialectRegistry &registry);

/// dsc's passes and MLIR's generic transforms (canonicalize, cse, ...).
void registerAllPasses();

} // namespace mlir::dsc

#endif // DSC_INITALL_H
