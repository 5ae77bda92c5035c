//===- DSCOps.td - dsc operations ------------------------------*- tablegen -*-===//
//
// Every op of the dsc dialect. Sections: model state, constants, linear
// algebra, elementwise, normalization, attention, shape manipulation,
// indexing and routing (the ops a mixture-of-experts layer needs),
// reductions, randomness, losses.
//
// Conventions: operands and results are static tensors (DSCBase.td); `dim`
// attributes are canonical (0 <= dim < rank; the exporter normalizes
// PyTorch's negative dims); result types are inferred wherever the operands
// and attributes determine them.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_DIALECT_DSC_IR_DSCOPS_TD
#define DSC_DIALECT_DSC_IR_DSCOPS_TD

include "dsc/Dialect/DSC/IR/DSCBase.td"
include "dsc/Dialect/DSC/IR/DSCEnums.td"
include "dsc/Dialect/DSC/IR/DSCInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Model state
//===----------------------------------------------------------------------===//

def DSC_StateOp : DSC_Op<"state", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "declares a named parameter or buffer of the model";
  let description = [{
    Declares a tensor of model state by its fully-qualified PyTorch name
    (`named_parameters()` / `named_buffers()`), with its shape, dtype and role.
    The data is not in the IR: it lives in a safetensors file under the same
    name. Tied parameters (GPT-2's `wte.weight` and `lm_head.weight`) are one
    declaration, read by every use.

    Example:

    ```mlir
    dsc.state parameter @"h.0.attn.c_attn.weight" : tensor<768x2304xf32>
    dsc.state buffer @"h.0.attn.bias" : tensor<1x1x1024x1024xf32>
    dsc.state optimizer @"h.0.attn.c_attn.weight.exp_avg" : tensor<768x2304xf32>
    ```

    `optimizer` state is created by the optimizer pass, named after its
    parameter so that checkpoints carry it; it starts at zero. So does
    `gradient` state, the gradients accumulated over the micro-batches of
    one optimizer step (`<param>.grad_acc`).

    `master` state is mixed precision's fp32 master weight of a 16-bit
    parameter, named `<param>.master` (created by `--dsc-mixed-precision`):
    the optimizer updates it and rounds it into the parameter. It must be a
    float tensor named `<param>.master`; a weights file without that tensor
    gives it the weight `<param>`.

    `partition_of` (set by `--dsc-zero`) marks a state partitioned over the
    module's `dsc.world_size` W data-parallel ranks: the whole tensor has
    that shape, and each rank holds `ceil(numel / W)` consecutive elements
    of it flattened in row-major order (rank r from element `r * S`), the
    last rank's tail padded with zeros. The declared type is that 1-D
    shard. The weights file and checkpoints hold the whole tensor by name;
    the runtime loads each rank's slice.

    ```mlir
    dsc.state optimizer @"fc.weight.exp_avg" {partition_of = array<i64: 3, 5>}
        : tensor<8xf32>   // 15 elements over 2 ranks
    ```

    With `partition_group` = 1 (`CollectiveGroup::expert`, set by
    `--dsc-moe` with expert parallelism), the state is partitioned over the module's
    `dsc.expert_parallel_size` P ranks of each expert group instead: experts
    stacked along the leading dimension, each rank holding E / P of them
    (rank r the block r % P), the same on every replica of the group. The
    declared type is the whole shape with its leading dimension divided by
    P.

    ```mlir
    dsc.state parameter @"h.0.mlp.experts.c_fc.weight"
        {partition_of = array<i64: 8, 128, 32>, partition_group = 1 : i32}
        : tensor<2x128x32xf32>   // 8 experts over 4 ranks
    ```

    With `partition_group` = 2 (`CollectiveGroup::expert_data`, set by
    `--dsc-zero` on an expert's states), the rank's E / P experts are
    partitioned further over the D = W / P ranks of its expert-data group,
    as ZeRO partitions the other states over the world: of the rank's
    experts (block r % P of the leading dimension, n / P elements,
    flattened) it holds `S = ceil(n / P / D)` consecutive elements from
    element `(r / P) * S`, the last shard's tail padded with zeros. The
    declared type is that 1-D shard. Under tensor parallelism
    (DeepSpeed-TED) with `partition_blocks` = B, what is partitioned is the
    rank's experts of its tensor slice (their B / P blocks of C elements,
    in order, as for `expert` with `partition_blocks`): n / P / T elements
    in shards of `S = ceil(n / P / T / D)` over the D = W / (P * T) ranks of
    the expert-data group, a shard a run of those blocks.

    ```mlir
    dsc.state optimizer @"h.0.mlp.experts.c_fc.weight.exp_avg"
        {partition_of = array<i64: 8, 128, 32>, partition_group = 2 : i32}
        : tensor<4096xf32>   // 8 experts over P = 4, D = 2: 2x128x32 / 2
    ```

    A parameter that rewrites add (mixture of experts) says how a weights
    file without it fills it: `init_from` names a stored tensor that the
    state repeats along its leading dimension (each expert a copy of the
    dense block it replaces); `init_uniform` = b draws it from U(-b, b) with
    dsc's counter-based generator keyed by the state's name and `init_seed`
    (docs/moe.md defines it, so any implementation can draw the same).

    `on host` (set by `--dsc-offload`) places the state in pinned host memory
    instead of device memory: ZeRO-Offload's optimizer state and fp32 master
    weights, which only the optimizer's update on the host CPU reads and
    writes, and with `--offload-param=cpu` stage 3's partitions of
    parameters and of a distillation teacher's weights, copied to the device
    where they are read. Only those states may live on the host.

    ```mlir
    dsc.state optimizer @"fc.weight.exp_avg" on host
        {partition_of = array<i64: 3, 5>} : tensor<8xf32>
    ```

    With `partition_group` = 3 (`CollectiveGroup::tensor`, set by
    `--dsc-tensor-parallel`), the state is one rank's slice of a weight split
    Megatron's way over the T ranks of its tensor group: the whole tensor,
    flattened and viewed as [B, T, C] with B = `partition_blocks` (1 when
    absent), holds the rank at index r % T in [:, r % T, :]. A
    column-parallel weight [N, K] is split along N (B = 1, or 3 for a fused
    query/key/value weight: each rank takes its heads of each); a
    row-parallel one along K (B = N). The declared type is the whole shape
    with the split dimension divided by T.

    ```mlir
    dsc.state parameter @"h.0.attn.c_proj.weight"
        {partition_of = array<i64: 32, 32>, partition_group = 3 : i32,
         partition_blocks = 32 : i64} : tensor<32x16xf32>
    ```

    With `partition_group` = 4 (`CollectiveGroup::data`, set by `--dsc-zero`
    under tensor parallelism), the state is ZeRO's partition over the
    D = W / T ranks of its data group: rank r holds `S = ceil(n / D)`
    consecutive elements from element `(r / T) * S` (the tail padded with
    zeros) of n elements that are the whole tensor (flattened) when
    `partition_blocks` is absent, or with `partition_blocks` = B the rank's
    tensor-parallel slice as above (B blocks of C elements, in order,
    n = numel / T).

    ```mlir
    dsc.state optimizer @"h.0.attn.c_proj.weight.exp_avg"
        {partition_of = array<i64: 32, 32>, partition_group = 4 : i32,
         partition_blocks = 32 : i64} : tensor<256xf32>   // 32x16 / D = 2
    ```

    ```mlir
    dsc.state parameter @"h.0.mlp.experts.c_fc.weight"
        {init_from = "h.0.mlp.c_fc.weight"} : tensor<8x128x32xf32>
    dsc.state parameter @"h.0.mlp.gate.weight"
        {init_seed = 0 : i64, init_uniform = 0.17677669529663687 : f64}
        : tensor<8x32xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<DSC_Tensor>:$type,
                       DSC_StateRole:$role,
                       OptionalAttr<DenseI64ArrayAttr>:$partition_of,
                       DefaultValuedAttr<DSC_CollectiveGroup,
                           "::mlir::dsc::CollectiveGroup::world">:$partition_group,
                       OptionalAttr<StrAttr>:$init_from,
                       OptionalAttr<F64Attr>:$init_uniform,
                       OptionalAttr<I64Attr>:$init_seed,
                       DefaultValuedAttr<DSC_MemoryTier,
                           "::mlir::dsc::MemoryTier::device">:$tier,
                       OptionalAttr<I64Attr>:$partition_blocks);
  let assemblyFormat = "$role $sym_name (`on` $tier^)? attr-dict `:` $type";
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$sym_name,
                   "::mlir::RankedTensorType":$type,
                   "::mlir::dsc::StateRole":$role), [{
      build($_builder, $_state, sym_name, type, role,
            ::mlir::DenseI64ArrayAttr(), ::mlir::dsc::CollectiveGroup::world,
            ::mlir::StringAttr(), ::mlir::FloatAttr(), ::mlir::IntegerAttr(),
            ::mlir::dsc::MemoryTier::device, ::mlir::IntegerAttr());
    }]>,
  ];
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
    /// Partitions this state as `other` is (partition_of, partition_group,
    /// partition_blocks): a parameter's optimizer state and master weight
    /// live where the parameter does.
    void copyPartition(StateOp other) {
      setPartitionOfAttr(other.getPartitionOfAttr());
      setPartitionGroup(other.getPartitionGroup());
      setPartitionBlocksAttr(other.getPartitionBlocksAttr());
    }
    /// The whole tensor's type: the declared type, or for a partitioned
    /// state (`partition_of`) the shape it is a partition of.
    ::mlir::RankedTensorType getWholeType();
    ::llvm::LogicalResult verifyInitRule();
    ::llvm::LogicalResult verifyTensorSplit(::llvm::ArrayRef<int64_t> whole);
    ::llvm::LogicalResult verifyDataPartition(int64_t elements);
  }];
}

def DSC_LoadOp : DSC_Op<"load", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemRead]>]> {
  let summary = "reads a named parameter or buffer";
  let description = [{
    Yields the current value of the `dsc.state` named by `state`. The result
    type must equal the declared type.

    Example:

    ```mlir
    %w = dsc.load @"wte.weight" : tensor<50257x768xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$state);
  let results = (outs DSC_Tensor:$result);
  let assemblyFormat = "$state attr-dict `:` type($result)";
}

def DSC_StoreOp : DSC_Op<"store", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemWrite]>]> {
  let summary = "writes a new value of a named state";
  let description = [{
    Replaces the value of the `dsc.state` named by `state` with `value`, for
    the next step: how the optimizer updates parameters and its own state.
    The value type must equal the declared type, and a state is written at
    most once per graph. Every read of the old value (every use of a
    `dsc.load` of the state) must come before the store in the block; the
    lowering checks it, since the store writes the state's memory in place.

    Example:

    ```mlir
    dsc.store %new_w to @"wte.weight" : tensor<50257x768xf32>
    ```
  }];
  let arguments = (ins DSC_Tensor:$value, FlatSymbolRefAttr:$state);
  let assemblyFormat = "$value `to` $state attr-dict `:` type($value)";
}

