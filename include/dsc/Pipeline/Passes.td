//===- Passes.td - dsc passes above the lowering ---------------*- tablegen -*-===//
//
// Passes that run the lowering pipeline (LoweringPipeline.h) on a copy of
// the module: they sit above both the graph passes (Transforms) and the
// lowering (Conversion), so that neither depends on the other.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_PIPELINE_PASSES_TD
#define DSC_PIPELINE_PASSES_TD

include "mlir/Pass/PassBase.td"

def StepReport : Pass<"dsc-step-report", "::mlir::ModuleOp"> {
  let summary = "prints each rank's memory and communication of the step";
  let description = [{
    Reports, for a training step after `--dsc-zero` (or any step with
    `dsc.world_size`), what every rank holds and sends (docs/zero.md,
    "Reports"): model states by ZeRO's accounting (parameters, reduced
    gradients, fp32 master weights, optimizer state), buffers, buckets,
    prefetch buffers, the activation arena of the memory plan (a copy of the
    module goes through the lowering pipeline dsc-compile runs, then is
    planned as `--dsc-plan-memory` plans it), the
    inputs and outputs, and the peak the runtime allocates; and every
    collective with the bytes each rank sends (the ring formulas dsc-run
    counts) and nccl-tests' bus bytes, per update (gradient accumulation
    repeats the step's collectives). The module is not changed.

    dsc-opt's `--dsc-report=memory,comm`, `--dsc-report-format=text|json`
    and `--dsc-report-file=PATH` run it at the end of the training pipeline.
  }];
  let dependentDialects = ["::mlir::dscrt::DSCRTDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    ListOption<"what", "report", "std::string",
               "what to report: memory, comm, estimate (DeepSpeed's "
               "estimator; default: memory and comm)">,
    Option<"format", "format", "std::string", /*default=*/"\"text\"",
           "text (tables) or json">,
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "file to write, '-' for stderr">,
  ];
}

#endif // DSC_PIPELINE_PASSES_TD
