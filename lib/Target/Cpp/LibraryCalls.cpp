//===- LibraryCalls.cpp - a dscrt.kernel as a call into the library -------===//

#include "LibraryCalls.h"

#include "KernelEmitter.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::cpp;

Operation *LibraryCall::op() const {
  Block &body = dscrt::KernelOp(kernel).getBody().front();
  return &body.front() == body.getTerminator() ? nullptr : &body.front();
}

std::string LibraryCall::in(Value v) const {
  return "DSC_LIB(in" + std::to_string(cast<BlockArgument>(v).getArgNumber()) + ")";
}

std::string LibraryCall::out(unsigned i) const {
  return "DSC_LIB(out" + std::to_string(i) + ")";
}

std::string LibraryCall::outFor(Value v) const {
  Operation *yield = dscrt::KernelOp(kernel).getBody().front().getTerminator();
  for (auto [i, yielded] : llvm::enumerate(yield->getOperands()))
    if (yielded == v)
      return out(i);
  llvm_unreachable("a library kernel's results are all yielded");
}

using FamilyEmitter = LogicalResult (*)(LibraryCall &);

/// The emitter of each library kernel (LibraryKernels.h names them).
static FamilyEmitter familyOf(StringRef library) {
  return llvm::StringSwitch<FamilyEmitter>(library)
      .Case("copy", emitCopyCall)
      .Case("gemm", emitGemmCall)
      .Case("reduce", emitReduceCall)
      .Cases({"embedding", "permute", "slice", "concat", "broadcast", "causal_mask",
              "gather", "scatter_add", "top_k", "cumsum", "one_hot"},
             emitLayoutCall)
      .Case("row", emitRowCall)
      .Case("classifier", emitClassifierCall)
      .Case("attention", emitAttentionCall)
      .Cases({"adam_update", "sgd_update", "sum_squares"}, emitOptimizerCall)
      .Cases({"moe_slots", "moe_dispatch", "moe_combine", "moe_route_dot"}, emitMoeCall)
      .Cases({"dropout", "random_ltd_indices", "random_uniform"}, emitRandomCall)
      .Default(nullptr);
}

bool mlir::dsc::cpp::keepsCallSiteState(dscrt::KernelOp kernel) {
  // emitOptimizerCall's tables and workspaces are function-local statics.
  return familyOf(kernel.getLibrary().value_or("")) == emitOptimizerCall;
}

LogicalResult mlir::dsc::cpp::emitLibraryCall(dscrt::KernelOp kernel,
                                              StringRef name,
                                              llvm::raw_ostream &os) {
  StringRef library = *kernel.getLibrary();
  FamilyEmitter family = familyOf(library);
  if (!family)
    return kernel.emitError() << "the C++ emitter has no call for library kernel '"
                              << library << "'";
  FailureOr<std::string> params = kernelParameters(kernel);
  if (failed(params))
    return failure();
  LibraryCall call(kernel);
  if (failed(family(call)))
    return failure();
  os << "static void " << name << "(dsc_stream_t stream, " << *params << ") {\n"
     << call.text << "}\n\n";
  return success();
}
