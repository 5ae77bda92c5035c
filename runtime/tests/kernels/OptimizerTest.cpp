//===- OptimizerTest.cpp - the CPU multi-tensor optimizer kernels ---------===//
//
// Each kernel against a reference written here from PyTorch's formulas:
// element by element in fp32, in the order of operations that dsc's
// optimizer pass emits (the kernels must match it bit for bit, which keeps
// the end-to-end parity of a step that calls them), and in double, which
// checks the formulas themselves within fp32 rounding. Tables mix odd sizes
// (empty, one element, across chunk boundaries) so that the chunk lookup
// is exercised at every edge.
//
//===----------------------------------------------------------------------===//

#include "dsc/kernels/Optimizer.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace dsc::kernels;
using dsc::kernels::cpu::Queue;
using dsc::rt::BFloat16;
using dsc::rt::Half;

namespace {

/// Sizes of the test's tensors: empty ones first, last and in between, one
/// element, a chunk plus a few, exactly two chunks, an odd tail.
const std::vector<int64_t> kSizes = {0, 1, 3, kOptimizerChunk + 7, 0,
                                     2 * kOptimizerChunk, 70001, 1, 0};

uint32_t bitsOf(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

/// One tensor's state, owned; the table entries point into it.
template <typename T> struct Tensor {
  std::vector<float> param, m, v, buf;
  std::vector<T> grad, copy;
};

template <typename T>
std::vector<Tensor<T>> makeTensors(unsigned seed, float gradScale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<Tensor<T>> ts;
  for (int64_t n : kSizes) {
    Tensor<T> t;
    for (int64_t i = 0; i < n; ++i) {
      t.param.push_back(normal(rng));
      t.grad.push_back(T(normal(rng) * gradScale));
      t.m.push_back(0.1f * normal(rng));
      t.v.push_back(0.01f * std::fabs(normal(rng)));
      t.buf.push_back(0.1f * normal(rng));
    }
    t.copy.assign(std::size_t(n), T(-7.0f));
    ts.push_back(std::move(t));
  }
  return ts;
}

template <typename T>
std::vector<AdamTensor<T>> adamTable(std::vector<Tensor<T>> &ts, bool copy,
                                     int64_t &chunks) {
  std::vector<AdamTensor<T>> table;
  for (Tensor<T> &t : ts)
    table.push_back({t.param.data(), t.grad.data(), t.m.data(), t.v.data(),
                     copy ? t.copy.data() : nullptr,
                     int64_t(t.param.size()), 0});
  chunks = assignChunks(table.data(), int64_t(table.size()));
  return table;
}

template <typename T>
std::vector<SgdTensor<T>> sgdTable(std::vector<Tensor<T>> &ts, bool copy,
                                   int64_t &chunks) {
  std::vector<SgdTensor<T>> table;
  for (Tensor<T> &t : ts)
    table.push_back({t.param.data(), t.grad.data(), t.buf.data(),
                     copy ? t.copy.data() : nullptr, int64_t(t.param.size()),
                     0});
  chunks = assignChunks(table.data(), int64_t(table.size()));
  return table;
}

/// The step's scalars, owned.
struct Scalars {
  float lr = 1e-3f, step = 1, unscale = 1, clip = 1;
  uint8_t skip = 0;
  bool useUnscale = false, useClip = false;
  OptimizerStep view() const {
    return {&lr, &step, useUnscale ? &unscale : nullptr,
            useClip ? &clip : nullptr, &skip};
  }
};

/// The pass's fp32 Adam/AdamW, element by element (PyTorch's formulas).
template <typename T>
void referenceAdam(Tensor<T> &t, const AdamConfig &c, const Scalars &s) {
  const float stepSize = s.lr / (1.0f - std::pow(c.beta1, s.step));
  const float c2 = std::sqrt(1.0f - std::pow(c.beta2, s.step));
  const float decay = c.constantDecay ? c.decayFactor : 1.0f - s.lr * c.weightDecay;
  for (std::size_t i = 0; i < t.param.size(); ++i) {
    float g = float(t.grad[i]);
    if (s.useUnscale)
      g = g * s.unscale;
    if (s.useClip)
      g = g * s.clip;
    float p = t.param[i];
    if (c.decoupled && c.weightDecay != 0)
      p = p * decay;
    if (!c.decoupled && c.weightDecay != 0)
      g = g + p * c.weightDecay;
    float m = t.m[i] * c.beta1 + g * c.oneMinusBeta1;
    float v = t.v[i] * c.beta2 + (g * g) * c.oneMinusBeta2;
    p = p - (m / (std::sqrt(v) / c2 + c.eps)) * stepSize;
    t.m[i] = m, t.v[i] = v, t.param[i] = p;
    t.copy[i] = T(p);
  }
}

/// PyTorch's Adam/AdamW in double from the run's hyper-parameters in
/// double: checks the formulas, not the rounding. Returns |the update|.
struct DoubleAdam {
  double lr, beta1, beta2, eps, wd;
  bool decoupled;
  double run(double &p, double &m, double &v, double g, double t) const {
    if (decoupled)
      p *= 1 - lr * wd;
    else
      g += wd * p;
    m = beta1 * m + (1 - beta1) * g;
    v = beta2 * v + (1 - beta2) * g * g;
    const double delta = lr / (1 - std::pow(beta1, t)) * m /
                         (std::sqrt(v) / std::sqrt(1 - std::pow(beta2, t)) + eps);
    p -= delta;
    return std::fabs(delta);
  }
};

template <typename T>
void expectSameBits(const std::vector<Tensor<T>> &got,
                    const std::vector<Tensor<T>> &want, bool copy) {
  for (std::size_t k = 0; k < got.size(); ++k)
    for (std::size_t i = 0; i < got[k].param.size(); ++i) {
      ASSERT_EQ(bitsOf(got[k].param[i]), bitsOf(want[k].param[i]))
          << "tensor " << k << " element " << i;
      ASSERT_EQ(bitsOf(got[k].m[i]), bitsOf(want[k].m[i])) << k << ":" << i;
      ASSERT_EQ(bitsOf(got[k].v[i]), bitsOf(want[k].v[i])) << k << ":" << i;
      ASSERT_EQ(bitsOf(got[k].buf[i]), bitsOf(want[k].buf[i])) << k << ":" << i;
      if (copy)
        ASSERT_EQ(bitsOf(float(got[k].copy[i])), bitsOf(float(want[k].copy[i])))
            << k << ":" << i;
    }
}

template <typename T> void adamMatchesReference(bool decoupled, bool copy) {
  for (bool constantLr : {true, false}) {
    auto ts = makeTensors<T>(1, 1000.0f), want = ts;
    int64_t chunks;
    auto table = adamTable(ts, copy, chunks);
    AdamConfig c = adamConfig(0.9, 0.999, 1e-8, 0.01, decoupled,
                              constantLr ? 1e-3 : -1);
    Scalars s;
    s.useUnscale = s.useClip = true;
    s.unscale = 1.0f / 1024.0f, s.clip = 0.37f;
    for (int step = 1; step <= 3; ++step) {
      s.step = float(step);
      cpu::adamUpdate(Queue{}, table.data(), int64_t(table.size()), chunks, c,
                      s.view());
      for (Tensor<T> &t : want)
        referenceAdam(t, c, s);
      if (!copy)
        for (std::size_t k = 0; k < ts.size(); ++k)
          want[k].copy = ts[k].copy;
      expectSameBits(ts, want, copy);
    }
  }
}

} // namespace

TEST(KernelsOptimizer, AdamWMatchesThePassBitForBit) {
  adamMatchesReference<float>(/*decoupled=*/true, /*copy=*/false);
}
TEST(KernelsOptimizer, AdamL2MatchesThePassBitForBit) {
  adamMatchesReference<float>(/*decoupled=*/false, /*copy=*/false);
}
TEST(KernelsOptimizer, AdamWBf16GradientsAndCopy) {
  adamMatchesReference<BFloat16>(true, true);
}
TEST(KernelsOptimizer, AdamHalfGradientsAndCopy) {
  adamMatchesReference<Half>(false, true);
}
TEST(KernelsOptimizer, Fp32CopyIsWrittenWhenGiven) {
  adamMatchesReference<float>(true, true);
}

// The formulas themselves: the fp32 kernel stays within fp32 rounding of
// PyTorch's Adam computed in double. The bound on the update: the betas
// are fp32 values (|float(b) - b| <= 2^-25), which moves 1 - b^t by up to
// 2^-25 / (1 - b) relative (3e-5 for beta2 = 0.999; 1.5e-5 after the
// sqrt), plus a few 2^-24 roundings: 2e-5 of |update|. The parameter adds
// per step its two roundings (decay product, subtraction) and that of the
// decay factor, 2^-24 |p| each: 2^-22 |p|. m and v add theirs.
TEST(KernelsOptimizer, AdamFollowsPyTorchInDouble) {
  for (bool decoupled : {true, false}) {
    auto ts = makeTensors<float>(2);
    std::vector<std::vector<double>> p, m, v, bound;
    for (auto &t : ts) {
      bound.emplace_back(t.param.size(), 0.0);
      p.emplace_back(t.param.begin(), t.param.end());
      m.emplace_back(t.m.begin(), t.m.end());
      v.emplace_back(t.v.begin(), t.v.end());
    }
    int64_t chunks;
    auto table = adamTable(ts, false, chunks);
    const double lr = 1e-2, wd = 0.1;
    AdamConfig c = adamConfig(0.9, 0.999, 1e-8, wd, decoupled, lr);
    DoubleAdam ref{lr, 0.9, 0.999, 1e-8, wd, decoupled};
    Scalars s;
    s.lr = float(lr);
    for (int step = 1; step <= 4; ++step) {
      s.step = float(step);
      cpu::adamUpdate(Queue{}, table.data(), int64_t(table.size()), chunks, c,
                      s.view());
      for (std::size_t k = 0; k < ts.size(); ++k)
        for (std::size_t i = 0; i < ts[k].param.size(); ++i) {
          const double update =
              ref.run(p[k][i], m[k][i], v[k][i], double(ts[k].grad[i]), step);
          // Earlier steps' differences carry over: the bound accumulates.
          bound[k][i] += 2e-5 * update + std::ldexp(std::fabs(p[k][i]), -22);
          ASSERT_NEAR(ts[k].param[i], p[k][i], bound[k][i])
              << "step " << step << " tensor " << k << " element " << i;
          ASSERT_NEAR(ts[k].m[i], m[k][i], 1e-6 * (std::fabs(m[k][i]) + 1));
          ASSERT_NEAR(ts[k].v[i], v[k][i], 1e-6 * (std::fabs(v[k][i]) + 1e-3));
        }
    }
  }
}

TEST(KernelsOptimizer, SgdWithAndWithoutMomentum) {
  for (double momentum : {0.0, 0.9})
    for (double wd : {0.0, 1e-2}) {
      auto ts = makeTensors<BFloat16>(3), want = ts;
      int64_t chunks;
      auto table = sgdTable(ts, true, chunks);
      if (momentum == 0)
        for (auto &e : table)
          e.momentumBuffer = nullptr;
      SgdConfig c = sgdConfig(momentum, wd);
      Scalars s;
      s.lr = 0.05f, s.useClip = true, s.clip = 0.5f;
      cpu::sgdUpdate(Queue{}, table.data(), int64_t(table.size()), chunks, c,
                     s.view());
      for (auto &t : want)
        for (std::size_t i = 0; i < t.param.size(); ++i) {
          float g = float(t.grad[i]) * s.clip;
          if (wd != 0)
            g = g + t.param[i] * c.weightDecay;
          if (momentum != 0) {
            g = t.buf[i] * c.momentum + g;
            t.buf[i] = g;
          }
          t.param[i] = t.param[i] - g * s.lr;
          t.copy[i] = BFloat16(t.param[i]);
        }
      expectSameBits(ts, want, true);
    }
}

TEST(KernelsOptimizer, SkipFlagWritesNothing) {
  auto ts = makeTensors<BFloat16>(4), before = ts;
  int64_t chunks;
  auto table = adamTable(ts, true, chunks);
  Scalars s;
  s.skip = 1;
  cpu::adamUpdate(Queue{}, table.data(), int64_t(table.size()), chunks,
                  adamConfig(0.9, 0.999, 1e-8, 0.01, true), s.view());
  expectSameBits(ts, before, true);
  auto stable = sgdTable(ts, true, chunks);
  cpu::sgdUpdate(Queue{}, stable.data(), int64_t(stable.size()), chunks,
                 sgdConfig(0.9, 0.1), s.view());
  expectSameBits(ts, before, true);
  // And the same flag at 0 does update.
  s.skip = 0;
  cpu::adamUpdate(Queue{}, table.data(), int64_t(table.size()), chunks,
                  adamConfig(0.9, 0.999, 1e-8, 0.01, true), s.view());
  EXPECT_NE(ts[1].param[0], before[1].param[0]);
}

namespace {
/// Sum of squares, the reference: each tensor's float(x * x) summed in
/// double in element order, rounded to float.
template <typename T>
std::vector<float> referenceSumSquares(const std::vector<Tensor<T>> &ts,
                                       const float *scale) {
  std::vector<float> out;
  for (const auto &t : ts) {
    double sum = 0;
    for (const T &g : t.grad) {
      float x = float(g);
      if (scale)
        x = x * *scale;
      sum += double(x * x);
    }
    out.push_back(float(sum));
  }
  return out;
}

template <typename T> void sumSquaresMatchesReference() {
  auto ts = makeTensors<T>(5, 3.0f);
  int64_t chunks;
  auto table = adamTable(ts, false, chunks);
  const int64_t count = int64_t(table.size());
  std::vector<char> workspace(sumSquaresWorkspaceBytes(count, chunks));
  const float scale = 0.125f;
  for (const float *sc : {static_cast<const float *>(nullptr), &scale}) {
    float total = -1;
    std::vector<float> per(table.size(), -1);
    cpu::multiTensorSumSquares(Queue{}, table.data(), count, chunks, sc, &total,
                               per.data(), workspace.data());
    std::vector<float> want = referenceSumSquares(ts, sc);
    float wantTotal = 0;
    for (std::size_t k = 0; k < want.size(); ++k) {
      // Chunked double sums differ from the element-order one by far less
      // than float's rounding: at most the last bit of the rounded value.
      EXPECT_LE(std::fabs(per[k] - want[k]),
                std::ldexp(std::fabs(want[k]), -23))
          << "tensor " << k;
      wantTotal = k == 0 ? per[k] : wantTotal + per[k];
    }
    // The total is the pass's: the tensors' float sums added in order.
    EXPECT_EQ(bitsOf(total), bitsOf(wantTotal));
  }
}
} // namespace

TEST(KernelsOptimizer, SumSquaresFp32) { sumSquaresMatchesReference<float>(); }
TEST(KernelsOptimizer, SumSquaresBf16) { sumSquaresMatchesReference<BFloat16>(); }
TEST(KernelsOptimizer, SumSquaresHalf) { sumSquaresMatchesReference<Half>(); }

TEST(KernelsOptimizer, SumSquaresOfAnEmptyTableIsZero) {
  float total = -1;
  cpu::multiTensorSumSquares<GradTensor<float>>(Queue{}, nullptr, 0, 0, nullptr,
                                                &total, nullptr, nullptr);
  EXPECT_EQ(bitsOf(total), 0u);
  uint8_t found = 7;
  cpu::multiTensorNonFinite<GradTensor<float>>(Queue{}, nullptr, 0, 0, &found);
  EXPECT_EQ(found, 0);
}

// Bitwise the same on 1, 2, 3 and 7 threads: fixed chunks, fixed combine.
TEST(KernelsOptimizer, ThreadCountDoesNotChangeAnyBit) {
  auto base = makeTensors<BFloat16>(6, 10.0f);
  std::vector<uint32_t> totals;
  std::vector<std::vector<Tensor<BFloat16>>> results;
  const int before = omp_get_max_threads();
  for (int threads : {1, 2, 3, 7}) {
    omp_set_num_threads(threads);
    auto ts = base;
    int64_t chunks;
    auto table = adamTable(ts, true, chunks);
    const int64_t count = int64_t(table.size());
    std::vector<char> workspace(sumSquaresWorkspaceBytes(count, chunks));
    float total;
    cpu::multiTensorSumSquares(Queue{}, table.data(), count, chunks, nullptr,
                               &total, nullptr, workspace.data());
    totals.push_back(bitsOf(total));
    Scalars s;
    s.useClip = true, s.clip = 0.9f, s.step = 7;
    cpu::adamUpdate(Queue{}, table.data(), count, chunks,
                    adamConfig(0.9, 0.95, 1e-8, 0.1, true), s.view());
    results.push_back(std::move(ts));
  }
  omp_set_num_threads(before);
  for (std::size_t r = 1; r < totals.size(); ++r) {
    EXPECT_EQ(totals[r], totals[0]) << "run " << r;
    expectSameBits(results[r], results[0], true);
  }
}

TEST(KernelsOptimizer, NonFiniteFindsInfAndNaNAnywhere) {
  auto ts = makeTensors<Half>(7);
  int64_t chunks;
  auto table = adamTable(ts, false, chunks);
  const int64_t count = int64_t(table.size());
  uint8_t found = 9;
  cpu::multiTensorNonFinite(Queue{}, table.data(), count, chunks, &found);
  EXPECT_EQ(found, 0);
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // The last element of a two-chunk tensor, the only element of a
  // one-element tensor, an element of the second chunk.
  const std::pair<std::size_t, std::size_t> places[] = {
      {5, 2 * std::size_t(kOptimizerChunk) - 1}, {7, 0}, {3, std::size_t(kOptimizerChunk) + 3}};
  for (auto [k, i] : places)
    for (float bad : {inf, -inf, nan}) {
      Half saved = ts[k].grad[i];
      ts[k].grad[i] = Half(bad);
      cpu::multiTensorNonFinite(Queue{}, table.data(), count, chunks, &found);
      EXPECT_EQ(found, 1) << "tensor " << k << " element " << i;
      ts[k].grad[i] = saved;
    }
  // A finite value that overflows Half's range is inf once stored.
  ts[1].grad[0] = Half(70000.0f);
  cpu::multiTensorNonFinite(Queue{}, table.data(), count, chunks, &found);
  EXPECT_EQ(found, 1);
}

TEST(KernelsOptimizer, TablesNotNumberedByAssignChunksAreRefused) {
  auto ts = makeTensors<float>(8);
  int64_t chunks;
  auto table = adamTable(ts, false, chunks);
  Scalars s;
  const AdamConfig c = adamConfig(0.9, 0.999, 1e-8, 0, false);
  EXPECT_THROW(cpu::adamUpdate(Queue{}, table.data(), int64_t(table.size()),
                               chunks + 1, c, s.view()),
               std::invalid_argument);
  table[3].numel += kOptimizerChunk; // sizes changed after numbering
  EXPECT_THROW(cpu::adamUpdate(Queue{}, table.data(), int64_t(table.size()),
                               chunks, c, s.view()),
               std::invalid_argument);
  EXPECT_THROW(cpu::adamUpdate<float>(Queue{}, nullptr, 2, 0, c, s.view()),
               std::invalid_argument);
  OptimizerStep noLr = s.view();
  noLr.lr = nullptr;
  table[3].numel -= kOptimizerChunk;
  EXPECT_THROW(cpu::adamUpdate(Queue{}, table.data(), int64_t(table.size()),
                               chunks, c, noLr),
               std::invalid_argument);
  auto stable = sgdTable(ts, false, chunks);
  stable[1].momentumBuffer = nullptr;
  EXPECT_THROW(cpu::sgdUpdate(Queue{}, stable.data(), int64_t(stable.size()),
                              chunks, sgdConfig(0.9, 0), s.view()),
               std::invalid_argument);
}

// The AVX2 versions of the update loops (picked where the CPU has AVX2)
// write the same bits as the plain ones, on values that round, overflow
// and underflow, with 16-bit gradients and copies; an odd length leaves a
// scalar tail.
TEST(KernelsOptimizer, Avx2LoopsMatchThePlainOnesBitForBit) {
  if (!cpu::detail::haveAvx2())
    GTEST_SKIP() << "this CPU has no AVX2";
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  const int64_t n = 1031;
  auto values = [&](float scale) {
    std::vector<float> v(n);
    for (float &x : v)
      x = u(gen) * scale;
    v[0] = 1e-30f;
    v[1] = -1e30f;
    v[2] = 0.0f;
    return v;
  };
  std::vector<float> g = values(1.0f), p0 = values(1.0f), m0 = values(0.1f),
                     v0 = values(0.01f);
  for (float &x : v0)
    x = std::fabs(x);
  std::vector<BFloat16> g16(g.begin(), g.end());
  const float lr = 1e-3f, step = 3, clip = 0.7f;
  const OptimizerStep s{&lr, &step, nullptr, &clip, nullptr};
  const cpu::detail::GradFactors factors(s);
  const AdamConfig c = adamConfig(0.9, 0.999, 1e-8, 0.01, true, 1e-3);
  const cpu::detail::AdamScalars k{1e-3f / (1 - 0.729f), std::sqrt(1 - 0.997003f),
                                   1.0f - 1e-5f};
  auto adam = [&](bool avx2) {
    std::vector<float> p = p0, m = m0, v = v0;
    std::vector<BFloat16> copy(n);
    AdamTensor<BFloat16> e{p.data(), g16.data(), m.data(), v.data(), copy.data(), n, 0};
    (avx2 ? cpu::detail::adamRangeAvx2<false, true, BFloat16>
          : cpu::detail::adamRange<false, true, BFloat16>)(e, 0, n, c, factors, k);
    std::vector<uint16_t> bits(n);
    std::memcpy(bits.data(), copy.data(), n * 2);
    return std::make_tuple(p, m, v, bits);
  };
  auto bitsOf = [](const std::vector<float> &x) {
    std::vector<uint32_t> b(x.size());
    std::memcpy(b.data(), x.data(), x.size() * 4);
    return b;
  };
  auto [p1, m1, v1, c1] = adam(false);
  auto [p2, m2, v2, c2] = adam(true);
  EXPECT_EQ(bitsOf(p1), bitsOf(p2));
  EXPECT_EQ(bitsOf(m1), bitsOf(m2));
  EXPECT_EQ(bitsOf(v1), bitsOf(v2));
  EXPECT_EQ(c1, c2);
  const SgdConfig sgd = sgdConfig(0.9, 0.01);
  auto sgdRun = [&](bool avx2) {
    std::vector<float> p = p0, buf = m0;
    SgdTensor<float> e{p.data(), g.data(), buf.data(), nullptr, n, 0};
    (avx2 ? cpu::detail::sgdRangeAvx2<true, true, false, float>
          : cpu::detail::sgdRange<true, true, false, float>)(e, 0, n, sgd, factors, lr);
    return std::make_pair(p, buf);
  };
  auto [sp1, sb1] = sgdRun(false);
  auto [sp2, sb2] = sgdRun(true);
  EXPECT_EQ(bitsOf(sp1), bitsOf(sp2));
  EXPECT_EQ(bitsOf(sb1), bitsOf(sb2));
}
