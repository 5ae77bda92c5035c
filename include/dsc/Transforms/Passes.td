//===- Passes.td - dsc passes ----------------------------------*- tablegen -*-===//

#ifndef DSC_TRANSFORMS_PASSES_TD
#define DSC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PrintSummary : Pass<"dsc-print-summary", "::mlir::ModuleOp"> {
  let summary = "prints what a model module contains";
  let description = [{
    Prints a one-screen summary of the module to standard error and leaves the
    IR unchanged: every `dsc.state` by name with its role, shape and dtype;
    the parameter and buffer totals (elements and bytes); each graph's named
    inputs and outputs; and the number of operations of each kind.

    Example:

    ```
    dsc-opt examples/gpt2_tiny.mlir --dsc-print-summary
    ```
  }];
}

#endif // DSC_TRANSFORMS_PASSES_TD
