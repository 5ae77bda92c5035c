//===- Passes.td - dsc conversion passes -----------------------*- tablegen -*-===//

#ifndef DSC_CONVERSION_PASSES_TD
#define DSC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToRuntime : Pass<"dsc-lower-to-runtime", "::mlir::ModuleOp"> {
  let summary = "lowers the dsc graph to buffers, kernels and collectives";
  let description = [{
    Rewrites the module's graph function (`@forward`) into `@step`, a
    function of the `dscrt` dialect with no arguments: graph inputs become
    `dscrt.input`, `dsc.load` becomes `dscrt.state` (indexed in `dsc.state`
    declaration order), `dsc.reshape` a `dscrt.view` (no copy), constants
    `dscrt.constant`, `dsc.all_reduce` a copy plus an in-place
    `dscrt.all_reduce`, the returned values `dscrt.output`s, and every other
    op a `dscrt.kernel` writing freshly allocated buffers (`dscrt.alloc`).

    A summed or averaged `dsc.cross_entropy` is first expanded into per-token
    losses (`reduction = none`, one parallel kernel) and reductions.

    Chains of elementwise ops are fused: an elementwise op whose single user
    is an elementwise op with the same result shape joins that user's
    kernel, so intermediate values never reach memory. An op whose other
    users are stores joins too, as one more output of the kernel (an
    optimizer's moments and update: one kernel per parameter).

    A stored value that an elementwise kernel computes is written straight
    into the state's memory, with no copy, when every read of the state's
    old value comes before that kernel or is inside it at the element it
    writes; otherwise (a later reader, a collective reading the state) the
    store copies it once every read is done.

    Example: `dsc-opt model.mlir --dsc-lower-to-runtime --dsc-plan-memory`.
  }];
  let dependentDialects = ["::mlir::dscrt::DSCRTDialect"];
  let options = [
    Option<"fuseElementwise", "fuse-elementwise", "bool", /*default=*/"true",
           "fuse chains of elementwise ops into one kernel">,
  ];
}

def SelectLibraryKernels
    : Pass<"dscrt-select-library", "::mlir::func::FuncOp"> {
  let summary = "records, on each dscrt.kernel, the library kernel that computes it";
  let description = [{
    Sets the `library` attribute of every `dscrt.kernel` whose body a kernel
    of dsc's kernel library computes (runtime/include/dsc/kernels/): a copy
    (a body that yields its inputs), `gemm` (dsc.matmul whose operands carry
    the whole batch or none of it, and dsc.linear), ... The emitter then
    calls that kernel instead of generating loops; a kernel left without the
    attribute (a fused elementwise chain, an op or element type the library
    lacks) keeps its generated loops. docs/kernels.md lists the kernels.

    Example: `dsc-opt model.mlir --dsc-lower-to-runtime --dscrt-select-library
    --dsc-plan-memory`.
  }];
}

#endif // DSC_CONVERSION_PASSES_TD
