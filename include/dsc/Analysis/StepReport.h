//===- StepReport.h - per-rank memory and communication of a step -*- C++ -*-===//
//
// What one rank of a data-parallel training step holds and sends, computed
// from the IR after --dsc-zero (docs/zero.md, "Reports"):
//   - model states, ZeRO's accounting: parameters, gradients, fp32 master
//     weights and optimizer state, each as partitioned at the module's stage
//     (the formulas 16Ψ, 4Ψ+12Ψ/N, 2Ψ+14Ψ/N, 16Ψ/N for mixed-precision Adam);
//   - the memory the runtime allocates: every dsc.state (rounded to the
//     allocator's 256 bytes), the activation arena of the memory plan, and
//     the graph's inputs and outputs; their sum is the per-rank peak that
//     dsc-run reports; and the buffers alive at the arena's busiest point,
//     grouped by type, writer and last reader (ArenaBuffers.h);
//   - every collective of the step with the bytes this rank sends (the ring
//     formulas of runtime/include/dsc/runtime/CommStats.h, which dsc-run
//     counts) and nccl-tests' bus bytes.
// Every rank holds the same figures: shards are ceil(numel/N) elements on
// every rank, padding included, and every rank issues the same collectives.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_ANALYSIS_STEPREPORT_H
#define DSC_ANALYSIS_STEPREPORT_H

#include "dsc/Analysis/ArenaBuffers.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::dsc {

/// One rank's memory, in bytes.
struct RankMemory {
  // Model states (exact sizes, padding included).
  int64_t parameters = 0; // parameter states as the forward reads them
  int64_t gradients = 0;  // reduced gradients the update reads (+ accumulators)
  int64_t master = 0;     // fp32 master weights (mixed precision)
  int64_t optimizer = 0;  // optimizer state (moments, step, loss scale)
  int64_t modelStates() const {
    return parameters + gradients + master + optimizer;
  }
  // Of the model states, those of the experts this rank holds (expert
  // parallelism: split over the expert group, replicated over the
  // expert-data group), and of those, the ones ZeRO partitions over the
  // expert-data group; the rest are the world's, and of those, the ones
  // ZeRO partitions over the world.
  int64_t expertStates = 0;
  int64_t expertStatesOverExpertData = 0;
  int64_t worldStatesPartitioned = 0;
  // Other state: buffers that are not trained (running statistics, masks).
  int64_t buffers = 0;
  // A frozen teacher's weights (--dsc-distill): read by the forward only,
  // with no gradient, master or optimizer state.
  int64_t teacher = 0;
  // Staging of collectives, inside the arena: the largest bucket's packed
  // buffer and result (--dsc-bucket-collectives), and the most bytes of
  // gathered parameters waiting for their first use at once (prefetch).
  int64_t buckets = 0;
  int64_t prefetch = 0;
  // The runtime's allocations: states, the arena, inputs and outputs.
  int64_t stateAllocation = 0; // every dsc.state, 256-byte rounded
  int64_t activations = 0;     // the arena (gradients in flight live there)
  int64_t io = 0;              // inputs and outputs, 256-byte rounded
  /// The device's peak: what lives in device memory.
  int64_t peak() const { return stateAllocation + activations + io; }
  // ZeRO-Offload's pinned host memory: of the model states above, the
  // master weights and optimizer state on the host (the rest is on the
  // device), their allocation (256-byte rounded, not in stateAllocation),
  // and the host arena of copies.
  int64_t hostMaster = 0, hostOptimizer = 0;
  /// Stage 3's parameter partitions on the host (offload_param).
  int64_t hostParameters = 0;
  /// A frozen teacher's weights on the host (offload_param, distillation).
  int64_t hostTeacher = 0;
  int64_t hostStateAllocation = 0;
  int64_t hostArena = 0;
  int64_t pinned() const { return hostStateAllocation + hostArena; }
  // ZeRO-Infinity: of the model states above, the master weights and
  // optimizer state in this rank's NVMe file (read into the host arena for
  // the update), and the file's size (a state of a block, 1 MiB, or more
  // starts at a block boundary, a smaller one at the next 4 KiB page).
  int64_t nvmeMaster = 0, nvmeOptimizer = 0;
  /// Stage 3's parameter partitions in the file (offload_param nvme), or
  /// an evaluation step's parameters (ZeRO-Inference).
  int64_t nvmeParameters = 0;
  /// A distillation teacher's partitions in the file (offload_param nvme).
  int64_t nvmeTeacher = 0;
  int64_t nvmeFile = 0;
};

/// Copies between host and device memory per update (inputs, outputs and
/// ZeRO-Offload's transfers), as dsc-run counts them.
struct TransferReport {
  int64_t d2hCalls = 0, d2hBytes = 0, h2dCalls = 0, h2dBytes = 0;
  /// ZeRO-Infinity's reads and writes of NVMe states per update.
  int64_t nvmeReads = 0, nvmeReadBytes = 0, nvmeWrites = 0,
          nvmeWriteBytes = 0;
};

