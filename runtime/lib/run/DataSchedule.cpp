//===- DataSchedule.cpp - curriculum and random-LTD schedules -------------===//
//
// The arithmetic is DeepSpeed's, in the same floating-point operations (a
// double raised to 1/root_degree, floored, less its remainder modulo the
// step), so that every step's length is the one DeepSpeed computes.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/DataSchedule.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace dsc::rt {

namespace {

/// DeepSpeed's __fixed_root_get_difficulty / __fixed_root_get_value:
/// floor((step / total)^(1/degree) * (max - min) + min), less its remainder
/// modulo `increment`, at most `max`. Python's % of two positive numbers is
/// fmod's.
int64_t fixedRoot(int64_t step, int64_t total, double degree, int64_t min,
                  int64_t max, int64_t increment) {
  double progress =
      std::pow(static_cast<double>(step) / static_cast<double>(total),
               1.0 / degree);
  double next = std::floor(progress * static_cast<double>(max - min) +
                           static_cast<double>(min));
  next -= std::fmod(next, static_cast<double>(increment));
  return static_cast<int64_t>(std::min(next, static_cast<double>(max)));
}

int64_t fixedDiscrete(const CurriculumSchedule &s, int64_t step) {
  for (size_t i = 0; i < s.maxStep.size(); ++i)
    if (step <= s.maxStep[i])
      return s.difficulty[i];
  return s.difficulty.back();
}

} // namespace

std::optional<std::string> checkCurriculum(const CurriculumSchedule &s) {
  if (s.minDifficulty < 1)
    return "min_difficulty must be at least 1";
  if (s.maxDifficulty < s.minDifficulty)
    return "max_difficulty must be at least min_difficulty";
  if (s.type == CurriculumType::FixedDiscrete) {
    if (s.maxStep.empty() || s.difficulty.size() != s.maxStep.size() + 1)
      return "fixed_discrete needs one more 'difficulty' than 'max_step'";
    for (size_t i = 0; i < s.maxStep.size(); ++i)
      if (s.maxStep[i] < 1 || (i > 0 && s.maxStep[i] <= s.maxStep[i - 1]))
        return "fixed_discrete's 'max_step' must increase from 1";
    for (int64_t d : s.difficulty)
      if (d < 1 || d > s.maxDifficulty)
        return "fixed_discrete's 'difficulty' must lie in [1, max_difficulty]";
    return std::nullopt;
  }
  if (s.totalSteps < 1)
    return "total_curriculum_step must be at least 1";
  if (s.difficultyStep < 1)
    return "difficulty_step must be at least 1";
  if (s.type == CurriculumType::FixedRoot && !(s.rootDegree >= 1))
    return "root_degree must be at least 1";
  return std::nullopt;
}

int64_t curriculumSeqlen(const CurriculumSchedule &s, int64_t step) {
  // DeepSpeed moves the difficulty only while it is below the maximum
  // (update_difficulty), starting from min_difficulty: for fixed_linear and
  // fixed_root the difficulty never decreases, so that rule changes nothing;
  // a fixed_discrete list that reaches the maximum stays there.
  if (s.type != CurriculumType::FixedDiscrete)
    return fixedRoot(step, s.totalSteps,
                     s.type == CurriculumType::FixedLinear ? 1.0 : s.rootDegree,
                     s.minDifficulty, s.maxDifficulty, s.difficultyStep);
  int64_t current = s.minDifficulty;
  int64_t last = std::min(step, s.maxStep.back() + 1);
  for (int64_t t = 1; t <= last && current < s.maxDifficulty; ++t)
    current = fixedDiscrete(s, t);
  return current;
}

std::optional<std::string> checkRandomLtd(const RandomLtdSchedule &s) {
  if (s.minValue < 1)
    return "min_value must be at least 1";
  if (s.maxValue < s.minValue)
    return "max_value must be at least min_value";
  if (s.requireSteps < 1)
    return "require_steps must be at least 1";
  if (s.seqPerStep < 1)
    return "seq_per_step must be at least 1";
  if (s.totalLayers < 1 || s.ltdLayers < 0 || s.ltdLayers > s.totalLayers)
    return "random_ltd_layer_num must lie in [0, total_layer_num]";
  return std::nullopt;
}

