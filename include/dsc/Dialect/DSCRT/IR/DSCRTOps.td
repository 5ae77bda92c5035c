//===- DSCRTOps.td - the runtime-call level ---------------------*- tablegen -*-===//
//
// What a step is once it is lowered: buffers at offsets of one arena, kernel
// launches, collectives and copies, in the order the runtime executes them.
// The emitter (dsc-translate --dscrt-to-cpp) prints this level as C++.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_DIALECT_DSCRT_IR_DSCRTOPS_TD
#define DSC_DIALECT_DSCRT_IR_DSCRTOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def DSCRT_Dialect : Dialect {
  let name = "dscrt";
  let cppNamespace = "::mlir::dscrt";
  let summary = "dsc's runtime-call level: buffers, kernels, collectives";
  let description = [{
    The lowering of a dsc graph (`--dsc-lower-to-runtime`) produces this
    level; `--dsc-plan-memory` assigns arena offsets; the emitter prints it as
    C++ against the runtime's artifact interface (runtime/include/dsc/runtime/
    Artifact.h). Buffers are builtin memrefs with the identity layout. Every
    buffer, launch, collective and copy is an op, in execution order: the
    runtime invents nothing.

    ```mlir
    func.func @step() attributes {dscrt.arena_bytes = 4096 : i64} {
      %w = dscrt.state 0 "fc.weight" : memref<4x8xf32>
      %x = dscrt.input 0 "x" : memref<2x8xf32>
      %y = dscrt.buffer 0 : memref<2x4xf32>
      dscrt.kernel ins(%x, %w : memref<2x8xf32>, memref<4x8xf32>)
                   outs(%y : memref<2x4xf32>) {
      ^bb0(%a: tensor<2x8xf32>, %b: tensor<4x8xf32>):
        %r = dsc.linear %a, %b : tensor<2x8xf32>, tensor<4x8xf32>
        dscrt.yield %r : tensor<2x4xf32>
      }
      dscrt.output 0 "y", %y : memref<2x4xf32>
      return
    }
    ```
  }];
  let extraClassDeclaration = [{
    /// Function attribute: bytes of the per-rank arena (set by planning).
    static constexpr ::llvm::StringLiteral kArenaBytesAttrName = "dscrt.arena_bytes";
  }];
}

class DSCRT_Op<string mnemonic, list<Trait> traits = []>
    : Op<DSCRT_Dialect, mnemonic, traits>;

def DSCRT_Buffer : StaticShapeMemRefOf<[F64, F32, F16, BF16, I64, I32, I1]>;

def DSCRT_StateOp : DSCRT_Op<"state", [Pure]> {
  let summary = "the storage of a named parameter or buffer";
  let description = [{
    State `index` in the artifact's state table, which the runtime fills from
    the weights file by `name`. State lives outside the arena.

    ```mlir
    %w = dscrt.state 3 "h.0.attn.c_attn.weight" : memref<96x32xf32>
    ```
  }];
  let arguments = (ins I64Attr:$index, StrAttr:$name);
  let results = (outs DSCRT_Buffer:$result);
  let assemblyFormat = "$index $name attr-dict `:` type($result)";
}

def DSCRT_InputOp : DSCRT_Op<"input", [Pure]> {
  let summary = "a graph input the runtime feeds each step";
  let description = [{
    ```mlir
    %t = dscrt.input 0 "tokens" : memref<2x8xi64>
    ```
  }];
  let arguments = (ins I64Attr:$index, StrAttr:$name);
  let results = (outs DSCRT_Buffer:$result);
  let assemblyFormat = "$index $name attr-dict `:` type($result)";
}

