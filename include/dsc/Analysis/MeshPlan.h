//===- MeshPlan.h - which device mesh trains a model fastest ----*- C++ -*-===//
//
// "ZeRO or 3D?" answered for one model on one cluster: every mesh of tensor
// (T), pipeline (P, with V chunks per rank) and data parallelism (D =
// world / (T·P)) with a ZeRO stage, a micro-batch size and activation
// checkpointing on or off, its memory per rank and a step-time estimate,
// ranked. The estimate is a model, not a measurement; its terms are the
// ones the report counts exactly for a compiled step:
//
//   - model states: 16 bytes per parameter for Adam in mixed precision
//     (2 parameter, 2 gradient, 12 optimizer: master, two moments), 16 in
//     fp32 (4, 4, 8), each part divided by D where the ZeRO stage
//     partitions it; a rank holds its pipeline stage's blocks, 1/T of them;
//   - activations per block and micro-batch: s·b·h·(10 + 24/T) 16-bit
//     elements' worth (Korthikanti et al., "Reducing Activation
//     Recomputation in Large Transformer Models", 2022, eq. 2 without the
//     attention scores, which the fused attention op never stores), times
//     the micro-batches a stage holds at once under its schedule (the
//     schedule's simulation says how many); with checkpointing, the blocks'
//     inputs plus one block's working set;
//   - compute: the graph's matmul FLOPs (forward 1, backward 2, +1 when
//     recomputed) at the given FLOP rate;
//   - tensor all-reduces: 2 per block forward and 2 backward, b·s·h
//     elements each, 2(T-1)/T of them sent, on the critical path;
//   - pipeline sends: b·s·h elements per micro-batch across each boundary,
//     as the latency between stages in the schedule's simulation;
//   - data-parallel traffic: the gradients' reduction (and at stage 3 two
//     parameter all-gathers per micro-batch), of which only what outlasts
//     the compute it overlaps is added to the step;
//   - mixture of experts (E experts in some blocks): expert parallelism
//     (EP ranks along the data dimension, EP dividing E and D) holds E/EP
//     of each layer's experts per rank, split over T as well (TED), their
//     ZeRO partitions over the D/EP ranks of the expert-data group; each
//     MoE layer's 2 all-to-alls forward and 2 backward send (EP-1)/EP of
//     the rank's dispatched slots (b · slots per sample · h), divided by T
//     (duplicate token dropping), on the critical path; a checkpointed
//     block keeps its collectives' outputs (communication-aware
//     checkpointing). Every block is taken to hold the largest block's
//     dense parameters and, in the share of blocks that are MoE layers,
//     its experts.
// A group's bandwidth is the intra-node one when its ranks share a node
// (ranks laid out tensor innermost, then data, then pipeline: Megatron's).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_ANALYSIS_MESHPLAN_H
#define DSC_ANALYSIS_MESHPLAN_H

#include "dsc/Analysis/PipelineSchedule.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::dsc::plan {

/// What the plan needs to know of a transformer, found in its exported
/// graph (MeshPlanPass) or written down by a test.
struct TransformerShape {
  int64_t blocks = 0;  // L, the repeated blocks
  int64_t hidden = 0;  // h, the residual stream's width
  int64_t heads = 0;   // attention heads per block (0: no attention found)
  int64_t vocab = 0;   // V, rows of the token embedding
  int64_t seq = 0;     // s, tokens per sample
  /// Parameters of the largest block, and outside the blocks: before the
  /// first block (the embedding tables, on the first stage) and after the
  /// last (final norm, an untied head, on the last stage).
  int64_t blockParameters = 0;
  int64_t embeddingParameters = 0;
  int64_t headParameters = 0;
  /// The head reads the token embedding (GPT-2's tied weights): the last
  /// stage holds a copy of it.
  bool tiedHead = false;
  /// Forward matmul FLOPs per sample: of one block, and after the last
  /// block (the logits' product).
  double blockFlops = 0;
  double headFlops = 0;
  /// Mixture of experts: the blocks that route tokens to experts, the
  /// experts per such layer, the slots a layer dispatches per sample (E ·
  /// capacity / batch: what its all-to-all moves), and the parameters of
  /// one layer's experts together (inside blockParameters).
  int64_t moeLayers = 0;
  int64_t experts = 0;
  double expertSlots = 0;
  int64_t layerExpertParameters = 0;

