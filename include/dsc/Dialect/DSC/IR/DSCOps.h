//===- DSCOps.h - dsc operations --------------------------------*- C++ -*-===//

#ifndef DSC_DIALECT_DSC_IR_DSCOPS_H
#define DSC_DIALECT_DSC_IR_DSCOPS_H

#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSC/IR/DSCInterfaces.h"
#include "dsc/Dialect/DSC/IR/DSCTraits.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dsc/Dialect/DSC/IR/DSCEnums.h.inc"

namespace mlir::dsc {

/// Result type of a broadcasting elementwise op: the NumPy broadcast of the
/// operand shapes, with `elementType` (or the first operand's when null).
/// Fails with a diagnostic at `loc` when an operand is not a static tensor or
/// the shapes do not broadcast.
LogicalResult inferBroadcastResult(std::optional<Location> loc,
                                   ArrayRef<Type> operandTypes,
                                   Type elementType,
                                   SmallVectorImpl<Type> &inferred);

/// Result type of a reduction of `input` over `dims` (strictly increasing,
/// in range, non-empty), keeping size-1 dimensions when `keepDims`.
LogicalResult inferReductionResult(std::optional<Location> loc, Type input,
                                   ArrayRef<int64_t> dims, bool keepDims,
                                   SmallVectorImpl<Type> &inferred);

/// The module attribute holding the number of data-parallel ranks
/// (`--dsc-data-parallel`).
constexpr llvm::StringLiteral kWorldSizeAttrName = "dsc.world_size";
/// Ranks that share each MoE layer's experts (expert parallelism); absent: 1.
constexpr llvm::StringLiteral kExpertParallelSizeAttrName =
    "dsc.expert_parallel_size";

/// Ranks that split each layer's weights (tensor parallelism, Megatron's
/// tensor group); absent: 1.
constexpr llvm::StringLiteral kTensorParallelSizeAttrName =
    "dsc.tensor_parallel_size";

/// Pipeline stages (pipeline parallelism, outermost in the mesh); absent: 1.
constexpr llvm::StringLiteral kPipelineParallelSizeAttrName =
    "dsc.pipeline_parallel_size";

/// The stage whose program a pipeline-parallel module holds, and the
/// micro-batches one call of its step runs (`--dsc-pipeline-parallel`).
constexpr llvm::StringLiteral kPipelineStageAttrName = "dsc.pipeline_stage";
constexpr llvm::StringLiteral kPipelineMicroBatchesAttrName =
    "dsc.pipeline_micro_batches";
/// Marks a parameter that several pipeline stages hold (a tied weight):
/// its gradient is summed over the pipeline group (a unit attribute) or,
/// when only some stages read it, over those (an array of their stages,
/// in increasing order).
constexpr llvm::StringLiteral kPipelineTiedAttrName = "dsc.pipeline_tied";
/// Marks a forward op of a pipeline stage with the micro-batch it computes.
constexpr llvm::StringLiteral kMicroBatchAttrName = "dsc.micro_batch";
/// The model chunks a rank holds under the interleaved schedule (V, set by
/// `--dsc-pipeline-parallel` when above 1: rank r runs virtual stages
/// r, r + P, ..., r + (V - 1)P), and the chunk of a forward op or a
/// transfer, beside its `dsc.micro_batch`; absent: 1 and 0.
constexpr llvm::StringLiteral kPipelineChunksAttrName = "dsc.pipeline_chunks";
constexpr llvm::StringLiteral kPipelineChunkAttrName = "dsc.pipeline_chunk";
/// The prefixes of the model's repeated blocks (`transformer.h`: states
/// `transformer.h.<i>.*`), recorded on a pipeline stage's module by
/// `--dsc-pipeline-parallel`: a stage may hold a single block, whose states
/// alone would not show that it is one of several.
constexpr llvm::StringLiteral kRepeatedBlocksAttrName = "dsc.repeated_blocks";

/// The prefix of a teacher's weights (StateRole::teacher, `--dsc-distill`):
/// `teacher.h.0.attn.c_attn.weight` is the teacher's `h.0.attn.c_attn.weight`.
constexpr llvm::StringLiteral kTeacherPrefix = "teacher.";

/// The `dsc.world_size` of the module enclosing `op` (or `op` itself), if
/// it is set.
std::optional<int64_t> lookupWorldSize(Operation *op);

/// The `dsc.tensor_parallel_size` of the module enclosing `op` (or `op`
/// itself); 1 when it is not set.
int64_t lookupTensorParallelSize(Operation *op);

/// The `dsc.pipeline_parallel_size` of the module enclosing `op` (or `op`
/// itself); 1 when it is not set.
int64_t lookupPipelineParallelSize(Operation *op);

/// The group the data-parallel sums run over: the world, or with tensor
/// or pipeline parallelism (T > 1 or P > 1) the data group of the ranks
/// that hold the same slices of the same stage.
CollectiveGroup dataParallelGroup(Operation *op);

/// The number of ranks in `group` for the module enclosing `op`: the world
/// size W, the expert-parallel size P (`dsc.expert_parallel_size`, 1 when
/// absent) or W / P, the tensor-parallel size T
/// (`dsc.tensor_parallel_size`, 1 when absent), the pipeline stages S
/// (`dsc.pipeline_parallel_size`, 1 when absent) or W / (T * S). Fails with a
/// diagnostic on `op` when the module has no world size or P or T does
/// not divide it.
FailureOr<int64_t> lookupGroupSize(Operation *op, CollectiveGroup group);

/// Checks the `stages` of a collective over `group` (dsc.all_reduce's and
/// dscrt.all_reduce's): only over the pipeline group, at least two stages
/// of the module's pipeline in increasing order, among them the module's
/// own stage when it names one. A diagnostic on `op` otherwise.
LogicalResult verifyPipelineStages(Operation *op, CollectiveGroup group,
                                   ArrayRef<int64_t> stages);

/// The group a dsc collective (all_reduce, all_gather, reduce_scatter,
/// all_to_all) runs over; nullopt for any other op.
std::optional<CollectiveGroup> getCollectiveGroup(Operation *op);

/// Elements per rank of a tensor of `numel` elements partitioned over
/// `worldSize` ranks: ceil(numel / worldSize), without the overflow of
/// numel + worldSize - 1 near int64's limit.
inline int64_t shardSize(int64_t numel, int64_t worldSize) {
  return numel / worldSize + (numel % worldSize != 0);
}

} // namespace mlir::dsc

#define GET_OP_CLASSES
#include "dsc/Dialect/DSC/IR/DSCOps.h.inc"

#endif // DSC_DIALECT_DSC_IR_DSCOPS_H
