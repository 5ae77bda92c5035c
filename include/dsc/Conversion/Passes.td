//===- Passes.td - dsc conversion passes -----------------------*- tablegen -*-===//

#ifndef DSC_CONVERSION_PASSES_TD
#define DSC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def DecomposeForLibrary
    : Pass<"dsc-decompose-for-library", "::mlir::func::FuncOp"> {
  let summary = "rewrites the graph into ops the kernel library computes";
  let description = [{
    The first pass of the lowering (`--dsc-lower-to-runtime`). It checks
    what the lowering assumes of the graph function (one block, statically
    shaped tensors in and out: a diagnostic otherwise), then rewrites it:

    - a summed or averaged `dsc.cross_entropy` becomes per-token losses
      (`reduction = none`, one parallel kernel) and reductions;
    - i32 index operands become i64 (`dsc.convert`), the library's index
      type; a `dsc.scatter_add` of i1 data becomes a sum on i64 and `!= 0`;
    - a reduction over dims that are not adjacent becomes a `dsc.permute`
      that moves them last and a reduction over the trailing dims;
    - a batched `dsc.matmul` whose operand broadcasts some batch dims only
      gets a `dsc.broadcast` of that operand to the whole batch (one
      strided-batched GEMM).

    With gradient accumulation it also orders the graph around its
    `dsc.optimizer_boundary`: the ops that read the boundary's results,
    directly or not, run once per optimizer step and move after it; every
    other op moves before it, each side keeping its order. A call that ends
    no optimizer step then stops at the boundary.

    Example: `dsc-opt model.mlir --dsc-decompose-for-library`.
  }];
}

