//===- ClassifierTest.cpp - the fused classifier against references -------===//
//
// The losses and logit gradients of dsc/kernels/Classifier.h for float,
// bf16 and half logits against a double reference; ignored rows, in-place
// gradients, the per-row scale, GPT-2's vocabulary (50,257 classes),
// thread-count independence and the out-of-range target error.
//
//===----------------------------------------------------------------------===//

#include "dsc/kernels/Classifier.h"

#include "RowTestSupport.h"

#include <omp.h>

#include <cstring>
#include <stdexcept>

using namespace dsc::kernels::test;
namespace cpu = dsc::kernels::cpu;
using dsc::rt::BFloat16;
using dsc::rt::Half;

namespace {

struct Reference {
  std::vector<double> loss, dlogits;
};

Reference classifierReference(const std::vector<double> &x,
                              const std::vector<std::int64_t> &targets,
                              const std::vector<double> &scale, std::int64_t scaleStride,
                              std::int64_t rows, std::int64_t classes, std::int64_t ignore) {
  Reference r{std::vector<double>(rows), std::vector<double>(x.size())};
  for (std::int64_t i = 0; i < rows; ++i) {
    std::int64_t t = targets[i];
    if (t == ignore)
      continue;
    const double *xr = x.data() + i * classes;
    double m = -INFINITY, sum = 0;
    for (std::int64_t j = 0; j < classes; ++j)
      m = std::max(m, xr[j]);
    for (std::int64_t j = 0; j < classes; ++j)
      sum += std::exp(xr[j] - m);
    r.loss[i] = m + std::log(sum) - xr[t];
    double s = scale[i * scaleStride];
    for (std::int64_t j = 0; j < classes; ++j)
      r.dlogits[i * classes + j] = (std::exp(xr[j] - m) / sum - (j == t ? 1.0 : 0.0)) * s;
  }
  return r;
}

std::vector<std::int64_t> randomTargets(std::int64_t rows, std::int64_t classes,
                                        std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int64_t> d(0, classes - 1);
  std::vector<std::int64_t> t(rows);
  for (auto &v : t)
    v = d(rng);
  return t;
}

template <typename T> class ClassifierTest : public ::testing::Test {};
using ElementTypes = ::testing::Types<float, BFloat16, Half>;
TYPED_TEST_SUITE(ClassifierTest, ElementTypes);

// The loss is rounded once (relative to the loss) and carries the relative
// error of the row's sum of exps as an absolute error (through its log).
template <typename T> double lossTolerance(const std::vector<double> &loss) {
  return relTolerance<T>() * (maxAbs(loss) + 1.0);
}

// The gradient at the target, (p - 1) * scale, cancels when p is near 1:
// its error is relative to the scale, not to the result.
template <typename T> double gradientTolerance(const std::vector<double> &scale) {
  return relTolerance<T>() * maxAbs(scale) + (std::is_same_v<T, Half> ? 6.0e-8 : 0.0);
}

TYPED_TEST(ClassifierTest, LossAndGradientMatchTheReference) {
  using T = TypeParam;
  struct Case {
    std::int64_t rows, classes;
  };
  for (Case c : {Case{1, 1}, Case{3, 2}, Case{5, 7}, Case{4, 33}, Case{6, 1000}, Case{2, 50257}})
    for (std::int64_t stride : {0, 1}) {
      std::vector<T> logits = randomVector<T>(c.rows * c.classes, c.classes, -4.0f, 4.0f);
      std::vector<std::int64_t> targets = randomTargets(c.rows, c.classes, 5);
      targets[0] = -100; // ignored
      std::vector<T> scale = randomVector<T>(c.rows, 6, 0.1f, 2.0f);
      std::vector<T> loss(c.rows, T(7.0f)), dlogits(logits.size(), T(7.0f));
      std::vector<T> lossOnly(c.rows, T(7.0f));
      cpu::fusedClassifier(cpu::Queue{}, logits.data(), targets.data(), scale.data(),
                           dlogits.data(), loss.data(), stride, c.rows, c.classes, -100);
      cpu::crossEntropyForward(cpu::Queue{}, logits.data(), targets.data(), lossOnly.data(), c.rows,
                               c.classes, -100);
      Reference ref = classifierReference(widen(logits), targets, widen(scale), stride, c.rows,
                                          c.classes, -100);
      std::string what = "rows=" + std::to_string(c.rows) + " V=" + std::to_string(c.classes) +
                         " stride=" + std::to_string(stride);
      expectClose(loss, ref.loss, 0.0, lossTolerance<T>(ref.loss), what + " loss");
      expectClose(lossOnly, ref.loss, 0.0, lossTolerance<T>(ref.loss), what + " loss only");
      expectClose(dlogits, ref.dlogits, relTolerance<T>(), gradientTolerance<T>(widen(scale)),
                  what + " dlogits");
      // The ignored row: loss 0 and a zero gradient whatever its scale.
      EXPECT_EQ(static_cast<float>(loss[0]), 0.0f);
      for (std::int64_t j = 0; j < c.classes; ++j)
        ASSERT_EQ(static_cast<float>(dlogits[j]), 0.0f) << what << " " << j;
    }
}

TYPED_TEST(ClassifierTest, GradientInPlaceOverTheLogits) {
  using T = TypeParam;
  const std::int64_t rows = 4, classes = 301;
  std::vector<T> logits = randomVector<T>(rows * classes, 1), dlogits(rows * classes);
  std::vector<std::int64_t> targets = randomTargets(rows, classes, 2);
  std::vector<T> scale = {T(0.25f)}, loss(rows), lossInPlace(rows);
  cpu::fusedClassifier(cpu::Queue{}, logits.data(), targets.data(), scale.data(), dlogits.data(),
                       loss.data(), 0, rows, classes, -100);
  cpu::fusedClassifier(cpu::Queue{}, logits.data(), targets.data(), scale.data(), logits.data(),
                       lossInPlace.data(), 0, rows, classes, -100);
  EXPECT_EQ(0, std::memcmp(logits.data(), dlogits.data(), logits.size() * sizeof(T)));
  EXPECT_EQ(0, std::memcmp(loss.data(), lossInPlace.data(), loss.size() * sizeof(T)));
}

TYPED_TEST(ClassifierTest, Int32TargetsGiveTheSameResult) {
  using T = TypeParam;
  const std::int64_t rows = 5, classes = 77;
  std::vector<T> logits = randomVector<T>(rows * classes, 3);
  std::vector<std::int64_t> t64 = randomTargets(rows, classes, 4);
  t64[2] = 3; // a custom ignore_index
  std::vector<std::int32_t> t32(t64.begin(), t64.end());
  std::vector<T> a(rows), b(rows);
  cpu::crossEntropyForward(cpu::Queue{}, logits.data(), t64.data(), a.data(), rows, classes, 3);
  cpu::crossEntropyForward(cpu::Queue{}, logits.data(), t32.data(), b.data(), rows, classes, 3);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(T)));
  EXPECT_EQ(static_cast<float>(a[2]), 0.0f);
}

