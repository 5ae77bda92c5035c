//===- DSCRTOps.td - the runtime-call level ---------------------*- tablegen -*-===//
//
// What a step is once it is lowered: buffers at offsets of one arena, kernel
// launches, collectives and copies, in the order the runtime executes them.
// The emitter (dsc-translate --dscrt-to-cpp) prints this level as C++.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_DIALECT_DSCRT_IR_DSCRTOPS_TD
#define DSC_DIALECT_DSCRT_IR_DSCRTOPS_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "dsc/Dialect/DSC/IR/DSCEnums.td"
include "dsc/Dialect/DSCRT/IR/DSCRTInterfaces.td"

def DSCRT_Dialect : Dialect {
  let name = "dscrt";
  let cppNamespace = "::mlir::dscrt";
  let summary = "dsc's runtime-call level: buffers, kernels, collectives, "
                "copies, streams and events";
  let description = [{
    The lowering of a dsc graph (`--dsc-lower-to-runtime`) produces this
    level; `--dsc-plan-memory` assigns arena offsets; the emitter prints it as
    C++ against the runtime's artifact interface (runtime/include/dsc/runtime/
    Artifact.h). Buffers are builtin memrefs with the identity layout, in
    device memory (no memory space: where kernels run) or in host memory
    (memory space `#dscrt.host`: the graph's inputs and outputs, which the
    runtime fills and reads on the host). Every buffer, launch, collective,
    copy, stream, event and wait is an op, in the order the host issues
    them: the runtime invents nothing.

    Work runs on named streams (`dscrt.stream`), in order within a stream;
    `dscrt.record` and `dscrt.wait` order one stream after a point of
    another, and `dscrt.synchronize` makes the host wait for a stream.

    ```mlir
    func.func @step() attributes {dscrt.arena_bytes = 4096 : i64} {
      %s = dscrt.stream "compute"
      %w = dscrt.state 0 "fc.weight" : memref<4x8xf32>
      %hx = dscrt.input 0 "x" : memref<2x8xf32, #dscrt.host>
      %x = dscrt.buffer 0 : memref<2x8xf32>
      dscrt.copy %hx to %x on %s : memref<2x8xf32, #dscrt.host> to memref<2x8xf32>
      %y = dscrt.buffer 256 : memref<2x4xf32>
      dscrt.kernel on %s ins(%x, %w : memref<2x8xf32>, memref<4x8xf32>)
                   outs(%y : memref<2x4xf32>) {
      ^bb0(%a: tensor<2x8xf32>, %b: tensor<4x8xf32>):
        %r = dsc.linear %a, %b : tensor<2x8xf32>, tensor<4x8xf32>
        dscrt.yield %r : tensor<2x4xf32>
      }
      %hy = dscrt.output 0 "y" : memref<2x4xf32, #dscrt.host>
      dscrt.copy %y to %hy on %s : memref<2x4xf32> to memref<2x4xf32, #dscrt.host>
      dscrt.synchronize %s
      return
    }
    ```
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Whether `type` is in host memory (memory space #dscrt.host).
    static bool isHostMemory(::mlir::MemRefType type);

    /// Function attribute: bytes of the per-rank arena (set by planning).
    static constexpr ::llvm::StringLiteral kArenaBytesAttrName = "dscrt.arena_bytes";
    /// Function attribute: bytes of the per-rank arena of pinned host
    /// memory (host buffers: ZeRO-Offload's copies), set by planning.
    static constexpr ::llvm::StringLiteral kHostArenaBytesAttrName =
        "dscrt.host_arena_bytes";
    /// The stream kernels on device buffers run on; the lowering creates
    /// it first. Other streams' buffers are free once it waited for them.
    static constexpr ::llvm::StringLiteral kComputeStreamName = "compute";
    /// The stream of the collectives, which the lowering creates with the
    /// first.
    static constexpr ::llvm::StringLiteral kCollectiveStreamName = "comm";
  }];
}

class DSCRT_Op<string mnemonic, list<Trait> traits = []>
    : Op<DSCRT_Dialect, mnemonic, traits>;

/// An op that enqueues work on its `$stream` operand.
class DSCRT_StreamUserOp<string mnemonic, list<Trait> traits = []>
    : DSCRT_Op<mnemonic, traits # [
        DeclareOpInterfaceMethods<DSCRT_StreamUserOpInterface>]>;