def FormKernels : Pass<"dsc-form-kernels", "::mlir::func::FuncOp"> {
  let summary = "decides which elementwise ops run as one kernel";
  let description = [{
    Groups chains of elementwise ops into fused kernels and records each
    group of two or more ops as a `dsc.fusion_group = N` attribute on its
    members (groups numbered from 0 in the order of their last op, where
    `--dsc-convert-to-runtime` emits the group's `dscrt.kernel`); an op
    without the attribute is a kernel of its own.

    An elementwise op joins the group of an elementwise user with the same
    result shape when that user is its only reader besides stores, so the
    intermediate value never reaches memory; a stored intermediate (an
    optimizer's moments beside its parameter's update) becomes one more
    output of the kernel. Ops on both sides of a `dsc.optimizer_boundary`
    never share a kernel, nor do ops on both sides of a pipeline transfer
    (`dsc.pipeline_send`, `dsc.pipeline_recv`): a group runs at its last
    op, which would move its earlier ops into a later action of the
    stage's schedule (a weight gradient's running sum over the
    micro-batches into the last micro-batch's backward).

    ```mlir
    %a = dsc.mul %x, %y {dsc.fusion_group = 0 : i64} : ...
    %b = dsc.add %a, %z {dsc.fusion_group = 0 : i64} : ...
    ```

    Example: `dsc-opt model.mlir --dsc-decompose-for-library --dsc-form-kernels`.
  }];
  let options = [
    Option<"fuseElementwise", "fuse-elementwise", "bool", /*default=*/"true",
           "fuse chains of elementwise ops into one kernel (false: every op "
           "is a kernel of its own)">,
  ];
}

def ConvertToRuntime : Pass<"dsc-convert-to-runtime", "::mlir::ModuleOp"> {
  let summary = "converts the dsc graph to buffers, kernels and collectives";
  let description = [{
    Rewrites the module's graph function (`@forward`) into `@step`, a
    function of the `dscrt` dialect with no arguments: graph inputs become
    `dscrt.input`, `dsc.load` becomes `dscrt.state` (indexed in `dsc.state`
    declaration order), `dsc.reshape` a `dscrt.view` (no copy), constants
    `dscrt.constant`, `dsc.all_reduce` a copy plus an in-place
    `dscrt.all_reduce`, the returned values `dscrt.output`s, and every other
    op a `dscrt.kernel` writing freshly allocated buffers (`dscrt.alloc`).
    The ops of one `dsc.fusion_group` (`--dsc-form-kernels`) become one
    `dscrt.kernel`, emitted where the group's last op is.

    A stored value that an elementwise kernel computes is written straight
    into the state's memory, with no copy, when every read of the state's
    old value comes before that kernel or is inside it at the element it
    writes; otherwise (a later reader, a collective reading the state) the
    store copies it once every read is done.

    Every launch goes on one stream, "compute", in program order, but the
    collectives, which the dialect gives a stream of their own ("comm",
    created with the first); no events order the two, and the step ends
    with a `dscrt.synchronize` of compute: a serial step that
    `--dscrt-assign-streams` spreads over the streams that run work beside
    compute, and orders by events. The program order is this pass's decision: with
    ZeRO-Infinity, each sub-group's NVMe states are read
    `dsc.nvme_buffer_count` updates ahead (from the point where the step is
    sure to reach its updates: after the evaluation or micro-step exit) and
    written back after their update; NVMe parameters are read
    `dsc.nvme_param_buffer_count` loads ahead.

    It expects the graph that `--dsc-decompose-for-library` leaves (ordered
    around its optimizer boundary); `--dsc-lower-to-runtime` runs the
    lowering's passes in order.

    Example: `dsc-opt model.mlir --dsc-decompose-for-library
    --dsc-form-kernels --dsc-convert-to-runtime`.
  }];
  let dependentDialects = ["::mlir::dscrt::DSCRTDialect"];
}

def AssignStreams : Pass<"dscrt-assign-streams", "::mlir::func::FuncOp"> {
  let summary = "moves the step's work onto streams and orders them by events";
  let description = [{
    Takes the serial step `--dsc-convert-to-runtime` produces (every launch
    on the one `dscrt.stream "compute"`) and moves each launch that need
    not run on compute to the stream of its kind of work, created with its
    first use (listed after compute, the latest first): collectives and
    pipeline transfers on "comm", copies from device to host memory on
    "d2h" and back on "h2d" (not the copies of the step's inputs and
    outputs, which stay on compute), kernels writing host buffers (the
    optimizer's update on the host CPU) on "host", NVMe reads and writes on
    "nvme". Program order does not change.

    It orders each reader after its writer on another stream with a
    `dscrt.record` of the writer's stream and a `dscrt.wait` of the
    reader's, placed before the reader's output buffers are taken; one
    wait for an event covers every earlier event of that stream:

    - a collective waits for compute's work so far; compute waits for its
      result where a kernel, a store or an output reads it, and for all
      but the last two collectives in flight, whose buffers are then free
      (DeepSpeed's double-buffered buckets);
    - a copy to the host waits for compute and for the collective or copy
      that wrote its source; host kernels wait for it where they read its
      result, and compute for all but the last two (their device buffers
      are then free) and for all of them before it writes a state;
    - a copy to the device waits for host and compute (and for the NVMe
      read of a parameter it copies); compute waits for it where it reads
      the result;
    - NVMe reads wait for host's work (and h2d's, when parameters are read
      from NVMe) so far, whose buffers they may reuse; the reads one host
      update reads are one event, which the update waits for; writes wait
      for the host's update;
    - host writes a parameter's state after the copies to the device so
      far;
    - at the step's end compute waits for every event not waited for and
      each stream is synchronized.

    A function with a stream other than "compute", or a launch on another
    stream, is an error: the pass places streams once.

    ```mlir
    %compute = dscrt.stream "compute"
    %comm = dscrt.stream "comm"
    ...
    %e = dscrt.record %compute
    dscrt.wait %comm for %e
    dscrt.all_reduce %buf on %comm seq 0 : memref<8xf32>
    ```

    Example: `dsc-opt model.mlir --dsc-decompose-for-library
    --dsc-form-kernels --dsc-convert-to-runtime --dscrt-assign-streams`.
  }];
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

def VerifyStep : Pass<"dscrt-verify-step", "::mlir::func::FuncOp"> {
  let summary = "checks that the step's streams are ordered where they share buffers";
  let description = [{
    Checks, on each function with `dscrt.stream`s (the step), what the
    lowering guarantees and the emitter and `--dsc-plan-memory` rely on.
    Each stream runs its work in order; work on another stream is ordered
    after it only through a `dscrt.record` of that stream and a
    `dscrt.wait` for it (transitively), or a `dscrt.synchronize` of it
    before the host enqueues the work. A located error for:

    - a launch (kernel, copy, collective, NVMe read or write) that reads a
      buffer another stream wrote, or overwrites a buffer another stream
      wrote or reads, without being ordered after that work (a view uses
      its source's memory; every `dscrt.state` of one index is one state);
    - a read of a buffer nothing has written (states, inputs, the step key
      and constants hold values when the step starts);
    - a `dscrt.alloc` nothing uses;
    - work on a stream that is not a `dscrt.stream` of the function;
    - a return before every stream with work is synchronized (the runtime
      reads the outputs once the step returns).

    It checks buffers by their values, before `--dsc-plan-memory` places
    them in the arena. `--dsc-lower-to-runtime` ends with it.

    Example: `dsc-opt step.mlir --dscrt-verify-step`.
  }];
}

#endif // DSC_CONVERSION_PASSES_TD
