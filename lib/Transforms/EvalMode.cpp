//===- EvalMode.cpp - --dsc-eval-mode --------------------------------------===//
//
// model.eval() in the graph: dropouts pass their input through. (Batch
// norm's running statistics would be the other difference; dsc has no
// batch norm.)
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Transforms/Passes.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_EVALMODE
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

namespace {
struct EvalModePass : public dsc::impl::EvalModeBase<EvalModePass> {
  void runOnOperation() override {
    getOperation().walk([](DropoutOp dropout) {
      dropout.getResult().replaceAllUsesWith(dropout.getInput());
      dropout.erase();
    });
    getOperation().walk([](StepKeyOp key) {
      if (key->use_empty())
        key.erase();
    });
  }
};
} // namespace