/// A collective (or pipeline transfer): work on the collective stream.
class DSCRT_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : DSCRT_Op<mnemonic, traits # [
        DeclareOpInterfaceMethods<DSCRT_StreamUserOpInterface,
                                  ["isCollective"]>]> {
  let extraClassDefinition = [{
    bool $cppClass::isCollective() { return true; }
  }];
}

//===----------------------------------------------------------------------===//
// Memory spaces, streams and events
//===----------------------------------------------------------------------===//

def DSCRT_HostMemoryAttr : AttrDef<DSCRT_Dialect, "HostMemory"> {
  let mnemonic = "host";
  let summary = "memory space of buffers in host memory";
  let description = [{
    A memref in memory space `#dscrt.host` is in host memory: the graph's
    inputs and outputs, which the runtime fills and reads on the host. A
    memref without a memory space is in device memory, where kernels and
    collectives run (the same host memory on the CPU target). Only
    `dscrt.copy` moves data between the two.

    ```mlir
    %t = dscrt.input 0 "tokens" : memref<2x8xi64, #dscrt.host>
    ```
  }];
}

def DSCRT_StreamType : TypeDef<DSCRT_Dialect, "Stream"> {
  let mnemonic = "stream";
  let summary = "an in-order queue of work (runtime Stream)";
}

def DSCRT_EventType : TypeDef<DSCRT_Dialect, "Event"> {
  let mnemonic = "event";
  let summary = "a point in one stream's queue (runtime Event)";
}

def DSCRT_AnyBuffer : StaticShapeMemRefOf<[F64, F32, F16, BF16, I64, I32, I1]>;

def DSCRT_Buffer : Type<And<[DSCRT_AnyBuffer.predicate,
    CPred<"!::llvm::cast<::mlir::MemRefType>($_self).getMemorySpace()">]>,
    "statically shaped memref in device memory",
    "::mlir::MemRefType">;

def DSCRT_HostBuffer : Type<And<[DSCRT_AnyBuffer.predicate,
    CPred<"::mlir::dscrt::DSCRTDialect::isHostMemory("
          "::llvm::cast<::mlir::MemRefType>($_self))">]>,
    "statically shaped memref in host memory (#dscrt.host)",
    "::mlir::MemRefType">;

