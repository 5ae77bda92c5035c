//===- PipelineSchedule.cpp - pipeline schedules and their bubble ---------===//

#include "dsc/Analysis/PipelineSchedule.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <limits>

using namespace mlir::dsc::pipeline;
using llvm::SmallVector;

std::optional<ScheduleKind>
mlir::dsc::pipeline::parseScheduleKind(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<ScheduleKind>>(name)
      .Case("gpipe", ScheduleKind::gpipe)
      .Case("1f1b", ScheduleKind::oneFOneB)
      .Case("interleaved", ScheduleKind::interleaved)
      .Case("zb-h1", ScheduleKind::zeroBubbleH1)
      .Default(std::nullopt);
}

llvm::StringRef mlir::dsc::pipeline::stringifyScheduleKind(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::gpipe:
    return "gpipe";
  case ScheduleKind::oneFOneB:
    return "1f1b";
  case ScheduleKind::interleaved:
    return "interleaved";
  case ScheduleKind::zeroBubbleH1:
    return "zb-h1";
  }
  return "";
}

static llvm::Error shapeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// 1F1B on one rank: as many warm-up forwards as stages after it (capped by
/// M), then a forward and a backward in turn, then the remaining backwards.
/// With `weightLag` ≥ 0 the backward is split and each weight pass follows
/// the backward `weightLag` micro-batches later (ZB-H1), the ones left at the
/// end after the last backward.
static SmallVector<Action> oneFOneB(int64_t rank, ScheduleShape shape,
                                   std::optional<int64_t> weightLag) {
  const int64_t p = shape.stages, m = shape.microBatches;
  SmallVector<Action> actions;
  int64_t forwards = std::min(p - rank - 1, m);
  for (int64_t f = 0; f < forwards; ++f)
    actions.push_back({PassKind::forward, f, 0});
  int64_t weights = 0;
  for (int64_t b = 0; b < m; ++b) {
    if (forwards < m)
      actions.push_back({PassKind::forward, forwards++, 0});
    actions.push_back({PassKind::backward, b, 0});
    if (weightLag)
      for (; weights <= b - *weightLag; ++weights)
        actions.push_back({PassKind::weight, weights, 0});
  }
  if (weightLag)
    for (; weights < m; ++weights)
      actions.push_back({PassKind::weight, weights, 0});
  return actions;
}

/// Megatron's interleaved 1F1B on one rank. Forwards walk the micro-batches
/// in groups of P, each group through chunk 0, then chunk 1, ...; backwards
/// the same groups through the chunks in reverse.
static SmallVector<Action> interleaved(int64_t rank, ScheduleShape shape) {
  const int64_t p = shape.stages, m = shape.microBatches, v = shape.chunks;
  const int64_t total = m * v;
  auto forwardAt = [&](int64_t k) -> Action {
    return {PassKind::forward, k / (p * v) * p + k % p, k / p % v};
  };
  auto backwardAt = [&](int64_t k) -> Action {
    return {PassKind::backward, k / (p * v) * p + k % p, v - 1 - k / p % v};
  };
  // Megatron: with M = P every forward runs first; otherwise the warm-up
  // covers the forwards still ahead of this rank's first backward.
  int64_t warmup = m == p ? total : std::min((p - rank - 1) * 2 + (v - 1) * p, total);
  SmallVector<Action> actions;
  for (int64_t k = 0; k < warmup; ++k)
    actions.push_back(forwardAt(k));
  for (int64_t k = 0; k < total - warmup; ++k) {
    actions.push_back(forwardAt(warmup + k));
    actions.push_back(backwardAt(k));
  }
  for (int64_t k = total - warmup; k < total; ++k)
    actions.push_back(backwardAt(k));
  return actions;
}

llvm::Expected<Schedule>
mlir::dsc::pipeline::buildSchedule(ScheduleKind kind, ScheduleShape shape) {
  if (shape.stages < 1 || shape.microBatches < 1 || shape.chunks < 1)
    return shapeError(llvm::formatv("a pipeline needs at least one stage, "
                                    "micro-batch and chunk, got P={0} M={1} V={2}",
                                    shape.stages, shape.microBatches, shape.chunks));
  if (kind == ScheduleKind::interleaved) {
    if (shape.chunks < 2)
      return shapeError("the interleaved schedule needs at least 2 model chunks "
                        "per rank (with one, use 1f1b)");
    if (shape.microBatches % shape.stages != 0)
      return shapeError(llvm::formatv(
          "the interleaved schedule needs the micro-batch count ({0}) to be a "
          "multiple of the pipeline stages ({1})",
          shape.microBatches, shape.stages));
  } else if (shape.chunks != 1) {
    return shapeError(llvm::formatv("the {0} schedule runs one model chunk per "
                                    "rank, got {1}",
                                    stringifyScheduleKind(kind), shape.chunks));
  }
  Schedule schedule{kind, shape, {}};
  for (int64_t rank = 0; rank < shape.stages; ++rank) {
    switch (kind) {
    case ScheduleKind::gpipe: {
      SmallVector<Action> actions;
      for (PassKind pass : {PassKind::forward, PassKind::backward})
        for (int64_t mb = 0; mb < shape.microBatches; ++mb)
          actions.push_back({pass, mb, 0});
      schedule.ranks.push_back(std::move(actions));
      break;
    }
    case ScheduleKind::oneFOneB:
      schedule.ranks.push_back(oneFOneB(rank, shape, std::nullopt));
      break;
    case ScheduleKind::interleaved:
      schedule.ranks.push_back(interleaved(rank, shape));
      break;
    case ScheduleKind::zeroBubbleH1:
      schedule.ranks.push_back(oneFOneB(rank, shape, rank));
      break;
    }
  }
  return schedule;
}

