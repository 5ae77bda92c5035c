//===- LibraryCalls.h - a dscrt.kernel as a call into the library *- C++ -*-===//
//
// A dscrt.kernel with a `library` attribute becomes a host function that
// calls the kernel library (runtime/include/dsc/kernels/) instead of
// generated loops. Each family of the library has its own emitter here
// (Library<Family>.cpp), registered in LibraryCalls.cpp's table by the
// library kernel's name. The call's text is the same for both targets: the
// runtime's dsc/runtime/GeneratedCode.h (.cuh) makes `dsc_kernels` the
// target's namespace (dsc::kernels::cpu or ::cuda), `dsc_stream_t` its
// queue type, and DSC_LIB(p) the pointer type the library takes (CUDA's own
// 16-bit types there).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_TARGET_CPP_LIBRARYCALLS_H
#define DSC_LIB_TARGET_CPP_LIBRARYCALLS_H

#include "dsc/Dialect/DSCRT/IR/DSCRTDialect.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::dsc::cpp {

/// What a family's emitter writes its call with.
class LibraryCall {
public:
  explicit LibraryCall(dscrt::KernelOp kernel) : kernel(kernel) {}

  dscrt::KernelOp kernel;

  /// The one op of the body, or null (a copy's body has none).
  Operation *op() const;
  /// The argument expression of `v`, a value the body reads from memory
  /// (one of its block arguments).
  std::string in(Value v) const;
  /// The argument expression of the kernel's output buffer #i.
  std::string out(unsigned i) const;
  /// The argument expression of the output buffer that holds `v`, a value
  /// the body yields.
  std::string outFor(Value v) const;

  /// The statements of the host function's body.
  std::string text;
};

/// Writes `kernel` (which has a `library` attribute) as a host function
/// `name` calling the library; fails with a diagnostic on what it cannot.
LogicalResult emitLibraryCall(dscrt::KernelOp kernel, StringRef name,
                              llvm::raw_ostream &os);

// One emitter per family (Library<Family>.cpp).
LogicalResult emitCopyCall(LibraryCall &call);
LogicalResult emitGemmCall(LibraryCall &call);
LogicalResult emitReduceCall(LibraryCall &call);
LogicalResult emitLayoutCall(LibraryCall &call);
LogicalResult emitRowCall(LibraryCall &call);
LogicalResult emitClassifierCall(LibraryCall &call);
LogicalResult emitAttentionCall(LibraryCall &call);
LogicalResult emitOptimizerCall(LibraryCall &call);
LogicalResult emitMoeCall(LibraryCall &call);
LogicalResult emitRandomCall(LibraryCall &call);

} // namespace mlir::dsc::cpp

#endif // DSC_LIB_TARGET_CPP_LIBRARYCALLS_H