def DSCRT_StateOp : DSCRT_Op<"state", [Pure]> {
  let summary = "the storage of a named parameter or buffer";
  let description = [{
    State `index` in the artifact's state table, which the runtime fills from
    the weights file by `name`. State lives outside the arena, in device
    memory, or in pinned host memory (`#dscrt.host`) for a state on the
    host (ZeRO-Offload's optimizer state: `dsc.state ... on host`), which
    the artifact's state table records and the runtime allocates there.

    ```mlir
    %w = dscrt.state 3 "h.0.attn.c_attn.weight" : memref<96x32xf32>
    %m = dscrt.state 4 "h.0.attn.c_attn.weight.exp_avg" : memref<96x32xf32, #dscrt.host>
    ```
  }];
  let arguments = (ins I64Attr:$index, StrAttr:$name);
  let results = (outs DSCRT_AnyBuffer:$result);
  let assemblyFormat = "$index $name attr-dict `:` type($result)";
}

def DSCRT_InputOp : DSCRT_Op<"input", [Pure]> {
  let summary = "a graph input the runtime feeds each step, in host memory";
  let description = [{
    Input `index` of the artifact's input table: a host buffer the runtime
    fills before each step. Kernels read a `dscrt.copy` of it in device
    memory.

    ```mlir
    %t = dscrt.input 0 "tokens" : memref<2x8xi64, #dscrt.host>
    ```
  }];
  let arguments = (ins I64Attr:$index, StrAttr:$name);
  let results = (outs DSCRT_HostBuffer:$result);
  let assemblyFormat = "$index $name attr-dict `:` type($result)";
}

def DSCRT_StepKeyOp : DSCRT_Op<"step_key", [Pure]> {
  let summary = "dsc.step_key's four integers, in host memory";
  let description = [{
    The host buffer the runtime fills before each call of the step with
    the run's seed, the optimizer step, this call's first sample in the
    step's global batch and whether the step trains (dsc.step_key,
    StepContext::stepKey). Kernels read a `dscrt.copy` of it in device
    memory. With `sample_offset` (dsc.step_key's; default 0, at least 0)
    the buffer is a copy of those integers whose third is `sample_offset`
    larger, made when the step reaches the op.

    ```mlir
    %k = dscrt.step_key : memref<4xi64, #dscrt.host>
    %k2 = dscrt.step_key sample_offset = 2 : memref<4xi64, #dscrt.host>
    ```
  }];
  let arguments = (ins DefaultValuedAttr<I64Attr, "0">:$sample_offset);
  let results = (outs DSCRT_HostBuffer:$result);
  let assemblyFormat = [{
    (`sample_offset` `=` $sample_offset^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def DSCRT_AllocOp : DSCRT_Op<"alloc", [Pure]> {
  let summary = "a buffer not yet placed in the arena";
  let description = [{
    Produced by the lowering; `--dsc-plan-memory` replaces every alloc by a
    `dscrt.buffer` at a planned offset. The emitter rejects allocs. A host
    buffer (`#dscrt.host`: a tensor copied to the host, ZeRO-Offload) is
    placed in the host arena.

    ```mlir
    %b = dscrt.alloc : memref<2x8x32xf32>
    %h = dscrt.alloc : memref<8xbf16, #dscrt.host>
    ```
  }];
  let results = (outs DSCRT_AnyBuffer:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def DSCRT_BufferOp : DSCRT_Op<"buffer", [Pure]> {
  let summary = "a buffer at a static offset of the arena";
  let description = [{
    `offset` is a multiple of 256 bytes and the buffer ends within the
    function's `dscrt.arena_bytes`; a host buffer (`#dscrt.host`) within
    its `dscrt.host_arena_bytes`, the arena of pinned host memory.

    ```mlir
    %b = dscrt.buffer 4096 : memref<2x8x32xf32>
    %h = dscrt.buffer 0 : memref<8xbf16, #dscrt.host>
    ```
  }];
  let arguments = (ins I64Attr:$offset);
  let results = (outs DSCRT_AnyBuffer:$result);
  let assemblyFormat = "$offset attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def DSCRT_ConstantOp : DSCRT_Op<"constant", [Pure]> {
  let summary = "a literal buffer, compiled into the artifact";
  let description = [{
    ```mlir
    %c = dscrt.constant dense<[0, 1, 2, 3]> : tensor<4xi64> : memref<4xi64>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs DSCRT_Buffer:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def DSCRT_ViewOp : DSCRT_Op<"view", [Pure]> {
  let summary = "the same bytes with another shape (a reshape costs nothing)";
  let description = [{
    Row-major buffers reshape without copying. Element type, element
    count and memory space are unchanged: a view of a host buffer
    (`#dscrt.host`, ZeRO-Offload's optimizer update flattening its results
    before their copy to the device) is a host buffer.

    ```mlir
    %v = dscrt.view %b : memref<2x8x32xf32> to memref<16x32xf32>
    ```
  }];
  let arguments = (ins DSCRT_AnyBuffer:$source);
  let results = (outs DSCRT_AnyBuffer:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `to` type($result)";
  let hasVerifier = 1;
}

def DSCRT_KernelOp : DSCRT_StreamUserOp<"kernel", [AttrSizedOperandSegments,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "one kernel launch: dsc ops over tensors bound to buffers";
  let description = [{
    The body computes, from tensors holding the contents of `ins`, the
    tensors stored into `outs` (yielded in order). A body is one dsc op, or
    a chain of elementwise dsc ops fused into one kernel. Block arguments
    have the tensor types of `ins`; yielded values the tensor types of
    `outs`.

    The launch is enqueued on `stream`. Its buffers are all in device
    memory, or all in host memory (`#dscrt.host`): a kernel of the host
    (ZeRO-Offload's optimizer update), which runs on the host CPU on a
    stream of its own.

    `library`, when present, names the kernel of dsc's kernel library
    (runtime/include/dsc/kernels/) that computes the body; the emitter calls
    it instead of generating loops. `--dscrt-select-library` chooses it
    (docs/kernels.md lists the kernels and what each computes); the verifier
    checks that the body is what that kernel computes.

    ```mlir
    dscrt.kernel "softmax" on %compute ins(%x : memref<4x16xf32>)
                 outs(%y : memref<4x16xf32>) {
    ^bb0(%a: tensor<4x16xf32>):
      %r = dsc.softmax %a, dim = 1 : tensor<4x16xf32>
      dscrt.yield %r : tensor<4x16xf32>
    }
    ```

    ```mlir
    dscrt.kernel on %compute ins(%a, %b : memref<8xf32>, memref<8xf32>)
                 outs(%c : memref<8xf32>) {
    ^bb0(%x: tensor<8xf32>, %y: tensor<8xf32>):
      %s = dsc.add %x, %y : tensor<8xf32>, tensor<8xf32>
      %t = dsc.tanh %s : tensor<8xf32>
      dscrt.yield %t : tensor<8xf32>
    }
    ```
  }];
  let arguments = (ins DSCRT_StreamType:$stream, Variadic<DSCRT_AnyBuffer>:$ins,
                       Variadic<DSCRT_AnyBuffer>:$outs,
                       OptionalAttr<StrAttr>:$library);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    ($library^)? `on` $stream `ins` `(` ($ins^ `:` type($ins))? `)` `outs` `(` $outs `:` type($outs) `)`
    $body attr-dict
  }];
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$stream,
                                 "::mlir::ValueRange":$ins,
                                 "::mlir::ValueRange":$outs)>];
}

def DSCRT_YieldOp : DSCRT_Op<"yield", [Pure, Terminator, HasParent<"KernelOp">]> {
  let summary = "the tensors a kernel stores into its outputs";
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{
    build($_builder, $_state, ::mlir::ValueRange());
  }]>];
}

def DSCRT_AllReduceOp : DSCRT_CollectiveOp<"all_reduce"> {
  let summary = "in-place sum of a buffer over all ranks, on a stream";
  let description = [{
    Every rank issues the same all-reduces in the same order; `sequence`
    numbers them within the step (the runtime's watchdog reports it). The
    collective is enqueued on `stream`; all collectives of a function run
    on one stream (the runtime binds its communicator to it), which is not
    the stream of any kernel or copy, so that they can overlap compute. The
    stream must wait for the event of the work that wrote `buffer`, and
    whoever reads the sum must wait for an event recorded after it.

    ```mlir
    dscrt.all_reduce %b on %comm {sequence = 0 : i64} : memref<2xf32>
    ```

    `maximum`: the elementwise maximum instead of the sum. `stages`: the
    sum over the ranks of the pipeline group at those stages only (as
    dsc.all_reduce's), which the other stages do not issue.
  }];
  let arguments = (ins DSCRT_Buffer:$buffer, DSCRT_StreamType:$stream,
                       I64Attr:$sequence, DefaultValuedAttr<DSC_CollectiveGroup,
                           "::mlir::dsc::CollectiveGroup::world">:$group,
                       UnitAttr:$maximum,
                       OptionalAttr<DenseI64ArrayAttr>:$stages);
  let assemblyFormat =
      "$buffer `on` $stream (`over` $group^)? (`stages` $stages^)? (`maximum` $maximum^)? attr-dict `:` type($buffer)";
  // Over every rank of the group: no stages.
  let builders = [
    OpBuilder<(ins "::mlir::Value":$buffer, "::mlir::Value":$stream,
                   "int64_t":$sequence,
                   CArg<"::mlir::dsc::CollectiveGroup",
                        "::mlir::dsc::CollectiveGroup::world">:$group,
                   CArg<"bool", "false">:$maximum), [{
      build($_builder, $_state, buffer, stream, sequence, group, maximum,
            ::mlir::DenseI64ArrayAttr());
    }]>
  ];
  let hasVerifier = 1;
}

def DSCRT_AllToAllOp : DSCRT_CollectiveOp<"all_to_all"> {
  let summary = "in-place exchange of one block with every rank of a group";
  let description = [{
    `buffer` holds N equal blocks, N the size of the group (`over`): block j
    goes to the group's rank j and is replaced by the block rank j sent to
    this rank (the lowering of `dsc.all_to_all`). Ordered, numbered and
    streamed as `dscrt.all_reduce`.

    ```mlir
    dscrt.all_to_all %b on %comm over expert {sequence = 2 : i64} : memref<4x3x8xf32>
    ```
  }];
  let arguments = (ins DSCRT_Buffer:$buffer, DSCRT_StreamType:$stream,
                       I64Attr:$sequence, DefaultValuedAttr<DSC_CollectiveGroup,
                           "::mlir::dsc::CollectiveGroup::world">:$group);
  let assemblyFormat =
      "$buffer `on` $stream (`over` $group^)? attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def DSCRT_PipelineSendOp : DSCRT_CollectiveOp<"pipeline_send"> {
  let summary = "sends a buffer to a neighbouring pipeline stage, on a stream";
  let description = [{
    The lowering of `dsc.pipeline_send`: the `count` elements of `buffer`
    go to this rank's `next` or `previous` stage in its pipeline group,
    where a `dscrt.pipeline_recv` from the opposite side with the same
    `micro_batch` and type receives them. Enqueued on the collectives
    stream and numbered as `dscrt.all_reduce`; the runtime copies the
    buffer aside as the send runs, so a send never waits for its receiver
    (which is what makes the stages' schedules free of deadlock: a stage
    only ever waits for a receive whose send its peer issues without
    waiting). `micro_batch` tags the message.

    ```mlir
    dscrt.pipeline_send %b to next on %comm {micro_batch = 1 : i64, sequence = 4 : i64} : memref<2x16x32xf32>
    ```
  }];
  let arguments = (ins DSCRT_Buffer:$buffer, DSCRT_StreamType:$stream,
                       DSC_PipelinePeer:$peer, I64Attr:$micro_batch,
                       I64Attr:$sequence);
  let assemblyFormat =
      "$buffer `to` $peer `on` $stream attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def DSCRT_PipelineRecvOp : DSCRT_CollectiveOp<"pipeline_recv"> {
  let summary = "receives a buffer from a neighbouring pipeline stage, on a stream";
  let description = [{
    The lowering of `dsc.pipeline_recv`: `buffer` receives what the
    `previous` or `next` stage sends with the matching
    `dscrt.pipeline_send` (same `micro_batch`, same type). Enqueued on the
    collectives stream and numbered as `dscrt.all_reduce`; readers of
    `buffer` wait for an event recorded after it.

    ```mlir
    dscrt.pipeline_recv %b from previous on %comm {micro_batch = 1 : i64, sequence = 4 : i64} : memref<2x16x32xf32>
    ```
  }];
  let arguments = (ins DSCRT_Buffer:$buffer, DSCRT_StreamType:$stream,
                       DSC_PipelinePeer:$peer, I64Attr:$micro_batch,
                       I64Attr:$sequence);
  let assemblyFormat =
      "$buffer `from` $peer `on` $stream attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def DSCRT_AllGatherOp : DSCRT_CollectiveOp<"all_gather"> {
  let summary = "gathers every rank's shard into a buffer, on a stream";
  let description = [{
    `target` (W * S elements) receives the S elements of every rank's
    `source`, rank 0's first; W is the size of the group (`over`; the
    module's `dsc.world_size` for `world`). Ordered,
    numbered and streamed as `dscrt.all_reduce`: the collectives stream
    waits for the event of the work that wrote `source`, and readers of
    `target` wait for an event recorded after it.

    ```mlir
    dscrt.all_gather %shard to %whole on %comm {sequence = 3 : i64}
        : memref<8xf32> to memref<16xf32>
    ```
  }];
  let arguments = (ins DSCRT_Buffer:$source, DSCRT_Buffer:$target,
                       DSCRT_StreamType:$stream, I64Attr:$sequence,
                       DefaultValuedAttr<DSC_CollectiveGroup,
                           "::mlir::dsc::CollectiveGroup::world">:$group);
  let assemblyFormat = [{
    $source `to` $target `on` $stream (`over` $group^)? attr-dict `:`
    type($source) `to` type($target)
  }];
  let hasVerifier = 1;
}

def DSCRT_ReduceScatterOp : DSCRT_CollectiveOp<"reduce_scatter"> {
  let summary = "sums a buffer over all ranks into each rank's shard, on a stream";
  let description = [{
    `target` (S elements) receives block `rank` of the elementwise sum over
    all ranks of `source` (W * S elements); W is the size of the group
    (`over`; the module's `dsc.world_size` for `world`). Ordered, numbered and streamed as `dscrt.all_reduce`.

    ```mlir
    dscrt.reduce_scatter %grad to %shard on %comm {sequence = 1 : i64}
        : memref<16xf32> to memref<8xf32>
    ```
  }];
  let arguments = (ins DSCRT_Buffer:$source, DSCRT_Buffer:$target,
                       DSCRT_StreamType:$stream, I64Attr:$sequence,
                       DefaultValuedAttr<DSC_CollectiveGroup,
                           "::mlir::dsc::CollectiveGroup::world">:$group);
  let assemblyFormat = [{
    $source `to` $target `on` $stream (`over` $group^)? attr-dict `:`
    type($source) `to` type($target)
  }];
  let hasVerifier = 1;
}

def DSCRT_CopyShardOp : DSCRT_StreamUserOp<"copy_shard"> {
  let summary = "copies this rank's block of a buffer, on a stream";
  let description = [{
    `target` (S elements) receives elements [r * S, (r + 1) * S) of
    `source` (W * S elements, W the size of the group `over`, the module's
    `dsc.world_size` for `world`; r the rank's index in that group): the
    lowering of `dsc.local_shard`, the one copy whose source offset depends
    on the rank.

    ```mlir
    dscrt.copy_shard %whole to %mine on %compute : memref<16xf32> to memref<8xf32>
    dscrt.copy_shard %experts to %mine on %compute over expert_data
        : memref<16xf32> to memref<8xf32>
    ```
  }];
  let arguments = (ins DSCRT_Buffer:$source, DSCRT_Buffer:$target,
                       DSCRT_StreamType:$stream,
                       DefaultValuedAttr<DSC_CollectiveGroup,
                           "::mlir::dsc::CollectiveGroup::world">:$group);
  let assemblyFormat = [{
    $source `to` $target `on` $stream (`over` $group^)? attr-dict `:`
    type($source) `to` type($target)
  }];
  let hasVerifier = 1;
}

def DSCRT_OutputOp : DSCRT_Op<"output", [Pure]> {
  let summary = "a graph output the runtime reads after each step, in host memory";
  let description = [{
    Output `index` of the artifact's output table: a host buffer the runtime
    reads after the step. The step writes it with a `dscrt.copy` and
    synchronizes the copy's stream before it returns.

    ```mlir
    %l = dscrt.output 0 "loss" : memref<f32, #dscrt.host>
    ```
  }];
  let arguments = (ins I64Attr:$index, StrAttr:$name);
  let results = (outs DSCRT_HostBuffer:$result);
  let assemblyFormat = "$index $name attr-dict `:` type($result)";
}

def DSCRT_CopyOp : DSCRT_StreamUserOp<"copy"> {
  let summary = "copies a buffer into another of the same type, on a stream";
  let description = [{
    Enqueued on `stream`: the bytes of `source` into `target`, host to
    device, device to host or device to device (the memory spaces say
    which). Shapes and element types must be equal; the buffers are not the
    same value. The runtime counts the bytes each copy between host and
    device moves, per direction (ZeRO-Offload's transfers run on the copy
    streams "d2h" and "h2d").

    ```mlir
    dscrt.copy %t to %d on %compute : memref<2x8xi64, #dscrt.host> to memref<2x8xi64>
    ```
  }];
  let arguments = (ins DSCRT_AnyBuffer:$source, DSCRT_AnyBuffer:$target,
                       DSCRT_StreamType:$stream);
  let assemblyFormat = [{
    $source `to` $target `on` $stream attr-dict `:` type($source) `to` type($target)
  }];
  let hasVerifier = 1;
}

def DSCRT_NvmeReadOp : DSCRT_StreamUserOp<"nvme_read"> {
  let summary = "reads an NVMe state into a host buffer, on a stream";
  let description = [{
    Enqueued on `stream`: the bytes of state `index` (ArtifactInfo::states,
    a state on NVMe: ZeRO-Infinity's optimizer state) from this rank's file
    into `target`, a host buffer of the state's type. The runtime counts the
    bytes read. The lowering reads each sub-group's states ahead of its host
    update on the "nvme" stream, in program order, the same on every rank.

    ```mlir
    dscrt.nvme_read 4 "w.exp_avg" to %buf on %nvme : memref<8xf32, #dscrt.host>
    ```
  }];
  let arguments = (ins I64Attr:$index, StrAttr:$name,
                       DSCRT_HostBuffer:$target, DSCRT_StreamType:$stream);
  let assemblyFormat = [{
    $index $name `to` $target `on` $stream attr-dict `:` type($target)
  }];
}

def DSCRT_NvmeWriteOp : DSCRT_StreamUserOp<"nvme_write"> {
  let summary = "writes a host buffer into an NVMe state, on a stream";
  let description = [{
    Enqueued on `stream`: `source`, a host buffer of the state's type, into
    state `index`'s extent of this rank's file (the state's new value, after
    the host update). The runtime counts the bytes written. A later
    `dscrt.nvme_read` on the same stream runs after it: the memory plan may
    give its buffer's memory to a buffer read after the write.

    ```mlir
    dscrt.nvme_write %buf to 4 "w.exp_avg" on %nvme : memref<8xf32, #dscrt.host>
    ```
  }];
  let arguments = (ins DSCRT_HostBuffer:$source, I64Attr:$index, StrAttr:$name,
                       DSCRT_StreamType:$stream);
  let assemblyFormat = [{
    $source `to` $index $name `on` $stream attr-dict `:` type($source)
  }];
}

def DSCRT_StreamOp : DSCRT_Op<"stream"> {
  let summary = "a named stream the step enqueues work on";
  let description = [{
    The runtime creates one stream per `dscrt.stream` of the step (the
    artifact's stream table, in program order) and hands it to every step.
    Names are unique within a function.

    ```mlir
    %compute = dscrt.stream "compute"
    %comm = dscrt.stream "comm"
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs DSCRT_StreamType:$result);
  let assemblyFormat = "$name attr-dict";
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name), [{
    build($_builder, $_state, $_builder.getType<StreamType>(), name);
  }]>];
  let hasVerifier = 1;
}

def DSCRT_RecordOp : DSCRT_Op<"record"> {
  let summary = "an event standing for the work enqueued on a stream so far";
  let description = [{
    ```mlir
    %ready = dscrt.record %compute
    ```
  }];
  let arguments = (ins DSCRT_StreamType:$stream);
  let results = (outs DSCRT_EventType:$event);
  let assemblyFormat = "$stream attr-dict";
  let builders = [OpBuilder<(ins "::mlir::Value":$stream), [{
    build($_builder, $_state, $_builder.getType<EventType>(), stream);
  }]>];
}

def DSCRT_WaitOp : DSCRT_Op<"wait"> {
  let summary = "makes a stream's later work wait for an event";
  let description = [{
    Work enqueued on `stream` after the wait starts once the work `event`
    stands for has run; the host does not block. The event is a
    `dscrt.record` of another stream, earlier in the same block.

    ```mlir
    dscrt.wait %comm for %ready
    ```
  }];
  let arguments = (ins DSCRT_StreamType:$stream, DSCRT_EventType:$event);
  let assemblyFormat = "$stream `for` $event attr-dict";
  let hasVerifier = 1;
}

def DSCRT_SynchronizeOp : DSCRT_Op<"synchronize"> {
  let summary = "the host waits until a stream's work has run";
  let description = [{
    The step ends by synchronizing its streams: the runtime reads the host
    outputs once the step returns.

    ```mlir
    dscrt.synchronize %compute
    ```
  }];
  let arguments = (ins DSCRT_StreamType:$stream);
  let assemblyFormat = "$stream attr-dict";
}

def DSCRT_EvalExitOp : DSCRT_Op<"eval_exit"> {
  let summary = "ends an evaluation step: what follows is training only";
  let description = [{
    Placed by the lowering of a training step right after the graph's outputs
    (the loss) are written: when the runtime evaluates (`dsc-run --eval`,
    `StepContext::training()` false) the step returns here, before the
    backward pass and the optimizer, so evaluation changes no state. At most
    one per step, after every `dscrt.output` and every `dscrt.copy` into an
    output's host buffer. The emitted step synchronizes every stream before
    it returns there, so no work is left pending.

    ```mlir
    %l = dscrt.output 0 "loss" : memref<f32, #dscrt.host>
    dscrt.copy %loss to %l on %compute : memref<f32> to memref<f32, #dscrt.host>
    dscrt.eval_exit
    ```
  }];
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def DSCRT_MicroStepExitOp : DSCRT_Op<"micro_step_exit"> {
  let summary = "ends a call that does not end an optimizer step";
  let description = [{
    Gradient accumulation: the lowering of a `dsc.optimizer_boundary` puts
    the ops that run on every micro-batch before it and those that run once
    per optimizer step (the gradients' collectives, the update, the outputs
    they compute) after it. On a call that does not end an optimizer step
    (`StepContext::endsOptimizerStep()` false) the step returns here, after
    synchronizing every stream with work pending. Every rank counts the
    same micro-steps, so all ranks take the same path. At most one per
    step, after any `dscrt.eval_exit`.

    ```mlir
    dscrt.micro_step_exit
    dscrt.all_reduce %sum on %comm seq 3 : memref<1024xf32>
    ```
  }];
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

#endif // DSC_DIALECT_DSCRT_IR_DSCRTOPS_TD