int64_t randomLtdKept(const RandomLtdSchedule &s, int64_t step) {
  // update_seq(global_steps) with global_steps = step - 1; fixed_linear is
  // fixed_root of degree 1, which never decreases.
  return fixedRoot(step - 1, s.requireSteps, 1.0, s.minValue, s.maxValue,
                   s.seqPerStep);
}

double bucketOverhead(const LengthHistogram &histogram,
                      const std::vector<int64_t> &buckets,
                      const LengthCost &cost) {
  double exact = 0, rounded = 0;
  for (auto [length, steps] : histogram) {
    exact += static_cast<double>(steps) * cost(length);
    rounded += static_cast<double>(steps) * cost(bucketFor(buckets, length));
  }
  return exact > 0 ? (rounded - exact) / exact : 0;
}

std::vector<int64_t> chooseBuckets(const LengthHistogram &histogram,
                                   const LengthCost &cost, double budget) {
  size_t n = histogram.size();
  if (n == 0)
    return {};
  // extra(i, j): the cost of running lengths i..j at length j, over their
  // exact cost. best[k][j]: the least extra cost of lengths 0..j with k
  // buckets, the last at j. The first k whose best[k][n-1] fits the budget
  // is the answer (n <= a few thousand distinct lengths: O(k n^2)).
  double exact = 0;
  std::vector<double> steps(n + 1, 0), weighted(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    double c = static_cast<double>(histogram[i].second);
    steps[i + 1] = steps[i] + c;
    weighted[i + 1] = weighted[i] + c * cost(histogram[i].first);
    exact += c * cost(histogram[i].first);
  }
  auto extra = [&](size_t i, size_t j) {
    return (steps[j + 1] - steps[i]) * cost(histogram[j].first) -
           (weighted[j + 1] - weighted[i]);
  };
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> best(n), next(n);
  std::vector<std::vector<size_t>> previous; // previous[k][j]: bucket before j
  for (size_t j = 0; j < n; ++j)
    best[j] = extra(0, j);
  previous.push_back(std::vector<size_t>(n, n));
  for (size_t k = 1;; ++k) {
    if (best[n - 1] <= budget * exact || k == n) {
      std::vector<int64_t> buckets;
      for (size_t j = n - 1, level = k - 1;; --level) {
        buckets.push_back(histogram[j].first);
        j = previous[level][j];
        if (j == n)
          break;
      }
      std::reverse(buckets.begin(), buckets.end());
      return buckets;
    }
    std::vector<size_t> from(n, n);
    for (size_t j = 0; j < n; ++j) {
      next[j] = kInf;
      for (size_t i = 0; i < j; ++i) {
        double candidate = best[i] + extra(i + 1, j);
        if (candidate < next[j]) {
          next[j] = candidate;
          from[j] = i;
        }
      }
    }
    previous.push_back(std::move(from));
    best.swap(next);
  }
}

int64_t bucketFor(const std::vector<int64_t> &buckets, int64_t length) {
  for (int64_t bucket : buckets)
    if (bucket >= length)
      return bucket;
  return buckets.empty() ? length : buckets.back();
}

std::pair<int64_t, int64_t>
DataSchedulePlan::stepLengths(int64_t step, int64_t fullLength) const {
  int64_t seqlen = curriculum ? bucketFor(seqlenBuckets, curriculumSeqlen(*curriculum, step))
                              : fullLength;
  int64_t kept = randomLtd ? bucketFor(keptBuckets, randomLtdKept(*randomLtd, step))
                           : fullLength;
  return {seqlen, std::min(kept, seqlen)};
}

namespace {

std::optional<int64_t> parseInteger(const std::string &text) {
  if (text.empty() || text.size() > 18)
    return std::nullopt;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

std::optional<std::vector<int64_t>> parseIntegers(const std::string &text) {
  std::vector<int64_t> values;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos)
      end = text.size();
    std::optional<int64_t> value = parseInteger(text.substr(begin, end - begin));
    if (!value)
      return std::nullopt;
    values.push_back(*value);
    begin = end + 1;
  }
  return values;
}

} // namespace

bool isDataScheduleSetting(const std::string &key) {
  return key.rfind("curriculum_", 0) == 0 || key.rfind("ltd_", 0) == 0 ||
         key == "seqlen_buckets" || key == "kd_stop_step" ||
         key == "random_ltd_draw";
}

