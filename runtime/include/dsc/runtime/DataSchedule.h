//===- DataSchedule.h - curriculum and random-LTD schedules ------*- C++ -*-===//
//
// DeepSpeed's data-efficiency schedules, step by step: the sequence length of
// curriculum learning (the legacy `curriculum_learning` block, `seqlen`
// difficulty) and the kept length of random layerwise token dropping
// (`data_efficiency.data_routing.random_ltd`), with the counter of layer
// tokens DeepSpeed's random-LTD scheduler keeps. Also the buckets: the few
// lengths an artifact is compiled for, chosen so that rounding every step's
// length up to its bucket costs at most a given share of the exact
// schedule's FLOPs.
//
// One implementation for both sides: dsc-run picks each step's variant with
// it, the compiler chooses the buckets and reports them with it. So it
// neither throws nor uses MLIR; checks return a message.
//
// Step numbers are dsc-run's (the optimizer step, counted from 1). DeepSpeed's
// engine asks the curriculum for global_steps + 1 and the random-LTD
// scheduler for global_steps (counted from 0): the functions take dsc's step
// and make that shift themselves.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_DATASCHEDULE_H
#define DSC_RUNTIME_DATASCHEDULE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dsc::rt {

/// curriculum_learning.schedule_type.
enum class CurriculumType : int32_t { FixedLinear, FixedRoot, FixedDiscrete };

/// The `curriculum_learning` block with `curriculum_type: seqlen`.
struct CurriculumSchedule {
  CurriculumType type = CurriculumType::FixedLinear;
  int64_t minDifficulty = 0;
  int64_t maxDifficulty = 0;
  /// fixed_linear and fixed_root: schedule_config.total_curriculum_step and
  /// difficulty_step; fixed_root also root_degree.
  int64_t totalSteps = 0;
  int64_t difficultyStep = 1;
  double rootDegree = 1;
  /// fixed_discrete: schedule_config.difficulty (one more entry than
  /// max_step) and max_step (increasing).
  std::vector<int64_t> difficulty;
  std::vector<int64_t> maxStep;
};

/// Why `schedule` is unusable, or nothing.
std::optional<std::string> checkCurriculum(const CurriculumSchedule &schedule);

/// The sequence length of optimizer step `step` (from 1).
int64_t curriculumSeqlen(const CurriculumSchedule &schedule, int64_t step);

/// random_ltd.random_ltd_schedule (schedule_type fixed_linear) and the layer
/// counts of the counter.
struct RandomLtdSchedule {
  int64_t minValue = 0;
  int64_t maxValue = 0;
  /// schedule_config.require_steps and seq_per_step.
  int64_t requireSteps = 1;
  int64_t seqPerStep = 1;
  /// total_layer_num and random_ltd_layer_num.
  int64_t totalLayers = 0;
  int64_t ltdLayers = 0;
  /// The index draw's site seed (data_efficiency.seed, `ltd-seed`).
  int64_t seed = 0;
};

/// The index draw (dsc.random_ltd_indices) of an artifact compiled with a
/// fixed kept length (`--ltd-kept`): its sequence length, kept tokens and
/// site seed (the run setting `random_ltd_draw=T,K,SEED`).
struct RandomLtdDraw {
  int64_t length = 0;
  int64_t kept = 0;
  int64_t seed = 0;
};

std::optional<std::string> checkRandomLtd(const RandomLtdSchedule &schedule);

/// The kept length of optimizer step `step` (from 1).
int64_t randomLtdKept(const RandomLtdSchedule &schedule, int64_t step);

/// DeepSpeed's consumed layer tokens after steps 1..`step` with
/// `globalBatch` samples each: per step, globalBatch * (kept * ltdLayers +
/// maxValue * (totalLayers - ltdLayers)). `kept` is what each step ran
/// with: `keptOfStep(s)`.
template <typename KeptOfStep>
int64_t consumedLayerTokens(const RandomLtdSchedule &schedule,
                            int64_t globalBatch, int64_t step,
                            KeptOfStep keptOfStep) {
  int64_t tokens = 0;
  for (int64_t s = 1; s <= step; ++s)
    tokens += globalBatch *
              (keptOfStep(s) * schedule.ltdLayers +
               schedule.maxValue * (schedule.totalLayers - schedule.ltdLayers));
  return tokens;
}