def DSCRT_AllocOp : DSCRT_Op<"alloc", [Pure]> {
  let summary = "a buffer not yet placed in the arena";
  let description = [{
    Produced by the lowering; `--dsc-plan-memory` replaces every alloc by a
    `dscrt.buffer` at a planned offset. The emitter rejects allocs.

    ```mlir
    %b = dscrt.alloc : memref<2x8x32xf32>
    ```
  }];
  let results = (outs DSCRT_Buffer:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def DSCRT_BufferOp : DSCRT_Op<"buffer", [Pure]> {
  let summary = "a buffer at a static offset of the arena";
  let description = [{
    `offset` is a multiple of 256 bytes and the buffer ends within the
    function's `dscrt.arena_bytes`.

    ```mlir
    %b = dscrt.buffer 4096 : memref<2x8x32xf32>
    ```
  }];
  let arguments = (ins I64Attr:$offset);
  let results = (outs DSCRT_Buffer:$result);
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
    Row-major buffers reshape without copying. Element type and element
    count are unchanged.

    ```mlir
    %v = dscrt.view %b : memref<2x8x32xf32> to memref<16x32xf32>
    ```
  }];
  let arguments = (ins DSCRT_Buffer:$source);
  let results = (outs DSCRT_Buffer:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `to` type($result)";
  let hasVerifier = 1;
}

def DSCRT_KernelOp : DSCRT_Op<"kernel", [AttrSizedOperandSegments,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "one kernel launch: dsc ops over tensors bound to buffers";
  let description = [{
    The body computes, from tensors holding the contents of `ins`, the
    tensors stored into `outs` (yielded in order). A body is one dsc op, or
    a chain of elementwise dsc ops fused into one kernel. Block arguments
    have the tensor types of `ins`; yielded values the tensor types of
    `outs`.

    ```mlir
    dscrt.kernel ins(%a, %b : memref<8xf32>, memref<8xf32>)
                 outs(%c : memref<8xf32>) {
    ^bb0(%x: tensor<8xf32>, %y: tensor<8xf32>):
      %s = dsc.add %x, %y : tensor<8xf32>, tensor<8xf32>
      %t = dsc.tanh %s : tensor<8xf32>
      dscrt.yield %t : tensor<8xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<DSCRT_Buffer>:$ins, Variadic<DSCRT_Buffer>:$outs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `ins` `(` ($ins^ `:` type($ins))? `)` `outs` `(` $outs `:` type($outs) `)`
    $body attr-dict
  }];
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::mlir::ValueRange":$ins,
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

def DSCRT_AllReduceOp : DSCRT_Op<"all_reduce"> {
  let summary = "in-place sum of a buffer over all ranks";
  let description = [{
    Every rank issues the same all-reduces in the same order; `sequence`
    numbers them within the step (the runtime's watchdog reports it).

    ```mlir
    dscrt.all_reduce %b {sequence = 0 : i64} : memref<2xf32>
    ```
  }];
  let arguments = (ins DSCRT_Buffer:$buffer, I64Attr:$sequence);
  let assemblyFormat = "$buffer attr-dict `:` type($buffer)";
}

def DSCRT_OutputOp : DSCRT_Op<"output"> {
  let summary = "copies a buffer to a graph output";
  let description = [{
    ```mlir
    dscrt.output 0 "loss", %l : memref<f32>
    ```
  }];
  let arguments = (ins I64Attr:$index, StrAttr:$name, DSCRT_Buffer:$source);
  let assemblyFormat = "$index $name `,` $source attr-dict `:` type($source)";
}

def DSCRT_EvalExitOp : DSCRT_Op<"eval_exit"> {
  let summary = "ends an evaluation step: what follows is training only";
  let description = [{
    Placed by the lowering of a training step right after the graph's outputs
    (the loss) are written: when the runtime evaluates (`dsc-run --eval`,
    `StepContext::training()` false) the step returns here, before the
    backward pass and the optimizer, so evaluation changes no state. At most
    one per step, after every `dscrt.output`.

    ```mlir
    dscrt.output 0 "loss", %l : memref<f32>
    dscrt.eval_exit
    ```
  }];
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

#endif // DSC_DIALECT_DSCRT_IR_DSCRTOPS_TD
