//===- RandomTest.cpp - Philox4x32-10 and the dropout kernel --------------===//
//
// Philox against the published known-answer vectors of its authors'
// Random123 library; the dropout kernel against its definition (Random.h),
// element by element, and against the properties dsc relies on: a batch
// split into calls (ranks, micro-batches) draws the masks of the whole
// batch, evaluation is the identity, threads change nothing. The uniform
// draws against their definition and against python/dsc/philox.py's values.

#include "dsc/kernels/Random.h"

#include "KernelTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace dsc::kernels::test;
using dsc::kernels::DropoutSite;
using dsc::kernels::PhiloxWords;
using dsc::kernels::philox4x32;
namespace cpu = dsc::kernels::cpu;

namespace {

bool sameWords(PhiloxWords a, std::array<uint32_t, 4> b) {
  return a.w[0] == b[0] && a.w[1] == b[1] && a.w[2] == b[2] && a.w[3] == b[3];
}

TEST(Philox, KnownAnswers) {
  EXPECT_TRUE(sameWords(philox4x32({{0, 0, 0, 0}}, 0, 0),
                        {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_TRUE(sameWords(
      philox4x32({{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}}, 0xffffffff, 0xffffffff),
      {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_TRUE(sameWords(
      philox4x32({{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}}, 0xa4093822, 0x299f31d0),
      {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

/// The multiplier of element e (Random.h's definition, written out again).
float maskOf(const int64_t key[4], const DropoutSite &site, int64_t e) {
  const uint64_t g = uint64_t(key[2]) * uint64_t(site.perSample) + uint64_t(e);
  const uint64_t block = g / 4;
  PhiloxWords counter{{uint32_t(block & 0xffffffffu), uint32_t(block >> 32),
                       uint32_t(site.seed), uint32_t(key[1])}};
  const uint64_t seed = uint64_t(key[0]);
  const uint32_t word = philox4x32(counter, uint32_t(seed), uint32_t(seed >> 32)).w[g % 4];
  const double u = double(word >> 8) / 16777216.0;
  return u < site.p ? 0.0f : float(1.0 / (1.0 - site.p));
}

template <typename T>
std::vector<T> dropout(const std::vector<T> &x, const int64_t key[4], DropoutSite site) {
  std::vector<T> y(x.size());
  cpu::dropout(cpu::Queue{}, x.data(), key, y.data(), site);
  return y;
}

template <typename T> void checkDefinition(double p, int64_t samples, int64_t perSample) {
  const int64_t n = samples * perSample;
  auto x = randomTensor<T>(n, 3);
  const int64_t key[4] = {int64_t(0x1234567890ll), 7, 5, 1};
  DropoutSite site{n, perSample, p, 11};
  std::vector<T> y = dropout(x, key, site);
  for (int64_t e = 0; e < n; ++e) {
    T want = T(float(x[e]) * maskOf(key, site, e));
    ASSERT_TRUE(bitwiseEqual(std::vector<T>{y[e]}, std::vector<T>{want}))
        << typeName<T>() << " p " << p << " element " << e;
  }
}

TEST(DropoutKernel, FollowsItsDefinition) {
  for (double p : {0.0, 0.1, 0.5, 0.9})
    for (auto [samples, perSample] : {std::pair{3, 7}, {4, 1000}, {1, 1}, {2, 129}}) {
      checkDefinition<float>(p, samples, perSample);
      checkDefinition<BFloat16>(p, samples, perSample);
      checkDefinition<Half>(p, samples, perSample);
    }
}

// Ranks and micro-batches call the kernel on parts of the global batch: the
// parts' masks are the whole batch's, whatever the alignment of the parts
// to Philox's blocks of four (7 elements per sample: no part is aligned).
TEST(DropoutKernel, PartsOfABatchDrawTheWholeBatch) {
  const int64_t samples = 6, perSample = 7, n = samples * perSample;
  auto x = randomTensor<float>(n, 9);
  const int64_t whole[4] = {42, 3, 0, 1};
  std::vector<float> want = dropout(x, whole, DropoutSite{n, perSample, 0.3, 2});
  for (int64_t parts : {2, 3, 6}) {
    const int64_t each = samples / parts;
    std::vector<float> got;
    for (int64_t r = 0; r < parts; ++r) {
      std::vector<float> part(x.begin() + r * each * perSample,
                              x.begin() + (r + 1) * each * perSample);
      const int64_t key[4] = {42, 3, r * each, 1};
      std::vector<float> y = dropout(part, key, DropoutSite{each * perSample, perSample, 0.3, 2});
      got.insert(got.end(), y.begin(), y.end());
    }
    EXPECT_TRUE(bitwiseEqual(got, want)) << parts << " parts";
  }
}

// Tensor and sequence parallelism: each rank holds the r-th of G equal
// contiguous parts of every sample (`part r of G`); its call, with the
// rank's index in device memory, draws that part of the whole input's mask
// (5 elements per part: no part aligned to Philox's blocks of four), for
// any first sample of the call (key[2]).
TEST(DropoutKernel, PartsOfEachSampleDrawTheWholeSamples) {
  const int64_t samples = 3, perSample = 30, n = samples * perSample;
  auto x = randomTensor<float>(n, 13);
  for (int64_t first : {0, 5}) {
    const int64_t key[4] = {42, 3, first, 1};
    std::vector<float> want = dropout(x, key, DropoutSite{n, perSample, 0.3, 2});
    for (int64_t parts : {2, 3, 6}) {
      const int64_t each = perSample / parts;
      for (int64_t r = 0; r < parts; ++r) {
        std::vector<float> part, wantPart;
        for (int64_t j = 0; j < samples; ++j)
          for (int64_t e = 0; e < each; ++e) {
            part.push_back(x[j * perSample + r * each + e]);
            wantPart.push_back(want[j * perSample + r * each + e]);
          }
        std::vector<float> y(part.size());
        cpu::dropout(cpu::Queue{}, part.data(), key, y.data(),
                     DropoutSite{samples * each, each, 0.3, 2, parts}, &r);
        EXPECT_TRUE(bitwiseEqual(y, wantPart))
            << "part " << r << " of " << parts << ", first sample " << first;
      }
    }
  }
}

// Every input of the draw changes the mask: site, step, seed (either half).
TEST(DropoutKernel, SiteStepAndSeedDrawOtherMasks) {
  const int64_t n = 4096;
  std::vector<float> x(n, 1.0f);
  const DropoutSite site{n, n, 0.5, 1};
  const int64_t key[4] = {5, 1, 0, 1};
  std::vector<float> base = dropout(x, key, site);
  const int64_t otherStep[4] = {5, 2, 0, 1}, otherSeed[4] = {6, 1, 0, 1},
                highSeed[4] = {5 + (int64_t(1) << 32), 1, 0, 1};
  EXPECT_FALSE(bitwiseEqual(dropout(x, otherStep, site), base));
  EXPECT_FALSE(bitwiseEqual(dropout(x, otherSeed, site), base));
  EXPECT_FALSE(bitwiseEqual(dropout(x, highSeed, site), base));
  EXPECT_FALSE(bitwiseEqual(dropout(x, key, DropoutSite{n, n, 0.5, 2}), base));
}

// The share dropped is p within six standard deviations of a binomial
// draw: |dropped - n p| <= 6 sqrt(n p (1 - p)) (p rounded up to 24 bits
// first, as the kernel compares).
TEST(DropoutKernel, DropsAShareP) {
  const int64_t n = int64_t(1) << 20;
  std::vector<float> x(n, 1.0f);
  for (double p : {0.01, 0.1, 0.5, 0.95}) {
    const int64_t key[4] = {1234, 1, 0, 1};
    std::vector<float> y = dropout(x, key, DropoutSite{n, n, p, 0});
    int64_t dropped = 0;
    for (float v : y)
      dropped += v == 0.0f;
    const double q = std::ceil(p * 16777216.0) / 16777216.0;
    EXPECT_LE(std::abs(double(dropped) - n * q), 6.0 * std::sqrt(n * q * (1.0 - q)))
        << "p " << p << ": " << dropped << " of " << n;
    for (float v : y)
      ASSERT_TRUE(v == 0.0f || v == float(1.0 / (1.0 - p)));
  }
}

TEST(DropoutKernel, EvaluationAndPZeroAreTheIdentity) {
  auto x = randomTensor<BFloat16>(1000, 4);
  const int64_t eval[4] = {1, 1, 0, 0}, train[4] = {1, 1, 0, 1};
  EXPECT_TRUE(bitwiseEqual(dropout(x, eval, DropoutSite{1000, 10, 0.5, 0}), x));
  EXPECT_TRUE(bitwiseEqual(dropout(x, train, DropoutSite{1000, 10, 0.0, 0}), x));
}

// In place, and NaN or infinity in a dropped element stay NaN (x * 0), as
// in PyTorch's x * mask.
TEST(DropoutKernel, InPlaceAndNonFinite) {
  const int64_t n = 256;
  std::vector<float> x = randomTensor<float>(n, 8);
  x[3] = std::nanf("");
  x[4] = INFINITY;
  const int64_t key[4] = {9, 1, 0, 1};
  const DropoutSite site{n, 1, 0.5, 0};
  std::vector<float> want = dropout(x, key, site);
  std::vector<float> y = x;
  cpu::dropout(cpu::Queue{}, y.data(), key, y.data(), site);
  EXPECT_TRUE(bitwiseEqual(y, want));
  EXPECT_TRUE(std::isnan(want[3]));
  EXPECT_TRUE(std::isnan(want[4]) || std::isinf(want[4]));
}

TEST(DropoutKernel, ThreadsChangeNothing) {
  const int64_t n = 300001;
  auto x = randomTensor<float>(n, 2);
  const int64_t key[4] = {77, 4, 3, 1};
  const DropoutSite site{n, n / 1, 0.2, 5};
  std::vector<float> one, two;
  withThreads(1, [&] { one = dropout(x, key, site); });
  withThreads(2, [&] { two = dropout(x, key, site); });
  EXPECT_TRUE(bitwiseEqual(one, two));
}

} // namespace

namespace {

/// Random-LTD's kept positions of sample `sample` by their definition
/// (Random.h, written out again): every position's Philox word, the
/// `kept` of least (word, position), in increasing order.
std::vector<int64_t> keptByDefinition(const int64_t key[4], int64_t sample,
                                      int64_t length, int64_t kept, int64_t site) {
  std::vector<std::pair<uint32_t, int64_t>> order;
  const uint64_t g = uint64_t(key[2] + sample), seed = uint64_t(key[0]);
  for (int64_t t = 0; t < length; ++t) {
    PhiloxWords counter{{uint32_t(t / 4), uint32_t(g), uint32_t(g >> 32), uint32_t(key[1])}};
    uint32_t word = philox4x32(counter, uint32_t(seed),
                               uint32_t(seed >> 32) ^ 0x4C544400u ^ uint32_t(site))
                        .w[t % 4];
    order.push_back({word, t});
  }
  std::sort(order.begin(), order.end());
  std::vector<int64_t> positions;
  for (int64_t k = 0; k < kept; ++k)
    positions.push_back(order[size_t(k)].second);
  std::sort(positions.begin(), positions.end());
  return positions;
}

std::vector<int64_t> ltdIndices(const int64_t key[4], dsc::kernels::LtdSite site) {
  std::vector<int64_t> out(size_t(site.samples * site.kept), -1);
  cpu::randomLtdIndices(cpu::Queue{}, key, out.data(), site);
  return out;
}

TEST(RandomLtdKernel, MatchesItsDefinition) {
  const int64_t key[4] = {1234, 7, 3, 1};
  for (int64_t length : {1, 5, 16, 129}) {
    for (int64_t kept : {int64_t(1), length / 2 + 1, length}) {
      dsc::kernels::LtdSite site{3, length, kept, 5};
      std::vector<int64_t> got = ltdIndices(key, site);
      for (int64_t j = 0; j < site.samples; ++j) {
        std::vector<int64_t> row(got.begin() + j * kept, got.begin() + (j + 1) * kept);
        EXPECT_EQ(row, keptByDefinition(key, j, length, kept, site.seed))
            << "length " << length << " kept " << kept << " sample " << j;
      }
    }
  }
}

TEST(RandomLtdKernel, SortedDistinctAndAllWhenNothingDrops) {
  const int64_t key[4] = {99, 2, 0, 1};
  dsc::kernels::LtdSite site{4, 64, 64, 0};
  std::vector<int64_t> all = ltdIndices(key, site);
  for (int64_t j = 0; j < 4; ++j)
    for (int64_t t = 0; t < 64; ++t)
      EXPECT_EQ(all[size_t(j * 64 + t)], t);
  site.kept = 20;
  std::vector<int64_t> some = ltdIndices(key, site);
  for (int64_t j = 0; j < 4; ++j)
    for (int64_t k = 1; k < 20; ++k)
      EXPECT_LT(some[size_t(j * 20 + k - 1)], some[size_t(j * 20 + k)]);
}

TEST(RandomLtdKernel, ASplitBatchDrawsTheWholeBatchsIndices) {
  // Two calls of 2 samples (ranks, micro-batches) at key[2] = 0 and 2 are
  // the call of 4 at 0; another step or seed draws other positions.
  dsc::kernels::LtdSite whole{4, 32, 12, 0}, half{2, 32, 12, 0};
  const int64_t key[4] = {1234, 5, 0, 1}, second[4] = {1234, 5, 2, 1};
  std::vector<int64_t> all = ltdIndices(key, whole);
  std::vector<int64_t> a = ltdIndices(key, half), b = ltdIndices(second, half);
  a.insert(a.end(), b.begin(), b.end());
  EXPECT_EQ(all, a);
  const int64_t nextStep[4] = {1234, 6, 0, 1}, otherSeed[4] = {4321, 5, 0, 1};
  EXPECT_NE(all, ltdIndices(nextStep, whole));
  EXPECT_NE(all, ltdIndices(otherSeed, whole));
}

} // namespace

namespace {

std::vector<float> uniform(const int64_t key[4], dsc::kernels::UniformSite site) {
  std::vector<float> out(size_t(site.numel), -1.0f);
  cpu::randomUniform(cpu::Queue{}, key, out.data(), site);
  return out;
}

/// dsc.random_uniform's element e by its definition (Random.h, written out
/// again), for a call whose first element is element `first` of the batch.
float uniformByDefinition(const int64_t key[4], uint64_t g, double low, double high,
                          int64_t site) {
  const uint64_t seed = uint64_t(key[0]), block = g / 4;
  PhiloxWords counter{{uint32_t(block), uint32_t(block >> 32), uint32_t(site),
                       uint32_t(key[1])}};
  uint32_t word = philox4x32(counter, uint32_t(seed),
                             uint32_t(seed >> 32) ^ 0x554E4900u).w[g % 4];
  double u = (2.0 * double(word >> 9) + 1.0) / 16777216.0;
  volatile double scaled = (high - low) * u;
  return float(low + scaled);
}

TEST(UniformKernel, MatchesItsDefinition) {
  const int64_t key[4] = {int64_t(0x1234567890ll), 7, 3, 1};
  for (auto [low, high] : {std::pair{0.0, 1.0}, {0.99, 1.01}, {-2.5, 3.0}}) {
    dsc::kernels::UniformSite site{5 * 9, 9, low, high, 11};
    std::vector<float> got = uniform(key, site);
    for (int64_t e = 0; e < site.numel; ++e)
      EXPECT_EQ(got[size_t(e)],
                uniformByDefinition(key, uint64_t(key[2] * 9 + e), low, high, 11))
          << "element " << e << " of [" << low << ", " << high << "]";
  }
}

// The values python/dsc/philox.py's random_uniform((2, 5), low, high,
// site=3, seed=1234, step=7, first_sample=2, samples=2) computes.
TEST(UniformKernel, IsPythonsReplay) {
  const int64_t key[4] = {1234, 7, 2, 1};
  const std::vector<float> unit{0x1.8be376p-1f, 0x1.2424b2p-1f, 0x1.3a973p-4f,
                                0x1.e0508cp-2f, 0x1.da8cbep-1f, 0x1.a398f6p-1f,
                                0x1.fda424p-2f, 0x1.fea6ecp-2f, 0x1.e57cf8p-3f,
                                0x1.a98f72p-1f};
  const std::vector<float> jitter{0x1.01661ep+0f, 0x1.005c86p+0f, 0x1.fbaa9ep-1f,
                                  0x1.ffaee2p-1f, 0x1.022f7cp+0f, 0x1.01a2d0p+0f,
                                  0x1.fff9f6p-1f, 0x1.fffc8cp-1f, 0x1.fd4eb4p-1f,
                                  0x1.01b214p+0f};
  EXPECT_EQ(uniform(key, {10, 5, 0.0, 1.0, 3}), unit);
  EXPECT_EQ(uniform(key, {10, 5, 0.99, 1.01, 3}), jitter);
}

TEST(UniformKernel, ASplitBatchDrawsTheWholeBatch) {
  // Parts of 1, 2 and 3 samples of 7 elements (not aligned to Philox's
  // blocks of four) at their offsets are the call of 6 samples; another
  // site, step or seed draws other values; key[3] changes nothing.
  const int64_t key[4] = {42, 3, 0, 1};
  dsc::kernels::UniformSite whole{6 * 7, 7, 0.0, 1.0, 2};
  std::vector<float> all = uniform(key, whole);
  for (int64_t each : {1, 2, 3}) {
    std::vector<float> parts;
    for (int64_t first = 0; first < 6; first += each) {
      const int64_t at[4] = {42, 3, first, 1};
      std::vector<float> part = uniform(at, {each * 7, 7, 0.0, 1.0, 2});
      parts.insert(parts.end(), part.begin(), part.end());
    }
    EXPECT_EQ(parts, all) << each << " samples per call";
  }
  const int64_t eval[4] = {42, 3, 0, 0}, step[4] = {42, 4, 0, 1}, seed[4] = {43, 3, 0, 1};
  EXPECT_EQ(uniform(eval, whole), all);
  EXPECT_NE(uniform(step, whole), all);
  EXPECT_NE(uniform(seed, whole), all);
  whole.seed = 3;
  EXPECT_NE(uniform(key, whole), all);
}

TEST(UniformKernel, OpenUnitIntervalAndItsMean) {
  // u lies strictly inside (0, 1), and the mean of n draws is 1/2 within
  // 6 standard deviations (sqrt(1/12n)).
  const int64_t key[4] = {1234, 1, 0, 1};
  const int64_t n = 1 << 18;
  std::vector<float> u = uniform(key, {n, n, 0.0, 1.0, 0});
  double sum = 0;
  for (float v : u) {
    ASSERT_GT(v, 0.0f);
    ASSERT_LT(v, 1.0f);
    sum += v;
  }
  EXPECT_NEAR(sum / double(n), 0.5, 6.0 * std::sqrt(1.0 / (12.0 * double(n))));
  EXPECT_EQ(dsc::kernels::unitUniform(0u), 0x1p-24f);
  EXPECT_EQ(dsc::kernels::unitUniform(0xFFFFFFFFu), 1.0f - 0x1p-24f);
}

TEST(UniformKernel, NotDropoutsStream) {
  // The same site, step, seed and elements as a dropout: the key tag gives
  // other words (dropout with p = 1/2 keeps the elements whose word's top
  // bit is set; the uniform's top bit is u >= 1/2).
  const int64_t key[4] = {1234, 2, 0, 1};
  const int64_t n = 256;
  std::vector<float> ones(n, 1.0f), kept(n);
  cpu::dropout(cpu::Queue{}, ones.data(), key, kept.data(), DropoutSite{n, n, 0.5, 5});
  std::vector<float> u = uniform(key, {n, n, 0.0, 1.0, 5});
  int64_t same = 0;
  for (int64_t e = 0; e < n; ++e)
    same += (kept[size_t(e)] != 0.0f) == (u[size_t(e)] >= 0.5f);
  EXPECT_LT(same, 3 * n / 4);
  EXPECT_GT(same, n / 4);
}

} // namespace

