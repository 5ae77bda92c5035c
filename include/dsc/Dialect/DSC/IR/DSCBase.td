//===- DSCBase.td - dsc dialect definition and type constraints -*- tablegen -*-===//
//
// The dialect, the tensor type constraints shared by every op, and the base
// class that gives every dsc op the tensor-size bound.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_DIALECT_DSC_IR_DSCBASE_TD
#define DSC_DIALECT_DSC_IR_DSCBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def DSC_Dialect : Dialect {
  let name = "dsc";
  let cppNamespace = "::mlir::dsc";
  let summary = "Training graphs of PyTorch models, ready to be distributed";
  let description = [{
    The `dsc` dialect holds the forward graph and loss of a PyTorch model as
    captured by `python3 -m dsc.export`, and later the training step that the
    compiler builds from it (backward, optimizer, collectives).

    * **Model state by name.** Parameters and buffers are module-level
      `dsc.state` symbols carrying the fully-qualified PyTorch name
      (`@"h.0.attn.c_attn.weight"`), the tensor type and a role. Functions read
      them with `dsc.load`. Weights never live in the IR: they are in a
      safetensors file keyed by the same names.
    * **Graph inputs and outputs by name.** A graph is a `func.func` whose
      arguments carry `dsc.input = "tokens"` and whose results carry
      `dsc.output = "loss"`.
    * **Value semantics on static tensors.** Every op takes and returns
      statically shaped builtin tensors of f64, f32, f16, bf16, i64, i32 or i1,
      whose size in bytes fits in int64. Dimension arguments (`dim`, `dims`,
      `permutation`) are canonical: non-negative and in range.

    Example: the loss of a one-layer linear model.

    ```mlir
    dsc.state parameter @"fc.weight" : tensor<4x8xf32>
    func.func @forward(%x: tensor<2x8xf32> {dsc.input = "x"},
                       %y: tensor<2xi64> {dsc.input = "y"})
        -> (tensor<f32> {dsc.output = "loss"}) {
      %w = dsc.load @"fc.weight" : tensor<4x8xf32>
      %logits = dsc.linear %x, %w : tensor<2x8xf32>, tensor<4x8xf32>
      %loss = dsc.cross_entropy %logits, %y : tensor<2x4xf32>, tensor<2xi64>
      return %loss : tensor<f32>
    }
    ```
  }];
  let hasConstantMaterializer = 1;
  // `dsc.input` / `dsc.output` on function arguments and results.
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Argument attribute naming a graph input, e.g. "tokens".
    static constexpr ::llvm::StringLiteral kInputAttrName = "dsc.input";
    /// Result attribute naming a graph output, e.g. "loss".
    static constexpr ::llvm::StringLiteral kOutputAttrName = "dsc.output";
    /// Result attribute naming the parameter a gradient output belongs to
    /// (`--dsc-autodiff`), e.g. @"fc.weight".
    static constexpr ::llvm::StringLiteral kGradientOfAttrName =
        "dsc.gradient_of";
    /// Module attribute: the micro-batches of one optimizer step (gradient
    /// accumulation, `--dsc-optimizer=grad-accum=N`); absent means 1.
    static constexpr ::llvm::StringLiteral kGradAccumAttrName =
        "dsc.grad_accum";
    /// Module attributes: how dsc-run logs the artifact's steps, from the
    /// config's steps_per_print and csv_monitor (`--dsc-run-logging`).
    static constexpr ::llvm::StringLiteral kStepsPerPrintAttrName =
        "dsc.steps_per_print";
    static constexpr ::llvm::StringLiteral kCsvMonitorAttrName =
        "dsc.csv_monitor";
    /// Module attribute: the curriculum and random-LTD schedules and the
    /// length buckets dsc-run picks each step's variant with, as run
    /// settings lines (`--dsc-data-variants`).
    static constexpr ::llvm::StringLiteral kDataScheduleAttrName =
        "dsc.data_schedule";
    /// Module attributes of ZeRO-Infinity (`--dsc-offload=optimizer=nvme`):
    /// the sub-groups whose NVMe states are read ahead of the host update
    /// (DeepSpeed's buffer_count), and the directory of the per-rank files
    /// (nvme_path, a run setting dsc-run's --nvme-path overrides).
    static constexpr ::llvm::StringLiteral kNvmeBufferCountAttrName =
        "dsc.nvme_buffer_count";
    static constexpr ::llvm::StringLiteral kNvmePathAttrName =
        "dsc.nvme_path";
    /// Module attribute: the ZeRO stage `--dsc-zero` partitioned the step
    /// for; absent means 0.
    static constexpr ::llvm::StringLiteral kZeroStageAttrName =
        "dsc.zero_stage";
    /// Module attribute: the stage-3 persistence threshold `--dsc-zero`
    /// used (parameters of at most this many elements stay whole).
    static constexpr ::llvm::StringLiteral kZeroPersistenceThresholdAttrName =
        "dsc.zero_persistence_threshold";
    /// Module attribute: the seed of the backward when it is not 1
    /// (`--dsc-autodiff=seed=... seed-state=...`, the loss scale), as
    /// `{value = f64, state = @name}` (state optional).
    static constexpr ::llvm::StringLiteral kBackwardSeedAttrName =
        "dsc.backward_seed";
    /// Collective attribute: the collectives `--dsc-bucket-collectives`
    /// merged into this one (an i64 count).
    static constexpr ::llvm::StringLiteral kBucketAttrName = "dsc.bucket";
    /// State attribute (unit): a float parameter that stays fp32 under
    /// mixed precision, read by fp32 arithmetic (an MoE gate, as DeepSpeed
    /// keeps it); it has no master copy.
    static constexpr ::llvm::StringLiteral kKeepFp32AttrName =
        "dsc.keep_fp32";
    /// Module attribute: the FLOPs of the matrix products of the teacher's
    /// forward that `--dsc-distill` inlined, per micro-batch (an i64; the
    /// step report prints it beside the teacher's bytes).
    static constexpr ::llvm::StringLiteral kTeacherFlopsAttrName =
        "dsc.teacher_flops";
    /// Op attribute: the fused kernel an elementwise op belongs to (an i64
    /// numbering the groups of its function, `--dsc-form-kernels`); the
    /// ops of one group become one dscrt.kernel.
    static constexpr ::llvm::StringLiteral kFusionGroupAttrName =
        "dsc.fusion_group";
  }];
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def DSC_FloatElement : AnyTypeOf<[F64, F32, F16, BF16]>;
def DSC_IntElement : AnyTypeOf<[I64, I32]>;
def DSC_NumericElement : AnyTypeOf<[F64, F32, F16, BF16, I64, I32]>;
def DSC_Element : AnyTypeOf<[F64, F32, F16, BF16, I64, I32, I1]>;

