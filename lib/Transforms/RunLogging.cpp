//===- RunLogging.cpp - --dsc-run-logging ----------------------------------===//
//
// How dsc-run logs a run is the config's (steps_per_print, csv_monitor),
// so it travels with the artifact: module attributes here, a string the
// emitters compile in, dsc-run's defaults there.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_RUNLOGGING
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

namespace {
struct RunLoggingPass : public dsc::impl::RunLoggingBase<RunLoggingPass> {
  using RunLoggingBase::RunLoggingBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder builder(module.getContext());
    if (stepsPerPrint < 0) {
      module.emitError() << "steps-per-print must be positive, got "
                         << stepsPerPrint;
      return signalPassFailure();
    }
    if (stepsPerPrint > 0)
      module->setAttr(DSCDialect::kStepsPerPrintAttrName,
                      builder.getI64IntegerAttr(stepsPerPrint));
    if (!csvMonitor.empty())
      module->setAttr(DSCDialect::kCsvMonitorAttrName,
                      builder.getStringAttr(csvMonitor));
  }
};
} // namespace
