//===- PrintSummary.cpp - --dsc-print-summary ------------------------------===//

#include "dsc/Analysis/ModuleSummary.h"
#include "dsc/Transforms/Passes.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_PRINTSUMMARY
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;

namespace {
struct PrintSummaryPass
    : public dsc::impl::PrintSummaryBase<PrintSummaryPass> {
  void runOnOperation() override {
    dsc::ModuleSummary::compute(getOperation()).print(llvm::errs());
    markAllAnalysesPreserved();
  }
};
} // namespace