def DSC_Tensor : StaticShapeTensorOf<[F64, F32, F16, BF16, I64, I32, I1]>;
def DSC_NumericTensor : StaticShapeTensorOf<[F64, F32, F16, BF16, I64, I32]>;
def DSC_FloatTensor : StaticShapeTensorOf<[F64, F32, F16, BF16]>;
def DSC_IndexTensor : StaticShapeTensorOf<[I64, I32]>;
def DSC_BoolTensor : StaticShapeTensorOf<[I1]>;
def DSC_I64Tensor : StaticShapeTensorOf<[I64]>;
// dsc.step_key's four integers.
def DSC_StepKeyTensor : Type<And<[DSC_I64Tensor.predicate,
    CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).getShape() == "
          "::llvm::ArrayRef<int64_t>{4}">]>, "tensor<4xi64>">,
    BuildableType<"::mlir::RankedTensorType::get({4}, $_builder.getI64Type())">;
// A rank's index in a group, as dsc.local_shard takes it from a constant
// [0, 1, ..., G - 1].
def DSC_PartIndexTensor : Type<And<[DSC_I64Tensor.predicate,
    CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).getShape() == "
          "::llvm::ArrayRef<int64_t>{1}">]>, "tensor<1xi64>">,
    BuildableType<"::mlir::RankedTensorType::get({1}, $_builder.getI64Type())">;

//===----------------------------------------------------------------------===//
// Op base
//===----------------------------------------------------------------------===//

// Every operand and result of a dsc op has an element count and a byte size
// that fit in int64. Checked once here rather than in every verifier, so that
// later analyses (memory plans, ZeRO partitions) can multiply sizes freely.
def DSC_BoundedTensorSize : NativeOpTrait<"BoundedTensorSize"> {
  let cppNamespace = "::mlir::dsc::OpTrait";
}

// An op computing each result element from the operand elements at the same
// (broadcast) position, and nothing else: the lowering fuses chains of them
// into one kernel (or a library kernel's prologue or epilogue), and ZeRO-3
// follows them from a gathered parameter. Unlike upstream `Elementwise`,
// operands may broadcast (NumPy rules) to the result's shape.
def DSC_Elementwise : NativeOpTrait<"Elementwise"> {
  let cppNamespace = "::mlir::dsc::OpTrait";
}

class DSC_Op<string mnemonic, list<Trait> traits = []>
    : Op<DSC_Dialect, mnemonic, !listconcat(traits, [DSC_BoundedTensorSize])>;

#endif // DSC_DIALECT_DSC_IR_DSCBASE_TD