TYPED_TEST(ClassifierTest, ResultsDoNotDependOnTheThreadCount) {
  using T = TypeParam;
  const std::int64_t rows = 37, classes = 5003;
  std::vector<T> logits = randomVector<T>(rows * classes, 8), dlogits(rows * classes);
  std::vector<std::int64_t> targets = randomTargets(rows, classes, 9);
  std::vector<T> scale = randomVector<T>(rows, 10), loss(rows);
  int before = omp_get_max_threads();
  omp_set_num_threads(1);
  cpu::fusedClassifier(cpu::Queue{}, logits.data(), targets.data(), scale.data(), dlogits.data(),
                       loss.data(), 1, rows, classes, -100);
  std::vector<T> d1 = dlogits, l1 = loss;
  omp_set_num_threads(2);
  cpu::fusedClassifier(cpu::Queue{}, logits.data(), targets.data(), scale.data(), dlogits.data(),
                       loss.data(), 1, rows, classes, -100);
  omp_set_num_threads(before);
  EXPECT_EQ(0, std::memcmp(d1.data(), dlogits.data(), d1.size() * sizeof(T)));
  EXPECT_EQ(0, std::memcmp(l1.data(), loss.data(), l1.size() * sizeof(T)));
}

TYPED_TEST(ClassifierTest, TargetOutsideTheClassesIsAnIndexError) {
  using T = TypeParam;
  const std::int64_t rows = 6, classes = 16;
  std::vector<T> logits = randomVector<T>(rows * classes, 11), dlogits(rows * classes);
  std::vector<std::int64_t> targets = randomTargets(rows, classes, 12);
  targets[4] = 40000; // the lowest bad row is the one reported
  targets[5] = -1;
  std::vector<T> scale = {T(1.0f)}, loss(rows);
  for (bool fused : {false, true}) {
    try {
      if (fused)
        cpu::fusedClassifier(cpu::Queue{}, logits.data(), targets.data(), scale.data(),
                             dlogits.data(), loss.data(), 0, rows, classes, -100);
      else
        cpu::crossEntropyForward(cpu::Queue{}, logits.data(), targets.data(), loss.data(), rows,
                                 classes, -100);
      ADD_FAILURE() << "no error for a target outside [0, 16)";
    } catch (const std::out_of_range &e) {
      EXPECT_STREQ(e.what(), "dsc.cross_entropy: index 40000 is outside [0, 16)");
    }
  }
  // The good rows were still computed.
  Reference ref = classifierReference(widen(logits), targets, {1.0}, 0, 4, classes, -100);
  std::vector<T> good(loss.begin(), loss.begin() + 4);
  ref.loss.resize(4);
  expectClose(good, ref.loss, 0.0, lossTolerance<T>(ref.loss), "rows before the bad one");
}

} // namespace
