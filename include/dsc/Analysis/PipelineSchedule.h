//===- PipelineSchedule.h - pipeline schedules and their bubble -*- C++ -*-===//
//
// The order in which each pipeline stage runs the forward and backward
// passes of its micro-batches, for the schedules pipeline parallelism
// offers: GPipe (every forward, then every backward), 1F1B (DeepSpeed's and
// Megatron's: warm-up forwards, then one forward and one backward in turn),
// interleaved 1F1B (Megatron: each rank holds V model chunks, stage
// c·P + r on rank r) and zero-bubble ZB-H1 (the backward split into its
// input-gradient pass B, which the previous stage waits for, and its
// weight-gradient pass W, which nobody waits for; rank r lets its W passes
// trail its B passes by r micro-batches, which fills the cool-down bubble
// with weight gradients at 1F1B's peak activation memory).
//
// A schedule is a static list of actions per rank, the program each stage
// runs; `simulatePipeline` plays the lists against their data dependencies
// with given pass costs, the way the runtime will run them, and measures the
// step's length and the bubble. It knows nothing of any IR: the pipeline pass
// and the report use it, and the unit tests check it against the known
// formulas (bubble (P-1)/M of the ideal time for GPipe and 1F1B,
// (P-1)/(V·M) interleaved, (P-1)(F+B-W) for ZB-H1).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_ANALYSIS_PIPELINESCHEDULE_H
#define DSC_ANALYSIS_PIPELINESCHEDULE_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>

namespace mlir::dsc::pipeline {

enum class ScheduleKind { gpipe, oneFOneB, interleaved, zeroBubbleH1 };

/// The kind named `name` (gpipe, 1f1b, interleaved, zb-h1), if any.
std::optional<ScheduleKind> parseScheduleKind(llvm::StringRef name);
llvm::StringRef stringifyScheduleKind(ScheduleKind kind);

enum class PassKind {
  forward,
  /// The whole backward of a stage (GPipe, 1F1B, interleaved), or, in a
  /// schedule that splits it, the input-gradient part only.
  backward,
  /// The weight-gradient part of a split backward.
  weight,
};

struct Action {
  PassKind pass;
  int64_t microBatch;
  /// Which of the rank's model chunks (0 ≤ chunk < V): the action belongs
  /// to virtual stage chunk·P + rank.
  int64_t chunk;
  bool operator==(const Action &o) const {
    return pass == o.pass && microBatch == o.microBatch && chunk == o.chunk;
  }
};

struct ScheduleShape {
  int64_t stages = 1;       // P, the pipeline's ranks
  int64_t microBatches = 1; // M, the gradient accumulation count
  int64_t chunks = 1;       // V, model chunks per rank (interleaved only)
};

struct Schedule {
  ScheduleKind kind;
  ScheduleShape shape;
  /// ranks[r]: the actions rank r runs, in order. Every (pass, micro-batch,
  /// chunk) of the rank appears exactly once.
  llvm::SmallVector<llvm::SmallVector<Action>> ranks;
  /// Whether the backward is split into backward (input) and weight passes.
  bool splitsBackward() const { return kind == ScheduleKind::zeroBubbleH1; }
};

/// The schedule of `kind` for `shape`, or an error saying why the shape does
/// not suit it (V > 1 for a non-interleaved schedule; interleaving needs
/// M to be a multiple of P, as Megatron requires).
llvm::Expected<Schedule> buildSchedule(ScheduleKind kind, ScheduleShape shape);

/// Cost of one pass of one micro-batch through one rank's whole share of
/// the model (all its chunks together: a chunk's pass costs 1/V of it). For
/// a schedule that does not split the backward, `backward` is the whole
/// backward (input and weight gradients) and `weight` is ignored.
struct PassCosts {
  double forward = 1;
  double backward = 2;
  double weight = 0;
};

struct Simulation {
  /// Time from the first forward's start to the last action's end.
  double makespan = 0;
  /// The busy time of one rank: M · (forward + backward (+ weight)).
  double ideal = 0;
  /// (makespan - ideal) / ideal: the bubble as a fraction of ideal time.
  double bubbleFraction() const { return ideal > 0 ? (makespan - ideal) / ideal : 0; }
  /// The most micro-batches whose activations a rank holds at once (its
  /// forward done, its last backward pass not yet), per rank: what sets a
  /// stage's activation memory.
  llvm::SmallVector<int64_t> peakInFlight;
};

/// Runs `schedule`: each rank takes its actions in order; an action starts
/// when its rank is free and its inputs exist (a forward needs the previous
/// virtual stage's forward of its micro-batch; a backward needs its own
/// forward and the next virtual stage's backward; a weight pass needs its
/// own backward); `sendLatency` is added to every dependency between ranks.
/// An error if the lists deadlock (a malformed schedule).
llvm::Expected<Simulation> simulatePipeline(const Schedule &schedule,
                                            PassCosts costs,
                                            double sendLatency = 0);

} // namespace mlir::dsc::pipeline

#endif // DSC_ANALYSIS_PIPELINESCHEDULE_H