namespace {
/// When each pass of each micro-batch ended, by virtual stage; negative
/// while it has not run.
class Finished {
public:
  Finished(int64_t virtualStages, int64_t microBatches)
      : stages(virtualStages), microBatches(microBatches),
        times(3 * virtualStages * microBatches, -1.0) {}
  double &at(PassKind pass, int64_t stage, int64_t mb) {
    return times[(int64_t(pass) * stages + stage) * microBatches + mb];
  }

private:
  int64_t stages, microBatches;
  SmallVector<double> times;
};
} // namespace

llvm::Expected<Simulation>
mlir::dsc::pipeline::simulatePipeline(const Schedule &schedule, PassCosts costs,
                                      double sendLatency) {
  const ScheduleShape shape = schedule.shape;
  const int64_t p = shape.stages, m = shape.microBatches, v = shape.chunks;
  const int64_t stages = p * v;
  const bool split = schedule.splitsBackward();
  auto cost = [&](PassKind pass) {
    double whole = pass == PassKind::forward    ? costs.forward
                   : pass == PassKind::backward ? costs.backward
                                                : costs.weight;
    return whole / double(v);
  };

  Finished finished(stages, m);
  SmallVector<int64_t> next(p, 0), inFlight(p, 0);
  SmallVector<double> free(p, 0.0);
  Simulation result;
  result.peakInFlight.assign(p, 0);
  if (int64_t(schedule.ranks.size()) != p)
    return shapeError(llvm::formatv("the schedule lists {0} ranks for {1} stages",
                                    schedule.ranks.size(), p));
  // Each rank runs each pass of each micro-batch on each of its chunks once.
  int64_t remaining = 0;
  for (auto [rank, actions] : llvm::enumerate(schedule.ranks)) {
    llvm::DenseSet<int64_t> seen;
    for (const Action &a : actions)
      if (a.microBatch < 0 || a.microBatch >= m || a.chunk < 0 || a.chunk >= v ||
          (a.pass == PassKind::weight && !split) ||
          !seen.insert((int64_t(a.pass) * v + a.chunk) * m + a.microBatch).second)
        return shapeError(llvm::formatv(
            "rank {0} of the {1} schedule lists an action out of range or twice",
            rank, stringifyScheduleKind(schedule.kind)));
    if (int64_t(seen.size()) != (split ? 3 : 2) * m * v)
      return shapeError(llvm::formatv(
          "rank {0} of the {1} schedule misses some of its passes", rank,
          stringifyScheduleKind(schedule.kind)));
    remaining += actions.size();
  }

  // The inputs of `a` on virtual stage `s`: (pass, stage) pairs of the same
  // micro-batch.
  auto inputsOf = [&](const Action &a, int64_t s) {
    SmallVector<std::pair<PassKind, int64_t>, 2> inputs;
    switch (a.pass) {
    case PassKind::forward:
      if (s > 0)
        inputs.push_back({PassKind::forward, s - 1});
      break;
    case PassKind::backward:
      inputs.push_back({PassKind::forward, s});
      if (s + 1 < stages)
        inputs.push_back({PassKind::backward, s + 1});
      break;
    case PassKind::weight:
      inputs.push_back({PassKind::backward, s});
      break;
    }
    return inputs;
  };

  while (remaining > 0) {
    bool progress = false;
    for (int64_t rank = 0; rank < p; ++rank) {
      const auto &actions = schedule.ranks[rank];
      while (next[rank] < int64_t(actions.size())) {
        const Action &a = actions[next[rank]];
        int64_t stage = a.chunk * p + rank;
        double start = free[rank];
        bool ready = true;
        for (auto [pass, from] : inputsOf(a, stage)) {
          double end = finished.at(pass, from, a.microBatch);
          if (end < 0) {
            ready = false;
            break;
          }
          start = std::max(start, end + (from % p == rank ? 0.0 : sendLatency));
        }
        if (!ready)
          break;
        double end = start + cost(a.pass);
        finished.at(a.pass, stage, a.microBatch) = end;
        free[rank] = end;
        result.makespan = std::max(result.makespan, end);
        // A micro-batch's activations on this chunk live from its forward
        // to its last backward pass.
        if (a.pass == PassKind::forward)
          result.peakInFlight[rank] =
              std::max(result.peakInFlight[rank], ++inFlight[rank]);
        else if (a.pass == (split ? PassKind::weight : PassKind::backward))
          --inFlight[rank];
        ++next[rank];
        --remaining;
        progress = true;
      }
    }
    if (!progress)
      return shapeError(llvm::formatv(
          "the {0} schedule deadlocks: no rank can run its next action",
          stringifyScheduleKind(schedule.kind)));
  }
  result.ideal = double(m) * (costs.forward + costs.backward +
                              (split ? costs.weight : 0.0));
  return result;
}
