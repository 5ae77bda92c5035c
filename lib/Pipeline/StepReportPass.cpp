//===- StepReportPass.cpp - --dsc-step-report ------------------------------===//
//
// Prints the StepReport of the module (include/dsc/Analysis/StepReport.h).
// The activation arena is a property of the lowered step, so the pass runs
// dsc-compile's lowering pipeline (LoweringPipeline.h) on a copy of the
// module, plans it as --dsc-plan-memory does, and reads the plan's size,
// the figure the runtime's allocator reproduces, and what fills it at its
// busiest point.
//
//===----------------------------------------------------------------------===//

#include "dsc/Analysis/ArenaBuffers.h"
#include "dsc/Analysis/StepReport.h"
#include "dsc/Pipeline/LoweringPipeline.h"
#include "dsc/Pipeline/Passes.h"
#include "dsc/Transforms/PrintToOutput.h"

#include "mlir/Pass/PassManager.h"


namespace mlir::dsc {
#define GEN_PASS_DEF_STEPREPORT
#include "dsc/Pipeline/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

namespace {
struct StepReportPass : public dsc::impl::StepReportBase<StepReportPass> {
  using StepReportBase::StepReportBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    markAllAnalysesPreserved();
    StepReport::Parts parts;
    parts.memory = parts.comm = what.empty();
    for (const std::string &item : what) {
      if (item == "memory")
        parts.memory = true;
      else if (item == "comm")
        parts.comm = true;
      else if (item == "estimate")
        parts.estimate = true;
      else {
        module.emitError() << "--dsc-report: unknown report '" << item
                           << "'; expected memory, comm or estimate";
        return signalPassFailure();
      }
    }
    if (format != "text" && format != "json") {
      module.emitError() << "--dsc-report-format: '" << format
                         << "' is not text or json";
      return signalPassFailure();
    }

    int64_t arena = 0, hostArena = 0;
    ArenaPeak peak;
    TransferReport transfers;
    if (parts.memory &&
        failed(planArena(module, arena, hostArena, peak, transfers)))
      return signalPassFailure();
    StepReport report = StepReport::compute(module, arena);
    report.arenaPeak = std::move(peak);
    report.memory.hostArena = hostArena;
    report.transfers = transfers;

    if (failed(printToOutput(module, output, "--dsc-report-file",
                             [&](raw_ostream &os) {
                               if (format == "json")
                                 report.printJson(os, parts);
                               else
                                 report.printText(os, parts);
                             })))
      return signalPassFailure();
  }

  static int64_t bufferBytes(Type type) {
    auto memref = cast<MemRefType>(type);
    return memref.getNumElements() *
           int64_t(memref.getElementType().getIntOrFloatBitWidth() / 8);
  }

  /// Copies between host and device memory per update: those before a
  /// dscrt.micro_step_exit run on every micro-batch (gradient accumulation).
  static void countTransfers(func::FuncOp step, ModuleOp module,
                             TransferReport &transfers) {
    auto accum = module->getAttrOfType<IntegerAttr>(DSCDialect::kGradAccumAttrName);
    int64_t perMicroBatch = accum ? accum.getInt() : 1;
    bool afterExit = false;
    for (Operation &op : step.getBody().front()) {
      afterExit |= isa<dscrt::MicroStepExitOp>(op);
      // NVMe reads and writes run once per update: after the exit.
      if (auto read = dyn_cast<dscrt::NvmeReadOp>(op)) {
        transfers.nvmeReads += 1;
        transfers.nvmeReadBytes += bufferBytes(read.getTarget().getType());
        continue;
      }
      if (auto write = dyn_cast<dscrt::NvmeWriteOp>(op)) {
        transfers.nvmeWrites += 1;
        transfers.nvmeWriteBytes += bufferBytes(write.getSource().getType());
        continue;
      }
      auto copy = dyn_cast<dscrt::CopyOp>(op);
      if (!copy)
        continue;
      bool fromHost = dscrt::DSCRTDialect::isHostMemory(copy.getSource().getType());
      bool toHost = dscrt::DSCRTDialect::isHostMemory(copy.getTarget().getType());
      if (fromHost == toHost)
        continue;
      int64_t times = afterExit ? 1 : perMicroBatch;
      int64_t bytes = bufferBytes(copy.getTarget().getType()) * times;
      if (toHost) {
        transfers.d2hCalls += times;
        transfers.d2hBytes += bytes;
      } else {
        transfers.h2dCalls += times;
        transfers.h2dBytes += bytes;
      }
    }
  }

  /// The arena dsc-compile's memory plan gives the step, from a lowered
  /// copy of the module (planned as --dsc-plan-memory plans it), and what
  /// is alive at the busiest point of the largest function's plan.
  LogicalResult planArena(ModuleOp module, int64_t &arena, int64_t &hostArena,
                          ArenaPeak &peak, TransferReport &transfers) {
    OwningOpRef<ModuleOp> copy = module.clone();
    PassManager pm(module.getContext());
    buildLoweringPipeline(pm);
    if (failed(pm.run(*copy)))
      return module.emitError() << "--dsc-report: the step cannot be lowered "
                                   "to plan its memory (see the errors above)";
    // Each arena planned as --dsc-plan-memory plans it (the host arena's
    // copies live for the whole step; its NVMe buffers take turns).
    auto plan = [](func::FuncOp func, bool host,
                   SmallVector<ArenaBuffer> &buffers) -> FailureOr<BufferPlan> {
      FailureOr<SmallVector<ArenaBuffer>> collected =
          collectArenaBuffers(func, host);
      if (failed(collected))
        return failure();
      buffers = std::move(*collected);
      std::optional<BufferPlan> placed = planBuffers(
          llvm::map_to_vector(buffers,
                              [](const ArenaBuffer &b) { return b.request; }),
          kArenaAlignment);
      if (!placed)
        return func.emitError() << "memory plan overflows int64";
      return *placed;
    };
    int64_t largest = -1;
    for (auto func : copy->getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      SmallVector<ArenaBuffer> buffers, hostBuffers;
      FailureOr<BufferPlan> devicePlan = plan(func, false, buffers);
      FailureOr<BufferPlan> hostPlan = plan(func, true, hostBuffers);
      if (failed(devicePlan) || failed(hostPlan))
        return failure();
      arena += devicePlan->arenaBytes;
      hostArena += hostPlan->arenaBytes;
      countTransfers(func, module, transfers);
      if (devicePlan->arenaBytes > largest) {
        largest = devicePlan->arenaBytes;
        peak = describeBusiestPoint(func, buffers, *devicePlan);
      }
    }
    return success();
  }
};
} // namespace