def DSC_TransferOp : DSC_Op<"transfer", [Pure, SameOperandsAndResultType]> {
  let summary = "the same tensor, copied to another memory tier";
  let description = [{
    Yields its operand, copied to `tier`: from the device to pinned host
    memory or back (ZeRO-Offload, `--dsc-offload`). The lowering makes it a
    `dscrt.copy` on a copy stream, ordered by events after the op that
    computes the operand and before the first op that reads the result.

    A tensor lives where it was made: a `dsc.load` where its state lives
    (`dsc.state ... on host`), a `dsc.transfer` on its `tier`, any other op
    where its operands are (they must agree). So the ops that read host
    tensors (the optimizer's update) run on the host CPU, and each
    `dsc.store` must store a tensor of its state's tier. The operand must
    live on the other tier (dsc::verifyMemoryTiers checks a graph).

    ```mlir
    %gh = dsc.transfer %g to host : tensor<8xbf16>
    %pd = dsc.transfer %p to device : tensor<8xbf16>
    ```
  }];
  let arguments = (ins DSC_Tensor:$input, DSC_MemoryTier:$tier);
  let results = (outs DSC_Tensor:$result);
  let assemblyFormat = "$input `to` $tier attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def DSC_ConstantOp : DSC_Op<"constant", [
    ConstantLike, Pure, InferTypeOpAdaptor]> {
  let summary = "a literal tensor";
  let description = [{
    A compile-time tensor, typically a scalar (a scale, an epsilon, a mask
    fill) or a small table. Model weights are never constants: they are
    `dsc.state`.

    Example:

    ```mlir
    %scale = dsc.constant dense<0.125> : tensor<f32>
    %pos = dsc.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs DSC_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def DSC_MatmulOp : DSC_Op<"matmul", [Pure, InferTypeOpAdaptor]> {
  let summary = "batched matrix product with optional transposes";
  let description = [{
    `result[..., m, n] = sum_k lhs'[..., m, k] * rhs'[..., k, n]`, where `lhs'`
    and `rhs'` are the operands with their last two dimensions swapped when
    `transpose_lhs` / `transpose_rhs` is set. Both operands have rank >= 2;
    their batch dimensions (all but the last two) broadcast with NumPy rules,
    as in `torch.matmul`. Element types match and are floating point.

    Example (attention scores, `q @ k^T`):

    ```mlir
    %s = dsc.matmul %q, %k transpose_rhs
        : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
    // %s : tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins DSC_FloatTensor:$lhs, DSC_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs DSC_FloatTensor:$result);
  // Attributes that shape inference reads must be in the format, not in
  // attr-dict: while parsing, inference sees only the properties that the
  // format itself parsed.
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)?
    (`transpose_rhs` $transpose_rhs^)? attr-dict `:` type($lhs) `,` type($rhs)
  }];
}

def DSC_LinearOp : DSC_Op<"linear", [Pure, InferTypeOpAdaptor]> {
  let summary = "affine map x @ weight^T + bias (torch.nn.functional.linear)";
  let description = [{
    `result[..., n] = sum_k input[..., k] * weight[n, k] + bias[n]`. The
    weight has PyTorch's `[out_features, in_features]` layout; the bias is
    optional. Element types match and are floating point.

    Example:

    ```mlir
    %y = dsc.linear %x, %w, %b
        : tensor<2x8x32xf32>, tensor<128x32xf32>, tensor<128xf32>
    // %y : tensor<2x8x128xf32>
    ```
  }];
  let arguments = (ins DSC_FloatTensor:$input, DSC_FloatTensor:$weight,
                       Optional<DSC_FloatTensor>:$bias);
  let results = (outs DSC_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,`
    type($weight) (`,` type($bias)^)?
  }];
}

def DSC_EmbeddingOp : DSC_Op<"embedding", [Pure, InferTypeOpAdaptor]> {
  let summary = "row lookup in an embedding table";
  let description = [{
    `result[i..., d] = table[indices[i...], d]` for a `[num_embeddings,
    embedding_dim]` table. `padding_idx`, when present, names a row whose
    gradient is zero (as in `torch.nn.Embedding`); it must be a row of the
    table. Indices outside the table are a run-time error.

    Example:

    ```mlir
    %h = dsc.embedding %wte, %tokens : tensor<256x32xf32>, tensor<2x8xi64>
    // %h : tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins DSC_FloatTensor:$table, DSC_IndexTensor:$indices,
                       OptionalAttr<I64Attr>:$padding_idx);
  let results = (outs DSC_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $indices (`padding_idx` `=` $padding_idx^)? attr-dict `:`
    type($table) `,` type($indices)
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// Binary elementwise ops broadcast their operands with NumPy rules (as
// PyTorch does); the result type is inferred.
class DSC_BinaryOp<string mnemonic, string formula, Type operandType,
                   list<Trait> traits = []>
    : DSC_Op<mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptor,
                                             SameOperandsAndResultElementType,
                                             DSC_Elementwise])> {
  let summary = "elementwise " # formula # " with broadcasting";
  let description = [{
    Computes `}] # formula # [{` elementwise after broadcasting both operands
    to a common shape (NumPy rules: shapes align at the right; a dimension of
    size 1 stretches). Operand element types match.

    Example:

    ```mlir
    %r = dsc.}] # mnemonic # [{ %a, %b : tensor<2x8x32xf32>, tensor<32xf32>
    // %r : tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs operandType:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, ::std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::mlir::dsc::inferBroadcastResult(
          location, {adaptor.getLhs().getType(), adaptor.getRhs().getType()},
          /*elementType=*/nullptr, inferred);
    }
  }];
}

def DSC_AddOp : DSC_BinaryOp<"add", "lhs + rhs", DSC_NumericTensor,
                             [Commutative]>;
def DSC_SubOp : DSC_BinaryOp<"sub", "lhs - rhs", DSC_NumericTensor>;
def DSC_MulOp : DSC_BinaryOp<"mul", "lhs * rhs", DSC_NumericTensor,
                             [Commutative]>;
def DSC_DivOp : DSC_BinaryOp<"div", "lhs / rhs", DSC_NumericTensor>;
def DSC_PowOp : DSC_BinaryOp<"pow", "lhs ** rhs", DSC_FloatTensor>;
def DSC_MaximumOp : DSC_BinaryOp<"maximum", "max(lhs, rhs)",
                                 DSC_NumericTensor, [Commutative]>;
def DSC_MinimumOp : DSC_BinaryOp<"minimum", "min(lhs, rhs)",
                                 DSC_NumericTensor, [Commutative]>;

// Unary elementwise ops keep the operand's type.
class DSC_UnaryOp<string mnemonic, string formula, Type operandType,
                  list<Trait> traits = []>
    : DSC_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType,
                                            DSC_Elementwise])> {
  let summary = "elementwise " # formula;
  let description = [{
    Computes `}] # formula # [{` for every element. The result has the
    operand's type.

    Example:

    ```mlir
    %r = dsc.}] # mnemonic # [{ %x : tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins operandType:$input);
  let results = (outs operandType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def DSC_NegOp : DSC_UnaryOp<"neg", "-x", DSC_NumericTensor>;
def DSC_ReluOp : DSC_UnaryOp<"relu", "max(x, 0)", DSC_FloatTensor>;
def DSC_SiluOp : DSC_UnaryOp<"silu", "x * sigmoid(x)", DSC_FloatTensor>;
def DSC_SigmoidOp : DSC_UnaryOp<"sigmoid", "1 / (1 + exp(-x))",
                                DSC_FloatTensor>;
def DSC_TanhOp : DSC_UnaryOp<"tanh", "tanh(x)", DSC_FloatTensor>;
def DSC_ExpOp : DSC_UnaryOp<"exp", "exp(x)", DSC_FloatTensor>;
// cos and sin: WarmupCosineLR's schedule, computed in the graph.
def DSC_CosOp : DSC_UnaryOp<"cos", "cos(x)", DSC_FloatTensor>;
def DSC_SinOp : DSC_UnaryOp<"sin", "sin(x)", DSC_FloatTensor>;
def DSC_LogOp : DSC_UnaryOp<"log", "log(x)", DSC_FloatTensor>;
def DSC_SqrtOp : DSC_UnaryOp<"sqrt", "sqrt(x)", DSC_FloatTensor>;
def DSC_RsqrtOp : DSC_UnaryOp<"rsqrt", "1 / sqrt(x)", DSC_FloatTensor>;

def DSC_GeluOp : DSC_Op<"gelu", [Pure, SameOperandsAndResultType, DSC_Elementwise]> {
  let summary = "Gaussian error linear unit, exact or tanh-approximated";
  let description = [{
    `erf`: `x * 0.5 * (1 + erf(x / sqrt(2)))` (`F.gelu(x)`, BERT).
    `tanh`: `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`
    (`F.gelu(x, approximate="tanh")`, GPT-2's `NewGELU`).

    Example:

    ```mlir
    %r = dsc.gelu tanh %x : tensor<2x8x128xf32>
    ```
  }];
  let arguments = (ins DSC_GeluApproximation:$approximation,
                       DSC_FloatTensor:$input);
  let results = (outs DSC_FloatTensor:$result);
  let assemblyFormat = "$approximation $input attr-dict `:` type($input)";
}

def DSC_GeluGradOp : DSC_Op<"gelu_grad", [Pure, SameOperandsAndResultType, DSC_Elementwise]> {
  let summary = "derivative of gelu, exact or tanh-approximated";
  let description = [{
    `d gelu(x) / dx` in the given form, elementwise: the backward of
    `dsc.gelu` multiplies the cotangent by it. `erf`:
    `0.5 * (1 + erf(x / sqrt(2))) + x * exp(-x^2 / 2) / sqrt(2 pi)`; `tanh`,
    with `u = sqrt(2/pi) * (x + 0.044715 x^3)`:
    `0.5 * (1 + tanh(u)) + 0.5 x (1 - tanh(u)^2) sqrt(2/pi) (1 + 0.134145 x^2)`.

    Example:

    ```mlir
    %d = dsc.gelu_grad erf %x : tensor<2x8x128xf32>
    ```
  }];
  let arguments = (ins DSC_GeluApproximation:$approximation,
                       DSC_FloatTensor:$input);
  let results = (outs DSC_FloatTensor:$result);
  let assemblyFormat = "$approximation $input attr-dict `:` type($input)";
}

def DSC_ConvertOp : DSC_Op<"convert", [Pure, DSC_Elementwise]> {
  let summary = "elementwise conversion to another element type";
  let description = [{
    Converts every element to the result's element type, as `Tensor.to(dtype)`
    does (floats to integers round toward zero; to i1 is `x != 0`). The shape
    is unchanged. Mixed precision and index arithmetic (`mask.float()`) use it.

    Example:

    ```mlir
    %h = dsc.convert %x : tensor<2x8xf32> to tensor<2x8xbf16>
    ```
  }];
  let arguments = (ins DSC_Tensor:$input);
  let results = (outs DSC_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
}

def DSC_CompareOp : DSC_Op<"compare", [Pure, InferTypeOpAdaptor, DSC_Elementwise]> {
  let summary = "elementwise comparison with broadcasting, giving i1";
  let description = [{
    `result = lhs <direction> rhs` elementwise after NumPy broadcasting; the
    result is an i1 tensor. Operand element types match. Directions: `eq`,
    `ne`, `lt`, `le`, `gt`, `ge`.

    Example (the tokens a capacity limit keeps):

    ```mlir
    %keep = dsc.compare lt, %pos, %cap : tensor<16x4xi64>, tensor<i64>
    // %keep : tensor<16x4xi1>
    ```
  }];
  let arguments = (ins DSC_ComparisonDirection:$direction,
                       DSC_Tensor:$lhs, DSC_Tensor:$rhs);
  let results = (outs DSC_BoolTensor:$result);
  let assemblyFormat = [{
    $direction `,` $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)
  }];
}

def DSC_SelectOp : DSC_Op<"select", [Pure, InferTypeOpAdaptor, DSC_Elementwise]> {
  let summary = "elementwise choice by an i1 condition (torch.where)";
  let description = [{
    `result = condition ? on_true : on_false` elementwise after broadcasting
    all three operands together. `on_true` and `on_false` have the same
    element type, which is the result's. `masked_fill` is a select.

    Example:

    ```mlir
    %r = dsc.select %mask, %x, %fill
        : tensor<8x8xi1>, tensor<2x4x8x8xf32>, tensor<f32>
    // %r : tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins DSC_BoolTensor:$condition, DSC_Tensor:$on_true,
                       DSC_Tensor:$on_false);
  let results = (outs DSC_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $on_true `,` $on_false attr-dict `:` type($condition) `,`
    type($on_true) `,` type($on_false)
  }];
}