/// One collective op of the step, or one transfer between pipeline stages.
struct CollectiveReport {
  /// "all_reduce", "all_gather", "reduce_scatter", "all_to_all", or a
  /// pipeline transfer: "send" or "recv".
  std::string kind;
  /// The ranks it runs over: world, expert, expert_data, pipeline.
  std::string group = "world";
  int64_t groupSize = 1; // their number
  std::string element; // "f32", "bf16", ...
  std::string location;
  int64_t payloadBytes = 0; // the call's B (CommStats.h)
  int64_t bytesSent = 0;    // by this rank, per call
  double busBytes = 0;      // nccl-tests: size * bus factor, per call
  int64_t elementBytes = 0;
  int64_t members = 1; // collectives merged into this call (a bucket)
  /// Calls per optimizer step: 1 for those behind the graph's
  /// dsc.optimizer_boundary (the gradients' reductions and what follows),
  /// the micro-batches per update for the others (stage 3's gathers).
  int64_t callsPerUpdate = 1;

  /// Whether this is a point-to-point transfer between pipeline stages.
  bool isTransfer() const { return kind == "send" || kind == "recv"; }
};

/// DeepSpeed's model-state estimator (estimate_zero2/3_model_states_mem_
/// needs in deepspeed.runtime.zero) on this graph's Ψ, its largest module L
/// and N ranks: GPU bytes per rank for each offload choice.
struct DeepSpeedEstimate {
  int64_t zero2 = 0;               // 2Ψ + 18Ψ/N
  int64_t zero2OffloadOptimizer = 0; // 2Ψ
  int64_t zero3 = 0;               // 4L + 18Ψ/N
  int64_t zero3OffloadOptimizer = 0; // 4L + 2Ψ/N
  int64_t zero3OffloadAll = 0;     // 4L
};

struct StepReport {
  int64_t worldSize = 1;
  int64_t expertParallelSize = 1; // EP: the ranks that split a layer's experts
  /// W / (EP T P): the ranks (of one pipeline stage) that hold the same
  /// experts.
  int64_t expertDataSize = 1;
  int64_t tensorParallelSize = 1; // the mesh's tensor groups (Megatron's)
  int64_t zeroStage = 0;
  int64_t gradAccum = 1; // micro-batches (calls of the step) per update
  /// With pipeline parallelism, the report is of one stage's program: its
  /// stage of P, the micro-batches one call of it runs, and the model
  /// chunks it holds (the interleaved schedule's V).
  int64_t pipelineParallelSize = 1, pipelineStage = 0,
          pipelineMicroBatches = 1, pipelineChunks = 1;
  int64_t parameterElements = 0; // Ψ, whole parameters
  /// Parameters of the largest module (states named `<module>.<leaf>`).
  int64_t largestModuleElements = 0;
  /// The inlined teacher's forward FLOPs per micro-batch (--dsc-distill's
  /// dsc.teacher_flops; 0: no teacher).
  int64_t teacherFlops = 0;
  RankMemory memory;
  /// Stage 3: trained parameters (not experts') partitioned over the ranks
  /// and those that stay whole, each with their elements; of the whole
  /// ones, those the persistence threshold keeps (at most `persistence
  /// Threshold` elements; the others are kept by the unshard budget).
  struct Stage3Parameters {
    int64_t partitioned = 0, partitionedElements = 0;
    int64_t whole = 0, wholeElements = 0;
    int64_t underThreshold = 0;
    int64_t persistenceThreshold = -1; // -1: not stage 3
    // The experts' (counted apart, by the rank's experts): partitioned
    // over their expert-data group, or whole on the rank.
    int64_t experts = 0, expertsPartitioned = 0, expertsUnderThreshold = 0;
  } stage3;
  /// What fills the arena where its live bytes peak (set with the arena).
  ArenaPeak arenaPeak;
  std::vector<CollectiveReport> collectives; // per call, program order

  /// The report of `module`'s single graph, with the arena size of its
  /// memory plan (`arenaBytes`, dscrt.arena_bytes after --dsc-plan-memory).
  static StepReport compute(ModuleOp module, int64_t arenaBytes);
  /// Copies between host and device per update (set with the arena).
  TransferReport transfers;

  int64_t bytesSentPerStep() const;
  /// Elements each rank moves per update, in units of Ψ (the ZeRO paper's
  /// 2Ψ for stages 0-2, 3Ψ for stage 3): sent elements / ((N-1)/N) / Ψ.
  double volumeInPsi() const;

  DeepSpeedEstimate estimate() const;

  /// What to print.
  struct Parts {
    bool memory = false, comm = false, estimate = false;
  };
  void printText(llvm::raw_ostream &os, Parts parts) const;
  void printJson(llvm::raw_ostream &os, Parts parts) const;
};

/// Bytes rank `rank` of `worldSize` sends for one call (CommStats.h).
int64_t collectiveBytesSent(llvm::StringRef kind, int64_t payloadBytes,
                            int64_t worldSize);
/// nccl-tests' bus bytes of one call: the test's size times its bus factor.
double collectiveBusBytes(llvm::StringRef kind, int64_t payloadBytes,
                          int64_t worldSize);

} // namespace mlir::dsc

#endif // DSC_ANALYSIS_STEPREPORT_H