std::optional<std::string> readDataScheduleSetting(DataSchedulePlan &plan,
                                                   const std::string &key,
                                                   const std::string &value) {
  auto bad = [&](const char *what) {
    return std::optional<std::string>("compiled-in " + key + ": expected " +
                                      what + ", got '" + value + "'");
  };
  if (key.rfind("curriculum_", 0) == 0 && !plan.curriculum)
    plan.curriculum.emplace();
  if (key.rfind("ltd_", 0) == 0 && !plan.randomLtd)
    plan.randomLtd.emplace();
  if (key == "curriculum_schedule") {
    if (value == "fixed_linear")
      plan.curriculum->type = CurriculumType::FixedLinear;
    else if (value == "fixed_root")
      plan.curriculum->type = CurriculumType::FixedRoot;
    else if (value == "fixed_discrete")
      plan.curriculum->type = CurriculumType::FixedDiscrete;
    else
      return bad("fixed_linear, fixed_root or fixed_discrete");
    return std::nullopt;
  }
  if (key == "curriculum_root_degree") {
    char *end = nullptr;
    double degree = std::strtod(value.c_str(), &end);
    if (value.empty() || *end)
      return bad("a number");
    plan.curriculum->rootDegree = degree;
    return std::nullopt;
  }
  if (key == "curriculum_difficulty" || key == "curriculum_max_step" ||
      key == "seqlen_buckets" || key == "ltd_buckets") {
    std::optional<std::vector<int64_t>> list = parseIntegers(value);
    if (!list)
      return bad("comma-separated integers");
    (key == "curriculum_difficulty" ? plan.curriculum->difficulty
     : key == "curriculum_max_step" ? plan.curriculum->maxStep
     : key == "seqlen_buckets"      ? plan.seqlenBuckets
                                    : plan.keptBuckets) = *list;
    return std::nullopt;
  }
  if (key == "random_ltd_draw") {
    std::optional<std::vector<int64_t>> draw = parseIntegers(value);
    if (!draw || draw->size() != 3 || (*draw)[1] < 1 || (*draw)[1] > (*draw)[0])
      return bad("LENGTH,KEPT,SEED with 1 <= KEPT <= LENGTH");
    plan.ltdDraw = RandomLtdDraw{(*draw)[0], (*draw)[1], (*draw)[2]};
    return std::nullopt;
  }
  std::optional<int64_t> number = parseInteger(value);
  if (key == "kd_stop_step") {
    if (!number || *number < 1)
      return bad("a positive integer");
    plan.kdStopStep = *number;
    return std::nullopt;
  }
  int64_t *field = nullptr;
  if (key == "curriculum_min")
    field = &plan.curriculum->minDifficulty;
  else if (key == "curriculum_max")
    field = &plan.curriculum->maxDifficulty;
  else if (key == "curriculum_total_steps")
    field = &plan.curriculum->totalSteps;
  else if (key == "curriculum_difficulty_step")
    field = &plan.curriculum->difficultyStep;
  else if (key == "ltd_min")
    field = &plan.randomLtd->minValue;
  else if (key == "ltd_max")
    field = &plan.randomLtd->maxValue;
  else if (key == "ltd_require_steps")
    field = &plan.randomLtd->requireSteps;
  else if (key == "ltd_seq_per_step")
    field = &plan.randomLtd->seqPerStep;
  else if (key == "ltd_total_layers")
    field = &plan.randomLtd->totalLayers;
  else if (key == "ltd_layers")
    field = &plan.randomLtd->ltdLayers;
  else if (key == "ltd_seed")
    field = &plan.randomLtd->seed;
  else
    return "unknown compiled-in run setting '" + key + "'";
  if (!number)
    return bad("an integer");
  *field = *number;
  return std::nullopt;
}

std::optional<std::string> checkDataSchedulePlan(const DataSchedulePlan &plan) {
  if (plan.curriculum) {
    if (std::optional<std::string> problem = checkCurriculum(*plan.curriculum))
      return "compiled-in curriculum: " + *problem;
    if (plan.seqlenBuckets.empty())
      return std::string("compiled-in curriculum without seqlen_buckets");
  }
  if (plan.randomLtd) {
    if (std::optional<std::string> problem = checkRandomLtd(*plan.randomLtd))
      return "compiled-in random-LTD: " + *problem;
    if (plan.keptBuckets.empty())
      return std::string("compiled-in random-LTD without ltd_buckets");
  }
  return std::nullopt;
}

} // namespace dsc::rt