//===----------------------------------------------------------------------===//
// Normalization and attention
//===----------------------------------------------------------------------===//

def DSC_LayerNormOp : DSC_Op<"layer_norm", [
    Pure, AttrSizedOperandSegments, AllTypesMatch<["input", "result"]>]> {
  let summary = "layer normalization over the trailing dimensions";
  let description = [{
    Normalizes over the last `normalized_rank` dimensions:
    `(x - mean) / sqrt(var + epsilon) * weight + bias`, with the biased
    variance, as `torch.nn.functional.layer_norm`. `weight` and `bias` are
    optional and, when present, have exactly the normalized shape. `epsilon`
    is finite and >= 0; `normalized_rank` is between 1 and the input rank.

    Example:

    ```mlir
    %y = dsc.layer_norm %x weight(%g : tensor<32xf32>) bias(%b : tensor<32xf32>)
        {epsilon = 1.0e-05 : f64} : tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins DSC_FloatTensor:$input,
                       Optional<DSC_FloatTensor>:$weight,
                       Optional<DSC_FloatTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "1">:$normalized_rank,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs DSC_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`weight` `(` $weight^ `:` type($weight) `)`)?
    (`bias` `(` $bias^ `:` type($bias) `)`)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

class DSC_SoftmaxLikeOp<string mnemonic, string formula>
    : DSC_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = formula # " along one dimension";
  let description = [{
    Computes `}] # formula # [{` along dimension `dim`, numerically stable
    (the maximum is subtracted first).

    Example (attention probabilities over the keys):

    ```mlir
    %p = dsc.}] # mnemonic # [{ %s, dim = 3 : tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins DSC_FloatTensor:$input, I64Attr:$dim);
  let results = (outs DSC_FloatTensor:$result);
  let assemblyFormat =
      "$input `,` `dim` `=` $dim attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def DSC_SoftmaxOp : DSC_SoftmaxLikeOp<"softmax", "exp(x) / sum(exp(x))">;
def DSC_LogSoftmaxOp
    : DSC_SoftmaxLikeOp<"log_softmax", "x - log(sum(exp(x)))">;

def DSC_CausalMaskOp : DSC_Op<"causal_mask", [
    Pure, SameOperandsAndResultType]> {
  let summary = "hides future keys from attention scores";
  let description = [{
    For scores `[..., q, k]` with `Tq` queries and `Tk` keys, sets every
    element with `k > q + (Tk - Tq)` to `fill_value` (default `-inf`) and
    keeps the rest; the operand has rank >= 2. This is the
    `masked_fill(tril(ones) == 0, -inf)` of GPT-style attention as one op, so
    that later passes (token dropping, sequence-length buckets) can rewrite
    it without pattern-matching a mask buffer.

    Example:

    ```mlir
    %m = dsc.causal_mask %s : tensor<2x4x8x8xf32>
    %n = dsc.causal_mask %s {fill_value = -1.0e+04 : f64} : tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins DSC_FloatTensor:$input,
                       OptionalAttr<F64Attr>:$fill_value);
  let results = (outs DSC_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def DSC_AttentionOp : DSC_Op<"attention", [Pure]> {
  let summary = "scaled dot-product attention, with its log-sum-exp";
  let description = [{
    For queries `q [B, H, T, D]`, keys `k [B, H, S, D]` and values
    `v [B, H, S, Dv]`:

    ```
    scores[b,h,t,s] = scale * sum_d q[b,h,t,d] * k[b,h,s,d] + mask[b,h,t,s]
    result[b,h,t,:] = sum_s softmax_s(scores[b,h,t,:]) * v[b,h,s,:]
    logsumexp[b,h,t] = log(sum_s exp(scores[b,h,t,s]))
    ```

    over the keys that take part. `causal` hides key `s` from query `t` when
    `s > t + (S - T)` (dsc.causal_mask's alignment; the lower triangle when
    `T == S`). The optional `mask` broadcasts (NumPy rules) to `[B, H, T, S]`:
    an `i1` mask keeps the keys where it is true (PyTorch's
    `scaled_dot_product_attention` convention), a float mask of the queries'
    element type is added to the scores. A query row that sees no key has
    result 0 and log-sum-exp `-inf`.

    It is one op so that the kernels never hold the `[B, H, T, S]` scores
    (flash attention: tiles of keys, an online softmax). The log-sum-exp is
    a second result, always `f32` (however narrow the data), because the
    backward (`dsc.attention_grad`) recomputes the probabilities of each tile
    from it instead of a second forward pass: `B*H*T` floats saved against a
    recomputation of the whole row statistics. `--dsc-form-attention` builds
    it from the exported matmul-scale-mask-softmax-matmul chain.

    Example (GPT-2's causal self-attention, 2 heads of 16):

    ```mlir
    %o, %lse = dsc.attention %q, %k, %v causal {scale = 2.500000e-01 : f64}
        : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
        -> tensor<2x2x8x16xf32>, tensor<2x2x8xf32>
    // With a padding mask over the keys, broadcast over heads and queries:
    %o2, %lse2 = dsc.attention %q, %k, %v mask(%keep : tensor<2x1x1x8xi1>)
        {scale = 2.500000e-01 : f64}
        : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
        -> tensor<2x2x8x16xf32>, tensor<2x2x8xf32>
    ```
  }];
  let arguments = (ins DSC_FloatTensor:$query, DSC_FloatTensor:$key,
                       DSC_FloatTensor:$value, Optional<DSC_Tensor>:$mask,
                       F64Attr:$scale, UnitAttr:$causal);
  let results = (outs DSC_FloatTensor:$result, DSC_FloatTensor:$logsumexp);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`causal` $causal^)? attr-dict `:` type($query) `,` type($key) `,`
    type($value) `->` type($result) `,` type($logsumexp)
  }];
  let builders = [
    // Result types from the operands: [B, H, T, Dv] and [B, H, T] f32.
    OpBuilder<(ins "::mlir::Value":$query, "::mlir::Value":$key,
                   "::mlir::Value":$value, "::mlir::Value":$mask,
                   "double":$scale, "bool":$causal)>
  ];
  let hasVerifier = 1;
}