  int64_t parameters() const {
    return blocks * blockParameters + embeddingParameters + headParameters;
  }
};

struct Cluster {
  int64_t world = 1;
  int64_t nodeSize = 8;        // ranks per node
  double deviceMemory = 80e9;  // bytes a rank may use
  double flops = 312e12;       // matmul FLOP/s a rank sustains
  double intraNodeBandwidth = 150e9; // bytes/s a rank sends within a node
  double interNodeBandwidth = 25e9;  // ... and across nodes
  int64_t globalBatch = 0;     // samples per optimizer step
  bool mixedPrecision = true;  // bf16/fp16 with fp32 masters, or fp32
};

struct Mesh {
  int64_t tensor = 1, pipeline = 1, chunks = 1, data = 1;
  int64_t expert = 1; // EP: ranks of an expert group, within the data ranks
  int64_t zeroStage = 0;
  int64_t microBatch = 1;   // b, samples per micro-batch
  int64_t microBatches = 1; // M, per optimizer step and data rank
  bool checkpoint = false;
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::oneFOneB;
};

struct MeshEstimate {
  Mesh mesh;
  // Bytes per rank on the rank that holds the most (the first or the last
  // pipeline stage).
  double parameters = 0, gradients = 0, optimizer = 0, activations = 0;
  double memory() const { return parameters + gradients + optimizer + activations; }
  bool fits = false;
  // Seconds per optimizer step: the pipeline's busy time (compute and
  // tensor all-reduces), its bubble, and the data-parallel traffic left
  // exposed; their sum is the step.
  double compute = 0, recompute = 0, tensorComm = 0, expertComm = 0,
         bubble = 0, dataComm = 0;
  double step() const {
    return compute + recompute + tensorComm + expertComm + bubble + dataComm;
  }
  double bubbleFraction = 0; // bubble / busy time
  // Bytes each rank sends per step, per group.
  double tensorBytes = 0, pipelineBytes = 0, dataBytes = 0, expertBytes = 0;
  double mfu = 0; // model FLOPs (no recomputation) / (step · world · rate)
  /// Why the mesh ranks where it does (set by rankMeshes).
  std::string reason;
};

/// Estimates one mesh, or an error saying why it is not a mesh of this
/// model on this cluster (T not dividing the heads, P over the blocks, ...).
llvm::Expected<MeshEstimate> estimateMesh(const TransformerShape &model,
                                          const Cluster &cluster,
                                          const Mesh &mesh);

/// Restricts the meshes considered: a tensor or pipeline size other than 0
/// is the only one tried ("what if T must be 8?").
struct MeshFilter {
  int64_t tensor = 0, pipeline = 0, expert = 0;
};

/// Every mesh of the model on the cluster, those that fit first, fastest
/// first (ties: the smaller memory first), the others smallest first, with
/// the reason for each rank. An error when the inputs cannot describe a run
/// (no blocks, a global batch of 0, ...) or no mesh divides them.
llvm::Expected<std::vector<MeshEstimate>>
rankMeshes(const TransformerShape &model, const Cluster &cluster,
           MeshFilter filter = {});

/// The ranking as a table: the first `rows` meshes that fit, the fastest
/// with ZeRO alone (T = P = 1) if it is not among them, and a count of the
/// rest.
void printPlan(llvm::raw_ostream &os, const TransformerShape &model,
               const Cluster &cluster, llvm::ArrayRef<MeshEstimate> ranked,
               size_t rows);

} // namespace mlir::dsc::plan

#endif // DSC_ANALYSIS_MESHPLAN_H
