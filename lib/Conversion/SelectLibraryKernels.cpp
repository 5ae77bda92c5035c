//===- SelectLibraryKernels.cpp - --dscrt-select-library -------------------===//
//
// The choice of a library kernel is recorded in the IR (the `library`
// attribute of dscrt.kernel), so tests see it and the emitter only follows
// it. Which bodies a library kernel accepts is decided in one place,
// dscrt::matchLibraryKernel, which the op's verifier checks against too.
//
//===----------------------------------------------------------------------===//

#include "dsc/Conversion/Passes.h"
#include "dsc/Dialect/DSCRT/IR/LibraryKernels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_SELECTLIBRARYKERNELS
#include "dsc/Conversion/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;

namespace {
struct SelectLibraryKernelsPass
    : public dsc::impl::SelectLibraryKernelsBase<SelectLibraryKernelsPass> {
  void runOnOperation() override {
    getOperation().walk([](dscrt::KernelOp kernel) {
      if (std::optional<StringRef> library =
              dscrt::matchLibraryKernel(kernel.getBody().front()))
        kernel.setLibraryAttr(StringAttr::get(kernel.getContext(), *library));
    });
  }
};
} // namespace