/// The cost of a step at length v, a + b v + c v^2 (a transformer step's
/// FLOPs are this polynomial of its sequence or kept length).
struct LengthCost {
  double a = 0, b = 0, c = 0;
  double operator()(int64_t v) const {
    double x = static_cast<double>(v);
    return a + b * x + c * x * x;
  }
};

/// How many steps run at each length: (length, steps), increasing lengths.
using LengthHistogram = std::vector<std::pair<int64_t, int64_t>>;

/// The lengths of steps 1..`steps` of `lengthOfStep` (the schedule's end:
/// after it every step has the last length).
template <typename LengthOfStep>
LengthHistogram lengthHistogram(int64_t steps, LengthOfStep lengthOfStep) {
  LengthHistogram histogram;
  for (int64_t s = 1; s <= steps; ++s) {
    int64_t v = lengthOfStep(s);
    auto it = histogram.begin();
    while (it != histogram.end() && it->first < v)
      ++it;
    if (it != histogram.end() && it->first == v)
      ++it->second;
    else
      histogram.insert(it, {v, 1});
  }
  return histogram;
}

/// The fewest increasing lengths, the largest of `histogram` among them,
/// such that running each step at the least of them that is at least its
/// length costs at most `budget` (0.02: 2%) more than the exact lengths.
std::vector<int64_t> chooseBuckets(const LengthHistogram &histogram,
                                   const LengthCost &cost, double budget);

/// The extra cost of `buckets` over the exact lengths, as a share of the
/// exact cost.
double bucketOverhead(const LengthHistogram &histogram,
                      const std::vector<int64_t> &buckets,
                      const LengthCost &cost);

/// The least bucket that is at least `length` (the last one if none is).
int64_t bucketFor(const std::vector<int64_t> &buckets, int64_t length);

/// An artifact's schedules and buckets, as its run settings carry them
/// (lines `curriculum_schedule=fixed_linear`, `ltd_buckets=64,96,128`, ...,
/// which the compiler's --dsc-data-variants writes).
struct DataSchedulePlan {
  std::optional<CurriculumSchedule> curriculum;
  std::optional<RandomLtdSchedule> randomLtd;
  std::vector<int64_t> seqlenBuckets;
  std::vector<int64_t> keptBuckets;
  /// Staged knowledge distillation (`kd_stop_step`): the last step that
  /// runs the teacher.
  std::optional<int64_t> kdStopStep;
  /// The fixed index draw the artifact's step makes (none with a schedule:
  /// each variant's lengths and `randomLtd->seed` say it).
  std::optional<RandomLtdDraw> ltdDraw;

  bool empty() const { return !curriculum && !randomLtd && !kdStopStep; }
  /// Whether a schedule changes the lengths steps run at.
  bool changesLengths() const { return curriculum || randomLtd; }
  /// Whether step `step` runs the teacher (every step without staged KD).
  bool teacherRuns(int64_t step) const {
    return !kdStopStep || step <= *kdStopStep;
  }
  /// The sequence length and kept length step `step` runs at: each
  /// schedule's length rounded up to its bucket (`fullLength` for a
  /// schedule that is off), the kept length at most the sequence length.
  std::pair<int64_t, int64_t> stepLengths(int64_t step, int64_t fullLength) const;
};

/// Whether `key` is a run setting of the data schedules.
bool isDataScheduleSetting(const std::string &key);
/// Reads setting `key` = `value` into `plan`; why it cannot, or nothing.
std::optional<std::string> readDataScheduleSetting(DataSchedulePlan &plan,
                                                   const std::string &key,
                                                   const std::string &value);
/// Why a plan read from settings is unusable (a schedule without its
/// buckets, a schedule that checkCurriculum or checkRandomLtd refuses), or
/// nothing.
std::optional<std::string> checkDataSchedulePlan(const DataSchedulePlan &plan);

} // namespace dsc::rt

#endif // DSC_RUNTIME_DATASCHEDULE_H