def DSC_AttentionGradOp : DSC_Op<"attention_grad", [
    Pure, AllTypesMatch<["query", "query_grad"]>,
    AllTypesMatch<["key", "key_grad"]>, AllTypesMatch<["value", "value_grad"]>]> {
  let summary = "the gradients of dsc.attention with respect to q, k and v";
  let description = [{
    Given dsc.attention's operands, its `result` and log-sum-exp, and the
    result's cotangent `result_grad`, computes the cotangents of the
    queries, keys and values. With `P = exp(scores - logsumexp)` (recomputed
    per tile of keys, never stored), `dP = result_grad v^T` and
    `Delta[t] = sum_d result_grad[t,d] * result[t,d]`:

    ```
    dv = P^T result_grad
    dS = P * (dP - Delta)
    dq = scale * dS k,   dk = scale * dS^T q
    ```

    `mask`, `scale` and `causal` are the forward's. The mask has no
    cotangent. Built by dsc.attention's gradient rule.

    Example:

    ```mlir
    %dq, %dk, %dv = dsc.attention_grad %q, %k, %v, %o, %do, %lse causal
        {scale = 2.500000e-01 : f64}
        : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>,
          tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8xf32>
    ```
  }];
  let arguments = (ins DSC_FloatTensor:$query, DSC_FloatTensor:$key,
                       DSC_FloatTensor:$value, DSC_FloatTensor:$result,
                       DSC_FloatTensor:$result_grad,
                       DSC_FloatTensor:$logsumexp, Optional<DSC_Tensor>:$mask,
                       F64Attr:$scale, UnitAttr:$causal);
  let results = (outs DSC_FloatTensor:$query_grad, DSC_FloatTensor:$key_grad,
                      DSC_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $result `,` $result_grad `,` $logsumexp
    (`mask` `(` $mask^ `:` type($mask) `)`)? (`causal` $causal^)? attr-dict
    `:` type($query) `,` type($key) `,` type($value) `,` type($result) `,`
    type($result_grad) `,` type($logsumexp)
  }];
  let builders = [
    // The gradients have the types of q, k and v.
    OpBuilder<(ins "::mlir::Value":$query, "::mlir::Value":$key,
                   "::mlir::Value":$value, "::mlir::Value":$result,
                   "::mlir::Value":$result_grad, "::mlir::Value":$logsumexp,
                   "::mlir::Value":$mask, "double":$scale, "bool":$causal)>
  ];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def DSC_ReshapeOp : DSC_Op<"reshape", [Pure]> {
  let summary = "same elements, new shape (view / reshape / flatten)";
  let description = [{
    Reinterprets the elements in row-major order with the result's shape. The
    element count and element type are unchanged. `unsqueeze`, `squeeze`,
    `flatten` and `view` all become `dsc.reshape`.

    Example:

    ```mlir
    %r = dsc.reshape %x : tensor<2x8x32xf32> -> tensor<16x32xf32>
    ```
  }];
  let arguments = (ins DSC_Tensor:$input);
  let results = (outs DSC_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def DSC_TransposeOp : DSC_Op<"transpose", [Pure, InferTypeOpAdaptor]> {
  let summary = "swaps two dimensions";
  let description = [{
    `torch.transpose(x, dim0, dim1)`: the result is the input with dimensions
    `dim0` and `dim1` exchanged. Both are in `[0, rank)`.

    Example:

    ```mlir
    %t = dsc.transpose %x, 1, 2 : tensor<2x8x4x16xf32>
    // %t : tensor<2x4x8x16xf32>
    ```
  }];
  let arguments = (ins DSC_Tensor:$input, I64Attr:$dim0, I64Attr:$dim1);
  let results = (outs DSC_Tensor:$result);
  let assemblyFormat =
      "$input `,` $dim0 `,` $dim1 attr-dict `:` type($input)";
}

def DSC_PermuteOp : DSC_Op<"permute", [Pure, InferTypeOpAdaptor]> {
  let summary = "reorders all dimensions";
  let description = [{
    `x.permute(permutation)`: result dimension `i` is input dimension
    `permutation[i]`. `permutation` lists every dimension of the input once.

    Example:

    ```mlir
    %p = dsc.permute %x, [0, 2, 1, 3] : tensor<2x8x4x16xf32>
    // %p : tensor<2x4x8x16xf32>
    ```
  }];
  let arguments = (ins DSC_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs DSC_Tensor:$result);
  let assemblyFormat =
      "$input `,` $permutation attr-dict `:` type($input)";
}

def DSC_SliceOp : DSC_Op<"slice", [Pure, InferTypeOpAdaptor]> {
  let summary = "strided range of one dimension";
  let description = [{
    `x[..., start:end:step, ...]` on dimension `dim` (PyTorch's `aten.slice`
    with canonical bounds): `0 <= start <= end <= size`, `step >= 1`. The
    result has `ceil((end - start) / step)` elements along `dim`.

    Example (the query third of a fused QKV projection):

    ```mlir
    %q = dsc.slice %qkv, dim = 2, start = 0, end = 32, step = 1
        : tensor<2x8x96xf32>
    // %q : tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins DSC_Tensor:$input, I64Attr:$dim, I64Attr:$start,
                       I64Attr:$end, I64Attr:$step);
  let results = (outs DSC_Tensor:$result);
  let assemblyFormat = [{
    $input `,` `dim` `=` $dim `,` `start` `=` $start `,` `end` `=` $end `,`
    `step` `=` $step attr-dict `:` type($input)
  }];
}

def DSC_ConcatOp : DSC_Op<"concat", [Pure, InferTypeOpAdaptor,
                                     SameOperandsAndResultElementType]> {
  let summary = "joins tensors along one dimension";
  let description = [{
    `torch.cat(inputs, dim)`. At least one input; all have the same rank and
    element type and equal sizes in every dimension but `dim`.

    Example:

    ```mlir
    %c = dsc.concat(%a, %b), dim = 1 : tensor<2x3xf32>, tensor<2x5xf32>
    // %c : tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Variadic<DSC_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs DSC_Tensor:$result);
  let assemblyFormat =
      "`(` $inputs `)` `,` `dim` `=` $dim attr-dict `:` type($inputs)";
}

def DSC_BroadcastOp : DSC_Op<"broadcast", [Pure]> {
  let summary = "expands a tensor to a larger shape (expand / broadcast_to)";
  let description = [{
    Repeats the input along new leading dimensions and along dimensions of
    size 1, with NumPy rules: the input's shape, aligned at the right, must
    equal the result's or be 1 there. Element types match.

    Example:

    ```mlir
    %b = dsc.broadcast %x : tensor<1x8xf32> -> tensor<4x2x8xf32>
    ```
  }];
  let arguments = (ins DSC_Tensor:$input);
  let results = (outs DSC_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Indexing and routing
//===----------------------------------------------------------------------===//

def DSC_GatherOp : DSC_Op<"gather", [Pure, InferTypeOpAdaptor]> {
  let summary = "picks elements along one dimension (torch.gather)";
  let description = [{
    `result[i][j][k] = input[index[i][j][k]][j][k]` for `dim = 0`, and so on:
    the result has the index's shape and the input's element type. `index`
    has the input's rank and is no larger than the input in every dimension
    but `dim`.

    Example (the probability of each token's chosen expert):

    ```mlir
    %g = dsc.gather %probs, %expert, dim = 1
        : tensor<16x4xf32>, tensor<16x1xi64>
    // %g : tensor<16x1xf32>
    ```
  }];
  let arguments = (ins DSC_Tensor:$input, DSC_IndexTensor:$index,
                       I64Attr:$dim);
  let results = (outs DSC_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $index `,` `dim` `=` $dim attr-dict `:` type($input) `,`
    type($index)
  }];
}

def DSC_ScatterAddOp : DSC_Op<"scatter_add", [
    Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "accumulates values at indices (Tensor.scatter_add)";
  let description = [{
    Starts from `input` and, for every position `p` of `index`, adds
    `src[p]` to the element of `input` at `p` with coordinate `dim` replaced
    by `index[p]`. `input`, `index` and `src` have one rank; `index` is no
    larger than `src` in any dimension, nor than `input` in any dimension but
    `dim`; `src` and `input` have one element type. Embedding gradients and
    expert combines are scatter-adds.

    Example:

    ```mlir
    %r = dsc.scatter_add %acc, %idx, %val, dim = 0
        : tensor<256x32xf32>, tensor<16x32xi64>, tensor<16x32xf32>
    ```
  }];
  let arguments = (ins DSC_Tensor:$input, DSC_IndexTensor:$index,
                       DSC_Tensor:$src, I64Attr:$dim);
  let results = (outs DSC_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $index `,` $src `,` `dim` `=` $dim attr-dict `:` type($input)
    `,` type($index) `,` type($src)
  }];
  let hasVerifier = 1;
}

def DSC_TopKOp : DSC_Op<"top_k", [Pure, InferTypeOpAdaptor]> {
  let summary = "the k largest elements along a dimension, with indices";
  let description = [{
    `torch.topk(input, k, dim, largest=True, sorted=True)`: `values` holds the
    `k` largest elements along `dim` in descending order, `indices` their
    positions (i64; ties keep the lower index first). `1 <= k <= size(dim)`.
    Top-1 and top-2 gating route tokens with it; `argmax` is `k = 1`.

    Example:

    ```mlir
    %v, %i = dsc.top_k %logits, k = 2, dim = 1 : tensor<16x4xf32>
    // %v : tensor<16x2xf32>, %i : tensor<16x2xi64>
    ```
  }];
  let arguments = (ins DSC_NumericTensor:$input, I64Attr:$k, I64Attr:$dim);
  let results = (outs DSC_NumericTensor:$values, DSC_I64Tensor:$indices);
  let assemblyFormat = [{
    $input `,` `k` `=` $k `,` `dim` `=` $dim attr-dict `:` type($input)
  }];
}

def DSC_CumsumOp : DSC_Op<"cumsum", [Pure, SameOperandsAndResultType]> {
  let summary = "inclusive prefix sum along a dimension";
  let description = [{
    `torch.cumsum(input, dim)`: `result[..., i, ...] = sum_{j <= i}
    input[..., j, ...]`. Mixture-of-experts gating uses it to number the
    tokens routed to each expert.

    Example:

    ```mlir
    %pos = dsc.cumsum %mask, dim = 0 : tensor<16x4xi64>
    ```
  }];
  let arguments = (ins DSC_NumericTensor:$input, I64Attr:$dim);
  let results = (outs DSC_NumericTensor:$result);
  let assemblyFormat =
      "$input `,` `dim` `=` $dim attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def DSC_OneHotOp : DSC_Op<"one_hot", [Pure]> {
  let summary = "one-hot encoding of integer indices";
  let description = [{
    `result[i..., c] = (indices[i...] == c)` converted to the result's element
    type; the number of classes is the result's last dimension (>= 1) and the
    other dimensions are the indices' shape. Indices outside `[0, classes)`
    give an all-zero row.

    Example:

    ```mlir
    %m = dsc.one_hot %expert : tensor<16xi64> -> tensor<16x4xf32>
    ```
  }];
  let arguments = (ins DSC_IndexTensor:$indices);
  let results = (outs DSC_NumericTensor:$result);
  let assemblyFormat =
      "$indices attr-dict `:` type($indices) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumClasses() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType()).getShape().back();
    }
  }];
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//
// S tokens of width M are routed to E experts of capacity C, k choices per
// token. A kept route has a slot, expert * C + location; a dropped route has
// slot -1. Dispatch and combine move rows by slot, so their cost is that of
// the routed rows (never the S x E x C one-hot products of GShard's einsums),
// and they are each other's adjoints.
//===----------------------------------------------------------------------===//

def DSC_MoeSlotsOp : DSC_Op<"moe_slots", [Pure]> {
  let summary = "places routed tokens in expert slots, dropping overflow";
  let description = [{
    `experts[s, j]` is the expert of token `s`'s `j`-th choice (an expert
    outside `[0, E)` is a run-time error). `counts[e]` is the number of
    routes to expert `e` before dropping (DeepSpeed's `exp_counts`, over all
    choices). Each expert keeps at most `capacity` routes:

    - without `priority`, the routes of an expert are numbered in choice
      order, then token order: every first choice before any second choice
      (GShard and DeepSpeed's top-1 and top-2 rule); route `p` gets slot
      `e * capacity + p` when `p < capacity` and -1 otherwise;
    - with `priority` (one value per route), an expert keeps the `capacity`
      routes of highest priority (on ties, the earlier in token order) and
      numbers the kept ones in token order: DeepSpeed's random token
      selection (random priorities) and its top-k rule for k >= 3 (the
      gate probabilities).

    The results are integers: routing is not differentiable. E is the size
    of `counts`.

    Example (top-2 over 4 experts, capacity 5):

    ```mlir
    %slots, %counts = dsc.moe_slots %experts, capacity = 5
        : tensor<16x2xi64> -> tensor<16x2xi64>, tensor<4xi64>
    ```
  }];
  let arguments = (ins DSC_I64Tensor:$experts,
                       Optional<StaticShapeTensorOf<[F32]>>:$priority,
                       I64Attr:$capacity);
  let results = (outs DSC_I64Tensor:$slots, DSC_I64Tensor:$counts);
  let assemblyFormat = [{
    $experts (`priority` $priority^)? `,` `capacity` `=` $capacity attr-dict
    `:` type($experts) (`,` type($priority)^)? `->` type($slots) `,`
    type($counts)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumExperts() {
      return ::llvm::cast<::mlir::RankedTensorType>(getCounts().getType())
          .getDimSize(0);
    }
  }];
}

def DSC_MoeDispatchOp : DSC_Op<"moe_dispatch", [Pure]> {
  let summary = "copies each token to the expert slots of its kept routes";
  let description = [{
    `result[slot / C, slot % C, :] = input[s, :] * weights[s, j]` for every
    route `(s, j)` whose slot `slots[s, j]` is not -1, and zero in the slots
    no route fills. `weights` is optional (1 when absent). The result is
    `[E, C, M]`; kept slots are distinct (dsc.moe_slots makes them so) and a
    slot `>= E * C` is a run-time error. The adjoint of dsc.moe_combine.

    Example:

    ```mlir
    %d = dsc.moe_dispatch %x, %slots
        : tensor<16x32xf32>, tensor<16x2xi64> -> tensor<4x5x32xf32>
    ```
  }];
  let arguments = (ins DSC_FloatTensor:$input, DSC_I64Tensor:$slots,
                       Optional<DSC_FloatTensor>:$weights);
  let results = (outs DSC_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $slots (`,` $weights^)? attr-dict `:` type($input) `,`
    type($slots) (`,` type($weights)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def DSC_MoeCombineOp : DSC_Op<"moe_combine", [Pure]> {
  let summary = "sums each token's kept expert outputs, weighted";
  let description = [{
    `result[s, :] = sum_j input[slot / C, slot % C, :] * weights[s, j]` over
    the choices `j` of token `s` (in order) whose slot is not -1; a token
    with no kept route gets zeros. `weights` is optional (1 when absent).
    16-bit inputs are summed in f32 and rounded once. The adjoint of
    dsc.moe_dispatch.

    Example:

    ```mlir
    %y = dsc.moe_combine %out, %slots, %gates
        : tensor<4x5x32xf32>, tensor<16x2xi64>, tensor<16x2xf32>
        -> tensor<16x32xf32>
    ```
  }];
  let arguments = (ins DSC_FloatTensor:$input, DSC_I64Tensor:$slots,
                       Optional<DSC_FloatTensor>:$weights);
  let results = (outs DSC_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $slots (`,` $weights^)? attr-dict `:` type($input) `,`
    type($slots) (`,` type($weights)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def DSC_MoeRouteDotOp : DSC_Op<"moe_route_dot", [Pure]> {
  let summary = "dot product of each token's row with its slots' rows";
  let description = [{
    `result[s, j] = sum_m tokens[s, m] * slotted[slot / C, slot % C, m]` for
    a kept route, 0 for a dropped one (16-bit inputs summed in f32). It is
    the gradient of the routing weights of dsc.moe_dispatch and
    dsc.moe_combine.

    Example:

    ```mlir
    %g = dsc.moe_route_dot %dy, %out, %slots
        : tensor<16x32xf32>, tensor<4x5x32xf32>, tensor<16x2xi64>
        -> tensor<16x2xf32>
    ```
  }];
  let arguments = (ins DSC_FloatTensor:$tokens, DSC_FloatTensor:$slotted,
                       DSC_I64Tensor:$slots);
  let results = (outs DSC_FloatTensor:$result);
  let assemblyFormat = [{
    $tokens `,` $slotted `,` $slots attr-dict `:` type($tokens) `,`
    type($slotted) `,` type($slots) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class DSC_ReduceOp<string mnemonic, string what, Type operandType>
    : DSC_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = what # " over a set of dimensions";
  let description = [{
    Reduces by }] # what # [{ over `dims`, a non-empty, strictly increasing
    list of dimensions of the input. With `keep_dims` the reduced dimensions
    stay with size 1 (PyTorch's `keepdim=True`); otherwise they are removed.

    Example:

    ```mlir
    %r = dsc.}] # mnemonic # [{ %x, dims = [2] keep_dims : tensor<2x8x32xf32>
    // %r : tensor<2x8x1xf32>
    %s = dsc.}] # mnemonic # [{ %x, dims = [0, 1, 2] : tensor<2x8x32xf32>
    // %s : tensor<f32>
    ```
  }];
  let arguments = (ins operandType:$input, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keep_dims);
  let results = (outs operandType:$result);
  let assemblyFormat = [{
    $input `,` `dims` `=` $dims (`keep_dims` $keep_dims^)? attr-dict `:`
    type($input)
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, ::std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::mlir::dsc::inferReductionResult(
          location, adaptor.getInput().getType(), adaptor.getDims(),
          adaptor.getKeepDims(), inferred);
    }
  }];
}

def DSC_ReduceSumOp : DSC_ReduceOp<"reduce_sum", "sum", DSC_NumericTensor>;
def DSC_ReduceMeanOp : DSC_ReduceOp<"reduce_mean", "mean", DSC_FloatTensor>;
def DSC_ReduceMaxOp : DSC_ReduceOp<"reduce_max", "maximum",
                                   DSC_NumericTensor>;

//===----------------------------------------------------------------------===//
// Randomness
//===----------------------------------------------------------------------===//

def DSC_StepKeyOp : DSC_Op<"step_key", [Pure]> {
  let summary = "what identifies this call of the step to its random ops";
  let description = [{
    Four integers the runtime supplies on every call of the step, read by
    the ops whose results depend on a random draw (dsc.dropout):

    - `[0]` the run's seed (`dsc-run --seed`);
    - `[1]` the optimizer step, counted from 1 as dsc-run counts steps (a
      resumed run goes on from the checkpoint's);
    - `[2]` the index, in the optimizer step's global batch (every rank and
      micro-batch of the step), of this rank's first sample of this call;
    - `[3]` 1 when the step trains, 0 for `dsc-run --eval` (a random op is
      then the identity, as under PyTorch's `model.eval()`).

    Nothing else enters a draw, so a run's random numbers do not depend on
    the world size, the ZeRO stage or activation checkpointing: a
    recomputation draws the same numbers.

    `sample_offset` (default 0, at least 0) is added to `[2]`: the key
    names the samples that start `sample_offset` samples after the call's
    first. A call that runs several micro-batches one after the other (a
    pipeline stage, `--dsc-pipeline-parallel`, which stacks a step's
    micro-batches along the inputs' first dimension) gives micro-batch m
    of `rows` samples the key with `sample_offset = m * rows`, so that its
    random ops draw what the call of that micro-batch alone draws under
    gradient accumulation.

    Example:

    ```mlir
    %key = dsc.step_key : tensor<4xi64>
    // The key of the call's third and later samples.
    %key2 = dsc.step_key sample_offset = 2 : tensor<4xi64>
    ```
  }];
  let arguments = (ins DefaultValuedAttr<I64Attr, "0">:$sample_offset);
  let results = (outs DSC_StepKeyTensor:$result);
  let assemblyFormat = [{
    (`sample_offset` `=` $sample_offset^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def DSC_DropoutOp : DSC_Op<"dropout", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "inverted dropout drawn from a counter-based generator";
  let description = [{
    Zeroes each element with probability `p` and scales the others by
    `1 / (1 - p)` (rounded once to f32). `0 <= p < 1`. The input holds
    `samples` samples (the micro-batch), outermost: sample j is the j-th
    block of numel / samples elements. Element e of sample j is drawn by
    Philox4x32-10 (docs/training.md "Dropout") from `key` (dsc.step_key),
    `seed` (the dropout site: the exporter numbers a model's dropouts in the
    order its forward calls them) and the element's index in the global
    batch, (key[2] + j) * (numel / samples) + e. The gradient is the same
    dropout of the cotangent: the mask is drawn again, never stored. With
    `key[3] = 0` (evaluation) the op is the identity.

    With `part %r of G` the input is the r-th of G equal contiguous parts of
    each sample of a whole input (r = %r[0], in [0, G)): a rank's slice of
    the attention probabilities' heads or of the tokens under tensor and
    sequence parallelism, r the rank's index in the tensor group (there a
    `dsc.local_shard` over tensor of the constant [0, 1, ..., G - 1]).
    Element e of sample j is then drawn at (key[2] + j) * (G * n) + r * n +
    e, n = numel / samples: the draw of the element the whole input holds
    there, so the G parts draw the whole input's mask between them.
    Without it, G is 1 and r is 0.

    Examples:

    ```mlir
    %d = dsc.dropout %x, %key, p = 1.000000e-01, seed = 3, samples = 2
        : tensor<2x8x32xf32>
    %mine = dsc.dropout %x, %key, p = 1.000000e-01, seed = 3, samples = 2
        part %r of 4 : tensor<2x2x32xf32>
    ```
  }];
  let arguments = (ins DSC_FloatTensor:$input, DSC_StepKeyTensor:$key,
                       F64Attr:$p, I64Attr:$seed, I64Attr:$samples,
                       Optional<DSC_PartIndexTensor>:$part,
                       DefaultValuedAttr<I64Attr, "1">:$parts);
  let results = (outs DSC_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $key `,` `p` `=` $p `,` `seed` `=` $seed `,` `samples` `=` $samples
    (`part` $part^ `of` $parts)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def DSC_RandomLtdIndicesOp : DSC_Op<"random_ltd_indices", [Pure]> {
  let summary = "the tokens random layerwise token dropping keeps";
  let description = [{
    For each of the `B` samples of the call, `K` distinct positions of a
    sequence of `length`, in increasing order: the kept tokens of random-LTD
    (`--dsc-random-ltd`), which every layer that drops tokens in this step
    gathers alike. Sample j is sample g = key[2] + j of the optimizer step's
    global batch; position t gets the priority

    ```
    word t % 4 of Philox4x32-10(counter = {t / 4, low, high 32 bits of g,
                                           step},
                                key = {low 32 bits of the run's seed,
                                       high 32 bits ^ 0x4C544400 ^ seed})
    ```

    (step = key[1], the run's seed = key[0], `seed` this op's attribute,
    taken modulo 2^32), and the `K` positions of least (priority, position)
    are kept. Nothing but the run's seed, the step and the sample's place in
    the global batch enters a draw, so the indices do not depend on the
    world size, the micro-batch or the ZeRO stage, and a resumed run draws
    what the uninterrupted run drew. `1 <= K <= length`.

    Example (2 samples of 8 tokens, 4 kept):

    ```mlir
    %key = dsc.step_key : tensor<4xi64>
    %idx = dsc.random_ltd_indices %key, length = 8, seed = 0
        : tensor<2x4xi64>
    ```
  }];
  let arguments = (ins DSC_StepKeyTensor:$key, I64Attr:$length,
                       I64Attr:$seed);
  let results = (outs DSC_I64Tensor:$result);
  let assemblyFormat = [{
    $key `,` `length` `=` $length `,` `seed` `=` $seed attr-dict `:`
    type($result)
  }];
  let hasVerifier = 1;
}

def DSC_RandomUniformOp : DSC_Op<"random_uniform", [Pure]> {
  let summary = "uniform floats drawn from a counter-based generator";
  let description = [{
    f32 values in `[low, high]`, one per element, for a tensor that holds
    `samples` samples outermost (the micro-batch): element e of sample j is
    element g = (key[2] + j) * (numel / samples) + e of the optimizer step's
    global batch, and its value is `low + (high - low) * u`, computed in
    double and rounded once to f32, with

    ```
    u = (2 * (w >> 9) + 1) / 2^24         in (0, 1), never 0 or 1
    w = word g % 4 of Philox4x32-10(
          counter = {low, high 32 bits of g / 4, seed, step},
          key = {low 32 bits of the run's seed,
                 high 32 bits ^ 0x554E4900})
    ```

    (step = key[1], the run's seed = key[0], `seed` this op's site, taken
    modulo 2^32). The key's tag sets these draws apart from dsc.dropout's,
    which use the same counter under the untagged key, and from
    dsc.random_ltd_indices' (another tag), whatever the sites. Nothing but
    the run's seed, the step, the site and the element's place in the
    global batch enters a draw: the values do not depend on the world size,
    the micro-batch split or recomputation. Unlike dsc.dropout, the op draws
    in evaluation too (`key[3]` is not read): what evaluation means is the
    reader's choice. The result depends on no float operand, so autodiff
    takes it as a constant. `low < high`, both finite.

    Mixture-of-experts gating draws its noise with it (`--dsc-moe`): random
    token selection's priorities, jitter's factors, Gumbel noise
    `-log(-log(u))`.

    Example (4 samples of 16 tokens, 8 experts):

    ```mlir
    %key = dsc.step_key : tensor<4xi64>
    %u = dsc.random_uniform %key, low = 0.0, high = 1.0, seed = 2, samples = 4
        : tensor<64x8xf32>
    ```
  }];
  let arguments = (ins DSC_StepKeyTensor:$key, F64Attr:$low, F64Attr:$high,
                       I64Attr:$seed, I64Attr:$samples);
  let results = (outs StaticShapeTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $key `,` `low` `=` $low `,` `high` `=` $high `,` `seed` `=` $seed `,`
    `samples` `=` $samples attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def DSC_CrossEntropyOp : DSC_Op<"cross_entropy", [Pure, InferTypeOpAdaptor]> {
  let summary = "softmax cross-entropy against integer class targets";
  let description = [{
    `F.cross_entropy` with the classes in the last dimension of `logits`
    (`[..., C]`) and integer targets of shape `[...]`. Targets equal to
    `ignore_index` (default -100) contribute nothing; `reduction = mean`
    (default) divides by the number of targets not ignored, `sum` adds, and
    `none` returns the per-target losses with the targets' shape.

    Example (a language-model loss):

    ```mlir
    %loss = dsc.cross_entropy %logits, %targets
        : tensor<2x8x256xf32>, tensor<2x8xi64>
    // %loss : tensor<f32>
    %per_token = dsc.cross_entropy %logits, %targets ignore_index = 0
        reduction = none : tensor<2x8x256xf32>, tensor<2x8xi64>
    // %per_token : tensor<2x8xf32>
    ```
  }];
  let arguments = (ins DSC_FloatTensor:$logits, DSC_IndexTensor:$targets,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       DefaultValuedAttr<DSC_LossReduction,
                           "::mlir::dsc::LossReduction::mean">:$reduction);
  let results = (outs DSC_FloatTensor:$result);
  let extraClassDeclaration = [{
    /// Builds the number of targets that are not ignore_index, as a scalar
    /// of the loss's element type: the divisor of reduction = mean.
    ::mlir::Value buildCountedTargets(::mlir::OpBuilder &builder);
  }];
  let assemblyFormat = [{
    $logits `,` $targets (`ignore_index` `=` $ignore_index^)?
    (`reduction` `=` $reduction^)? attr-dict `:` type($logits) `,`
    type($targets)
  }];
}

def DSC_CrossEntropyGradOp : DSC_Op<"cross_entropy_grad",
    [Pure, AllTypesMatch<["logits", "result"]>]> {
  let summary = "gradient of dsc.cross_entropy with respect to its logits";
  let description = [{
    `result[..., :] = (softmax(logits[..., :]) - one_hot(targets[...])) *
    scale[...]` along the class dimension (the last), and 0 in the rows
    whose target is `ignore_index`. `scale` has the targets' shape: each
    row's share of the loss's cotangent (dy for `reduction = none`, dy /
    the number of counted targets for `mean`). Autodiff writes the gradient
    of `dsc.cross_entropy` as this op so that it runs as one pass over the
    logits (the library's fused classifier), never writing the
    probabilities.

    Example:

    ```mlir
    %dlogits = dsc.cross_entropy_grad %logits, %targets, %scale
        : tensor<2x8x256xf32>, tensor<2x8xi64>, tensor<2x8xf32>
    ```
  }];
  let arguments = (ins DSC_FloatTensor:$logits, DSC_IndexTensor:$targets,
                       DSC_FloatTensor:$scale,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs DSC_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $targets `,` $scale (`ignore_index` `=` $ignore_index^)?
    attr-dict `:` type($logits) `,` type($targets) `,` type($scale)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

def DSC_AllReduceOp : DSC_Op<"all_reduce", [SameOperandsAndResultType]> {
  let summary = "sum over every data-parallel rank";
  let description = [{
    Every rank contributes its `input`; every rank receives the elementwise
    sum. Collectives are not pure: generic passes (CSE, canonicalization)
    never remove, merge or reorder them; only dsc's own deterministic
    scheduling passes (`--dsc-schedule-collectives`,
    `--dsc-bucket-collectives`) move and merge them, identically on every
    rank, so all ranks issue them in the same order. Every collective
    sits in the body of a single-block function, never in a nested region
    (a kernel, a branch), which a rank could run a different number of
    times than another: the verifier checks it, so that the order of
    collectives is the program order on every rank.

    Example (the global token count of a data-parallel loss):

    ```mlir
    %total = dsc.all_reduce %count : tensor<f32>
    ```

    `over` names the ranks it sums over (`world` when absent; see
    `CollectiveGroup`): an expert's gradient is summed over its replicas,

    ```mlir
    %g = dsc.all_reduce %partial over expert_data : tensor<2x128x32xf32>
    ```

    `maximum` takes the elementwise maximum instead of the sum. Its result
    has no gradient: it is used where a value only shifts a computation
    whose result does not depend on it, as the largest logit over a tensor
    group shifts a vocabulary-parallel cross-entropy (Megatron detaches it
    alike); autodiff passes nothing through it.

    ```mlir
    %m = dsc.all_reduce %local_max over tensor maximum : tensor<64x1xf32>
    ```

    `stages` (over `pipeline` only) sums over the ranks of this rank's
    pipeline group at those stages, in increasing order, at least two, this
    module's stage among them: a weight that only some stages read (GPT-2's
    tied embedding and head at P > 2) is summed by its readers alone, as
    DeepSpeed's tied-layer groups do. The other stages take no part.

    ```mlir
    %g = dsc.all_reduce %partial over pipeline stages [0, 3] : tensor<64x32xf32>
    ```
  }];
  let arguments = (ins DSC_NumericTensor:$input,
                       DefaultValuedAttr<DSC_CollectiveGroup,
                           "::mlir::dsc::CollectiveGroup::world">:$group,
                       UnitAttr:$maximum,
                       OptionalAttr<DenseI64ArrayAttr>:$stages);
  let results = (outs DSC_NumericTensor:$result);
  let assemblyFormat =
      "$input (`over` $group^)? (`stages` $stages^)? (`maximum` $maximum^)? attr-dict `:` type($input)";
  // A sum (or maximum) over every rank of the group: no stages.
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input,
                   CArg<"::mlir::dsc::CollectiveGroup",
                        "::mlir::dsc::CollectiveGroup::world">:$group,
                   CArg<"bool", "false">:$maximum), [{
      build($_builder, $_state, input, group, maximum,
            ::mlir::DenseI64ArrayAttr());
    }]>
  ];
  let hasVerifier = 1;
}

def DSC_ReplicateOp : DSC_Op<"replicate", [SameOperandsAndResultType]> {
  let summary = "a value every rank of a group holds alike (Megatron's f)";
  let description = [{
    The identity on each rank. It marks where a value that the ranks of
    `over` hold alike (the input of a tensor-parallel block) enters work
    that each rank does on its own slice: each rank's cotangent of it is
    then a partial one, and its gradient is their `dsc.all_reduce` over the
    group, the conjugate of the forward all-reduce that ends such a block
    (Megatron's f and g). Autodiff derives both from the ops' gradients; the
    lowering makes it a view of its input. Not pure: generic passes keep it
    where the tensor-parallel pass put it, so that the backward sum happens
    once per block.

    Example (the input of a column-parallel linear map):

    ```mlir
    %x1 = dsc.replicate %x over tensor : tensor<64x32xf32>
    ```
  }];
  let arguments = (ins DSC_NumericTensor:$input,
                       DefaultValuedAttr<DSC_CollectiveGroup,
                           "::mlir::dsc::CollectiveGroup::tensor">:$group);
  let results = (outs DSC_NumericTensor:$result);
  let assemblyFormat = "$input (`over` $group^)? attr-dict `:` type($input)";
}

// The partitioned collectives move flat (1-D) tensors: a whole tensor of W * S
// elements (padded by the ZeRO pass with dsc.concat of zeros where numel is
// not a multiple of W) and its shards of S elements, W being the size of the
// collective's group (the module's `dsc.world_size` for `world`). Rank r's
// shard is elements [r * S, (r + 1) * S), r its index in the group.

def DSC_AllGatherOp : DSC_Op<"all_gather", [SameOperandsAndResultElementType]> {
  let summary = "concatenates every rank's shard, in rank order";
  let description = [{
    Every rank contributes its shard `input` of S elements; every rank
    receives the W * S elements of all shards, rank 0's first (W is the
    enclosing module's `dsc.world_size`). ZeRO re-assembles a partitioned
    parameter with it. Its gradient is a `dsc.reduce_scatter` of the
    cotangent (each rank's cotangent of the whole is partial). Not pure: see
    `dsc.all_reduce`.

    Example (W = 2):

    ```mlir
    %whole = dsc.all_gather %shard : tensor<8xf32> -> tensor<16xf32>
    ```

    `alike` says that every rank of the group uses the gathered whole
    alike (the work after it is replicated, as after the all-gather that
    restores the tokens of duplicate token dropping): its cotangent is then
    the same on every rank rather than partial, and the gradient is the
    rank's own shard of it (`dsc.local_shard`), no communication (Megatron's
    gather whose backward splits).

    ```mlir
    %tokens = dsc.all_gather %mine over tensor alike
        : tensor<64xf32> -> tensor<128xf32>
    ```
  }];
  let arguments = (ins DSC_NumericTensor:$input,
                       DefaultValuedAttr<DSC_CollectiveGroup,
                           "::mlir::dsc::CollectiveGroup::world">:$group,
                       UnitAttr:$alike);
  let results = (outs DSC_NumericTensor:$result);
  let assemblyFormat =
      "$input (`over` $group^)? (`alike` $alike^)? attr-dict `:` type($input) "
      "`->` type($result)";
  let hasVerifier = 1;
}

def DSC_ReduceScatterOp : DSC_Op<"reduce_scatter",
                                 [SameOperandsAndResultElementType]> {
  let summary = "sum over every rank, each rank keeping its own shard";
  let description = [{
    Every rank contributes a whole tensor `input` of W * S elements; rank r
    receives elements [r * S, (r + 1) * S) of their elementwise sum (W is
    the enclosing module's `dsc.world_size`). ZeRO stage 2 sums gradients
    with it into the rank that owns them, instead of an all-reduce. Its
    gradient is a `dsc.all_gather` of the cotangent. Not pure: see
    `dsc.all_reduce`.

    Example (W = 2):

    ```mlir
    %shard = dsc.reduce_scatter %grad : tensor<16xf32> -> tensor<8xf32>
    ```
  }];
  let arguments = (ins DSC_NumericTensor:$input,
                       DefaultValuedAttr<DSC_CollectiveGroup,
                           "::mlir::dsc::CollectiveGroup::world">:$group);
  let results = (outs DSC_NumericTensor:$result);
  let assemblyFormat =
      "$input (`over` $group^)? attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def DSC_AllToAllOp : DSC_Op<"all_to_all", [SameOperandsAndResultType]> {
  let summary = "exchanges one block with every rank of a group";
  let description = [{
    `input`'s leading dimension holds N equal blocks, N the size of the
    group (`over`, see `CollectiveGroup`): block j goes to the group's rank
    j, and block j of the result is the block that rank j sent to this
    rank. Expert parallelism sends each expert's dispatched tokens to the
    rank that owns the expert, and the experts' outputs back, with it. Its
    gradient is the same exchange of the cotangent (the exchange is a
    permutation of the blocks of all ranks, its own transpose). Not pure:
    see `dsc.all_reduce`.

    Example (2 ranks per expert group, 4 experts, capacity 3):

    ```mlir
    %mine = dsc.all_to_all %dispatched over expert : tensor<4x3x32xf32>
    ```
  }];
  let arguments = (ins DSC_NumericTensor:$input,
                       DefaultValuedAttr<DSC_CollectiveGroup,
                           "::mlir::dsc::CollectiveGroup::world">:$group);
  let results = (outs DSC_NumericTensor:$result);
  let assemblyFormat = "$input (`over` $group^)? attr-dict `:` type($input)";
  let hasVerifier = 1;
}

// Pipeline parallelism's point-to-point transfers: between a stage and its
// neighbour in the pipeline group, matched by the order in which the two
// stages issue them (and the micro-batch they carry).

def DSC_F32Scalar : 0DTensorOf<[F32]> {
  let builderCall = "::mlir::RankedTensorType::get({}, $_builder.getF32Type())";
}

def DSC_PipelineSendOp : DSC_Op<"pipeline_send"> {
  let summary = "sends an activation or its gradient to a neighbouring stage";
  let description = [{
    Sends `input` to this rank's `next` or `previous` stage in its pipeline
    group (`CollectiveGroup::pipeline`), where a `dsc.pipeline_recv` from
    the opposite side with the same type and micro-batch receives it. The
    stages issue their transfers in the order of their schedule, which
    `--dsc-pipeline-schedule` makes agree on the two sides.

    The result is a scalar zero that a stage adds to its loss, so that the
    loss depends on what the stage sends: autodiff then reaches the ops
    that computed it, and the send's gradient rule makes the input's
    cotangent a `dsc.pipeline_recv` from the same peer (the gradient the
    later stages computed). A send of a gradient (to `previous`, built by a
    receive's gradient rule) has an unused result. Not pure: it stays where
    it is, once.

    Example (the residual stream of micro-batch 1 leaving stage 0):

    ```mlir
    %z = dsc.pipeline_send %x to next micro_batch 1 : tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins DSC_NumericTensor:$input, DSC_PipelinePeer:$peer,
                       I64Attr:$micro_batch);
  let results = (outs DSC_F32Scalar:$zero);
  let assemblyFormat =
      "$input `to` $peer `micro_batch` $micro_batch attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def DSC_PipelineRecvOp : DSC_Op<"pipeline_recv"> {
  let summary = "receives an activation or its gradient from a neighbouring stage";
  let description = [{
    Receives the tensor that this rank's `previous` or `next` stage in its
    pipeline group sends with the matching `dsc.pipeline_send`: the static
    result type is the message's shape. A received activation is an input
    of the stage's graph that autodiff differentiates with respect to (it
    depends on the earlier stages' parameters); its gradient rule sends the
    cotangent back to the same peer. Not pure.

    Example (the same activation arriving at stage 1):

    ```mlir
    %x = dsc.pipeline_recv from previous micro_batch 1 : tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins DSC_PipelinePeer:$peer, I64Attr:$micro_batch);
  let results = (outs DSC_NumericTensor:$result);
  let assemblyFormat =
      "`from` $peer `micro_batch` $micro_batch attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def DSC_LocalShardOp : DSC_Op<"local_shard", [
    Pure, SameOperandsAndResultElementType]> {
  let summary = "this rank's shard of a replicated tensor (no communication)";
  let description = [{
    Rank r's elements [r * S, (r + 1) * S) of `input`, a whole tensor of
    W * S elements that every rank of the group `over` holds (W is the
    group's size, the module's `dsc.world_size` for `world`; r the rank's
    index in its group). The only dsc op whose value depends on the rank:
    ZeRO stage 1 takes each rank's part of a replicated parameter and
    gradient with it, an expert's over its expert-data group; duplicate
    token dropping each rank's part of the dispatched tokens, over its
    tensor group. Gradient: the `dsc.all_gather` of the shards' cotangents
    (the input is the same on every rank; each rank's shard feeds its own
    work, and the input's cotangent is all of them).

    Example (W = 2):

    ```mlir
    %mine = dsc.local_shard %whole : tensor<16xf32> -> tensor<8xf32>
    %expert = dsc.local_shard %experts over expert_data
        : tensor<16xf32> -> tensor<8xf32>
    ```
  }];
  let arguments = (ins DSC_Tensor:$input,
                       DefaultValuedAttr<DSC_CollectiveGroup,
                           "::mlir::dsc::CollectiveGroup::world">:$group);
  let results = (outs DSC_Tensor:$result);
  let assemblyFormat =
      "$input (`over` $group^)? attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

def DSC_OptimizerBoundaryOp : DSC_Op<"optimizer_boundary", [Pure]> {
  let summary = "values that exist only on the call that ends an optimizer step";
  let description = [{
    Gradient accumulation (`--dsc-optimizer="grad-accum=N"`, N > 1): one
    call of the step is one micro-batch, and only the N-th call of an
    optimizer step reduces the gradients over the ranks and updates. The
    results are the operands, unchanged, but only on that call: every op
    that reads a result (the gradients' collectives, clipping, the update
    and its stores) runs once per optimizer step, every other op on each
    call. The lowering runs the ops that do not depend on the results
    first and ends the other calls there (`dscrt.micro_step_exit`), so the
    ranks, which all count the same micro-steps, issue the same
    collectives in the same order. At most one per graph.

    Example:

    ```mlir
    %sum = dsc.optimizer_boundary %acc : (tensor<4xf32>) -> tensor<4xf32>
    %g = dsc.all_reduce %sum : tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<DSC_Tensor>:$inputs);
  let results = (outs Variadic<DSC_Tensor>:$results);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $results)";
  let builders = [OpBuilder<(ins "::mlir::ValueRange":$inputs), [{
    build($_builder, $_state, inputs.getTypes(), inputs);
  }]>];
  let hasVerifier = 1;
}

// The update of every parameter of a step as one op, so that the step runs
// one multi-tensor library kernel (dsc/kernels/Optimizer.h) whatever the
// number of tensors. Per tensor the arithmetic is fp32, in the order the
// library's header states (PyTorch's formulas); scalars are 0-d f32 tensors.
class DSC_MultiTensorUpdateOp<string mnemonic>
    : DSC_Op<mnemonic, [Pure, AttrSizedOperandSegments, AttrSizedResultSegments,
                        DeclareOpInterfaceMethods<DSC_MultiTensorUpdateOpInterface>]> {
  let hasVerifier = 1;
}

def DSC_AdamUpdateOp : DSC_MultiTensorUpdateOp<"adam_update"> {
  let summary = "Adam or AdamW step of many parameters at once";
  let description = [{
    For each tensor i: `g = float(grads[i]) * unscale * clip_coef` (each
    factor when given), then with `t = step`
      Adam (L2):  `g += p * weight_decay` (when weight_decay != 0);
      AdamW:      `p *= 1 - lr * weight_decay` (`constant_lr` given: the
                  factor is `float(1 - constant_lr * weight_decay)`);
      `m = m * beta1 + g * (1 - beta1)`,
      `v = v * beta2 + (g * g) * (1 - beta2)`,
      `p -= (m / (sqrt(v) / sqrt(1 - beta2^t) + eps)) * (lr / (1 - beta1^t))`;
    and each 16-bit copy is the new `p` rounded to nearest even. With `skip`
    true every result is its old value (`copies` then holds the old 16-bit
    values; without `skip` the op has none).

    `params`, `exp_avgs`, `exp_avg_sqs` are f32, one of each per tensor with
    its shape; `grads` all have one element type (f32, bf16 or f16), which
    `new_copies` have too. Results: the new `params`, `exp_avgs`,
    `exp_avg_sqs` and, in mixed precision, the new 16-bit parameters.

    Example:

    ```mlir
    %p:2, %m:2, %v:2 = dsc.adam_update params(%w, %b : tensor<4x8xf32>, tensor<8xf32>)
        grads(%gw, %gb : tensor<4x8xf32>, tensor<8xf32>)
        exp_avgs(%mw, %mb : tensor<4x8xf32>, tensor<8xf32>)
        exp_avg_sqs(%vw, %vb : tensor<4x8xf32>, tensor<8xf32>)
        copies() lr(%lr : tensor<f32>) step(%t : tensor<f32>)
        {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, decoupled}
        -> (tensor<4x8xf32>, tensor<8xf32>), (tensor<4x8xf32>, tensor<8xf32>),
           (tensor<4x8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Variadic<DSC_FloatTensor>:$params,
                       Variadic<DSC_FloatTensor>:$grads,
                       Variadic<DSC_FloatTensor>:$exp_avgs,
                       Variadic<DSC_FloatTensor>:$exp_avg_sqs,
                       Variadic<DSC_FloatTensor>:$copies,
                       DSC_FloatTensor:$lr, DSC_FloatTensor:$step,
                       Optional<DSC_FloatTensor>:$unscale,
                       Optional<DSC_FloatTensor>:$clip_coef,
                       Optional<DSC_BoolTensor>:$skip,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps,
                       F64Attr:$weight_decay, UnitAttr:$decoupled,
                       OptionalAttr<F64Attr>:$constant_lr);
  let results = (outs Variadic<DSC_FloatTensor>:$new_params,
                      Variadic<DSC_FloatTensor>:$new_exp_avgs,
                      Variadic<DSC_FloatTensor>:$new_exp_avg_sqs,
                      Variadic<DSC_FloatTensor>:$new_copies);
  let assemblyFormat = [{
    `params` `(` $params `:` type($params) `)`
    `grads` `(` $grads `:` type($grads) `)`
    `exp_avgs` `(` $exp_avgs `:` type($exp_avgs) `)`
    `exp_avg_sqs` `(` $exp_avg_sqs `:` type($exp_avg_sqs) `)`
    `copies` `(` ($copies^ `:` type($copies))? `)`
    `lr` `(` $lr `:` type($lr) `)` `step` `(` $step `:` type($step) `)`
    (`unscale` `(` $unscale^ `:` type($unscale) `)`)?
    (`clip_coef` `(` $clip_coef^ `:` type($clip_coef) `)`)?
    (`skip` `(` $skip^ `:` type($skip) `)`)?
    attr-dict `->` `(` type($new_params) `)` `,` `(` type($new_exp_avgs) `)` `,`
    `(` type($new_exp_avg_sqs) `)` (`copies` `(` type($new_copies)^ `)`)?
  }];
}

def DSC_SgdUpdateOp : DSC_MultiTensorUpdateOp<"sgd_update"> {
  let summary = "SGD (with momentum) step of many parameters at once";
  let description = [{
    For each tensor i: `g = float(grads[i]) * unscale * clip_coef` (each
    factor when given), `g += p * weight_decay` (when weight_decay != 0),
    with momentum `buf = buf * momentum + g, g = buf`, then `p -= g * lr`;
    each 16-bit copy is the new `p` rounded to nearest even. `skip`, the
    types and `copies` are as for `dsc.adam_update`; `momentum_buffers`
    (f32) are given, one per tensor, exactly when momentum != 0.

    Example:

    ```mlir
    %p, %buf = dsc.sgd_update params(%w : tensor<4xf32>) grads(%g : tensor<4xf32>)
        momentum_buffers(%m : tensor<4xf32>) copies() lr(%lr : tensor<f32>)
        {momentum = 0.9, weight_decay = 0.0}
        -> (tensor<4xf32>) momentum_buffers(tensor<4xf32>)
    ```
  }];
  let arguments = (ins Variadic<DSC_FloatTensor>:$params,
                       Variadic<DSC_FloatTensor>:$grads,
                       Variadic<DSC_FloatTensor>:$momentum_buffers,
                       Variadic<DSC_FloatTensor>:$copies,
                       DSC_FloatTensor:$lr,
                       Optional<DSC_FloatTensor>:$unscale,
                       Optional<DSC_FloatTensor>:$clip_coef,
                       Optional<DSC_BoolTensor>:$skip,
                       F64Attr:$momentum, F64Attr:$weight_decay);
  let results = (outs Variadic<DSC_FloatTensor>:$new_params,
                      Variadic<DSC_FloatTensor>:$new_momentum_buffers,
                      Variadic<DSC_FloatTensor>:$new_copies);
  let assemblyFormat = [{
    `params` `(` $params `:` type($params) `)`
    `grads` `(` $grads `:` type($grads) `)`
    `momentum_buffers` `(` ($momentum_buffers^ `:` type($momentum_buffers))? `)`
    `copies` `(` ($copies^ `:` type($copies))? `)`
    `lr` `(` $lr `:` type($lr) `)`
    (`unscale` `(` $unscale^ `:` type($unscale) `)`)?
    (`clip_coef` `(` $clip_coef^ `:` type($clip_coef) `)`)?
    (`skip` `(` $skip^ `:` type($skip) `)`)?
    attr-dict `->` `(` type($new_params) `)`
    (`momentum_buffers` `(` type($new_momentum_buffers)^ `)`)?
    (`copies` `(` type($new_copies)^ `)`)?
  }];
}

def DSC_SumSquaresOp : DSC_Op<"sum_squares", [Pure, AttrSizedOperandSegments]> {
  let summary = "the sum of squares of many tensors (a global norm squared)";
  let description = [{
    `sum over i of (sum over the elements x of inputs[i] of (float(x) *
    scale)^2)`, each tensor's sum rounded to f32 and the tensors' sums added
    in order in f32 (`scale` 1 when absent). An inf or a NaN in any input
    makes it NaN, and so does any value with `scale` 0, which is how the
    step tests its gradients for overflow. Gradient clipping reads the global
    norm from it. The inputs have one element type (f32, bf16 or f16).

    Example:

    ```mlir
    %s = dsc.sum_squares(%gw, %gb : tensor<4x8xbf16>, tensor<8xbf16>)
        scale(%unscale : tensor<f32>) : tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<DSC_FloatTensor>:$inputs,
                       Optional<DSC_FloatTensor>:$scale);
  let results = (outs DSC_FloatTensor:$result);
  let assemblyFormat = [{
    `(` $inputs `:` type($inputs) `)` (`scale` `(` $scale^ `:` type($scale) `)`)?
    attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

#endif // DSC_DIALECT_DSC_IR_DSCOPS_TD
