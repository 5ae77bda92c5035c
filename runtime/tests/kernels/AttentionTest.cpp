// The CPU attention kernels (dsc/kernels/Attention.h) against a naive
// reference that materializes the [T, S] scores in double: forward output
// and log-sum-exp, and dq, dk, dv, for causal and masked attention, T != S,
// odd T, head sizes 64 and 16, and 16-bit inputs.
//
// Tolerances: the kernel accumulates in double as the reference does, so
// the two differ by the final rounding to the element type (half an ulp)
// plus double-rounding noise; the bound is one ulp of the element type
// relative to the value, plus a tiny absolute term for values that cancel
// to near zero.

#include "dsc/kernels/Attention.h"
#include "dsc/kernels/ExpDouble.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

using dsc::kernels::cpu::attentionBackward;
using dsc::kernels::cpu::attentionForward;
using dsc::kernels::cpu::Queue;
using dsc::rt::BFloat16;
using dsc::rt::Half;

namespace {

enum class MaskKind { None, Additive, Boolean };

struct Case {
  int64_t batch, heads, queries, keys, headDim, valueDim;
  bool causal;
  MaskKind mask;
  /// Broadcast the mask over batch and heads (strides 0), as a [T, S] mask.
  bool broadcastMask = false;
};

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// The naive reference in double on inputs already rounded to the element
/// type.
struct Reference {
  std::vector<double> out, lse, dq, dk, dv;
};

Reference reference(const Case &c, const std::vector<double> &q,
                    const std::vector<double> &k, const std::vector<double> &v,
                    const std::vector<double> &dOut,
                    const std::vector<double> &mask,
                    const std::vector<double> &outRounded,
                    const std::vector<float> &lseRounded, double scale) {
  const int64_t T = c.queries, S = c.keys, D = c.headDim, Dv = c.valueDim;
  Reference r;
  r.out.assign(c.batch * c.heads * T * Dv, 0);
  r.lse.assign(c.batch * c.heads * T, 0);
  r.dq.assign(q.size(), 0);
  r.dk.assign(k.size(), 0);
  r.dv.assign(v.size(), 0);
  for (int64_t bh = 0; bh < c.batch * c.heads; ++bh) {
    std::vector<double> p(T * S), scores(T * S), dp(T * S);
    for (int64_t t = 0; t < T; ++t) {
      double m = kNegInf;
      for (int64_t s = 0; s < S; ++s) {
        double x = 0;
        for (int64_t d = 0; d < D; ++d)
          x += q[(bh * T + t) * D + d] * k[(bh * S + s) * D + d];
        x *= scale;
        int64_t mi = (c.broadcastMask ? 0 : bh * T * S) + t * S + s;
        if (c.mask == MaskKind::Additive)
          x += mask[mi];
        if (c.mask == MaskKind::Boolean && mask[mi] == 0)
          x = kNegInf;
        if (c.causal && s > t + (S - T))
          x = kNegInf;
        p[t * S + s] = x;
        scores[t * S + s] = x;
        m = std::max(m, x);
      }
      double sum = 0;
      for (int64_t s = 0; s < S; ++s)
        sum += m == kNegInf ? 0 : std::exp(p[t * S + s] - m);
      for (int64_t s = 0; s < S; ++s)
        p[t * S + s] = sum == 0 ? 0 : std::exp(p[t * S + s] - m) / sum;
      r.lse[bh * T + t] = sum == 0 ? kNegInf : m + std::log(sum);
      for (int64_t s = 0; s < S; ++s)
        for (int64_t d = 0; d < Dv; ++d)
          r.out[(bh * T + t) * Dv + d] += p[t * S + s] * v[(bh * S + s) * Dv + d];
    }
    // dv = P^T dO; dP = dO V^T; dS = P (dP - Delta); dq = s dS K;
    // dk = s dS^T Q, with Delta = rowsum(dO * O) = rowsum(dP * P). Delta
    // reads the forward output as the kernel stored it (rounded to the
    // element type), as the kernel does: dP - Delta cancels, and would
    // amplify that rounding otherwise.
    for (int64_t t = 0; t < T; ++t) {
      double rowDot = 0;
      for (int64_t d = 0; d < Dv; ++d)
        rowDot += dOut[(bh * T + t) * Dv + d] * outRounded[(bh * T + t) * Dv + d];
      for (int64_t s = 0; s < S; ++s) {
        double x = 0;
        for (int64_t d = 0; d < Dv; ++d)
          x += dOut[(bh * T + t) * Dv + d] * v[(bh * S + s) * Dv + d];
        dp[t * S + s] = x;
      }
      // P again from the log-sum-exp the kernel saved (fp32), as the
      // kernel's backward recomputes it.
      double rowLse = lseRounded[bh * T + t];
      for (int64_t s = 0; s < S; ++s) {
        double pts = rowLse == kNegInf ? 0 : std::exp(scores[t * S + s] - rowLse);
        double ds = pts * (dp[t * S + s] - rowDot);
        for (int64_t d = 0; d < Dv; ++d)
          r.dv[(bh * S + s) * Dv + d] += pts * dOut[(bh * T + t) * Dv + d];
        for (int64_t d = 0; d < D; ++d) {
          r.dq[(bh * T + t) * D + d] += scale * ds * k[(bh * S + s) * D + d];
          r.dk[(bh * S + s) * D + d] += scale * ds * q[(bh * T + t) * D + d];
        }
      }
    }
  }
  return r;
}

template <typename T> double ulp();
template <> double ulp<float>() { return std::ldexp(1.0, -23); }
template <> double ulp<BFloat16>() { return std::ldexp(1.0, -7); }
template <> double ulp<Half>() { return std::ldexp(1.0, -10); }

template <typename T>
void expectNear(const std::vector<T> &got, const std::vector<double> &want,
                const char *what) {
  ASSERT_EQ(got.size(), want.size());
  int failures = 0;
  for (size_t i = 0; i < got.size() && failures < 5; ++i) {
    double g = float(got[i]);
    double bound = ulp<T>() * std::abs(want[i]) + 1e-9;
    if (!(std::abs(g - want[i]) <= bound)) {
      ADD_FAILURE() << what << "[" << i << "] = " << g << ", expected "
                    << want[i] << " (bound " << bound << ")";
      ++failures;
    }
  }
}

template <typename T> void run(const Case &c) {
  const int64_t BH = c.batch * c.heads;
  std::mt19937 rng(1234 + c.queries * 7 + c.headDim);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto fill = [&](int64_t n, std::vector<T> &data, std::vector<double> &wide) {
    data.resize(n);
    wide.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      data[i] = T(normal(rng));
      wide[i] = float(data[i]);
    }
  };
  std::vector<T> q, k, v, dOut;
  std::vector<double> qd, kd, vd, dOutd;
  fill(BH * c.queries * c.headDim, q, qd);
  fill(BH * c.keys * c.headDim, k, kd);
  fill(BH * c.keys * c.valueDim, v, vd);
  fill(BH * c.queries * c.valueDim, dOut, dOutd);

  // Masks: additive values in [-2, 0] with a few -inf; boolean with about
  // one key in four hidden, never a whole row.
  int64_t maskSize = (c.broadcastMask ? 1 : BH) * c.queries * c.keys;
  std::vector<T> additive;
  std::vector<uint8_t> keep;
  std::vector<double> maskd(maskSize, 0);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (int64_t i = 0; i < maskSize; ++i) {
    float u = uniform(rng);
    if (c.mask == MaskKind::Additive) {
      additive.push_back(T(i % c.keys != 0 && u < 0.1f
                               ? -std::numeric_limits<float>::infinity()
                               : -2.0f * u));
      maskd[i] = float(additive.back());
    } else if (c.mask == MaskKind::Boolean) {
      keep.push_back(i % c.keys == 0 || u >= 0.25f);
      maskd[i] = keep.back();
    }
  }
  const int64_t sb = c.broadcastMask ? 0 : c.heads * c.queries * c.keys;
  const int64_t sh = c.broadcastMask ? 0 : c.queries * c.keys;
  const double scale = 1.0 / std::sqrt(double(c.headDim));

  std::vector<T> out(BH * c.queries * c.valueDim);
  std::vector<float> lse(BH * c.queries);
  std::vector<T> dq(q.size()), dk(k.size()), dv(v.size());
  auto forward = [&](auto *mask) {
    attentionForward(Queue{}, q.data(), k.data(), v.data(), mask, sb, sh,
                     c.keys, 1, out.data(), lse.data(), c.batch, c.heads,
                     c.queries, c.keys, c.headDim, c.valueDim, scale, c.causal);
    attentionBackward(Queue{}, q.data(), k.data(), v.data(), out.data(),
                      dOut.data(), lse.data(), mask, sb, sh, c.keys, 1,
                      dq.data(), dk.data(), dv.data(), c.batch, c.heads,
                      c.queries, c.keys, c.headDim, c.valueDim, scale,
                      c.causal);
  };
  if (c.mask == MaskKind::Boolean)
    forward(keep.data());
  else if (c.mask == MaskKind::Additive)
    forward(additive.data());
  else
    forward(static_cast<const T *>(nullptr));

  std::vector<double> outRounded(out.size());
  for (size_t i = 0; i < out.size(); ++i)
    outRounded[i] = float(out[i]);
  Reference r = reference(c, qd, kd, vd, dOutd, maskd, outRounded, lse, scale);
  expectNear(out, r.out, "out");
  for (size_t i = 0; i < lse.size(); ++i) {
    if (r.lse[i] == kNegInf)
      EXPECT_EQ(double(lse[i]), kNegInf) << "lse[" << i << "]";
    else // fp32, rounded once
      EXPECT_NEAR(lse[i], r.lse[i], std::ldexp(1.0, -23) * std::abs(r.lse[i]) + 1e-9)
          << "lse[" << i << "]";
  }
  expectNear(dq, r.dq, "dq");
  expectNear(dk, r.dk, "dk");
  expectNear(dv, r.dv, "dv");
}

TEST(AttentionKernel, CausalSquareHead64) {
  run<float>({2, 3, 70, 70, 64, 64, true, MaskKind::None});
}

TEST(AttentionKernel, CausalMoreKeysThanQueries) {
  run<float>({1, 2, 33, 101, 16, 16, true, MaskKind::None});
}

TEST(AttentionKernel, CausalMoreQueriesThanKeysHasEmptyRows) {
  run<float>({1, 2, 45, 20, 16, 16, true, MaskKind::None});
}

TEST(AttentionKernel, UnmaskedValueDimDiffers) {
  run<float>({2, 1, 17, 130, 16, 24, false, MaskKind::None});
}

TEST(AttentionKernel, AdditiveMaskPerHead) {
  run<float>({2, 2, 29, 67, 64, 64, false, MaskKind::Additive});
}

TEST(AttentionKernel, BooleanMaskBroadcastAndCausal) {
  run<float>({2, 2, 65, 65, 16, 16, true, MaskKind::Boolean, true});
}

TEST(AttentionKernel, BFloat16Causal) {
  run<BFloat16>({1, 2, 41, 41, 64, 64, true, MaskKind::None});
}

TEST(AttentionKernel, HalfAdditiveMask) {
  run<Half>({1, 2, 19, 40, 16, 16, false, MaskKind::Additive, true});
}

TEST(AttentionKernel, BFloat16BooleanMask) {
  run<BFloat16>({2, 1, 33, 33, 16, 16, false, MaskKind::Boolean});
}

} // namespace

namespace {

// Work items own their rows and sum in a fixed order: the same bits on one
// thread as on several.
TEST(AttentionKernel, ThreadCountDoesNotChangeBits) {
  const int64_t B = 2, H = 3, T = 77, S = 77, D = 16;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> q(B * H * T * D), k(q.size()), v(q.size()), dOut(q.size());
  for (auto *x : {&q, &k, &v, &dOut})
    for (float &e : *x)
      e = normal(rng);
  auto run = [&](int threads) {
    omp_set_num_threads(threads);
    std::vector<float> out(q.size()), lse(B * H * T), dq(q.size()), dk(q.size()),
        dv(q.size());
    attentionForward(Queue{}, q.data(), k.data(), v.data(),
                     static_cast<const float *>(nullptr), 0, 0, 0, 0, out.data(),
                     lse.data(), B, H, T, S, D, D, 0.25, true);
    attentionBackward(Queue{}, q.data(), k.data(), v.data(), out.data(),
                      dOut.data(), lse.data(), static_cast<const float *>(nullptr),
                      0, 0, 0, 0, dq.data(), dk.data(), dv.data(), B, H, T, S, D,
                      D, 0.25, true);
    out.insert(out.end(), lse.begin(), lse.end());
    for (auto *x : {&dq, &dk, &dv})
      out.insert(out.end(), x->begin(), x->end());
    return out;
  };
  int before = omp_get_max_threads();
  std::vector<float> one = run(1), three = run(3);
  omp_set_num_threads(before);
  ASSERT_EQ(one.size(), three.size());
  EXPECT_EQ(0, std::memcmp(one.data(), three.data(), one.size() * sizeof(float)));
}

} // namespace

namespace {

// expDouble (dsc/kernels/ExpDouble.h), which the kernels use for every
// exponential: within 1e-15 relative of the exact value over its domain
// (the series' remainder is below 2.5e-16 and Horner's thirteen steps add
// a few roundings of 1.1e-16 each; the reference is expl, long double),
// and its edges: 0 below -708, exp(0) = 1 exactly, -inf to 0, NaN stays.
TEST(AttentionKernel, ExpDoubleIsWithin1e15OfExp) {
  using dsc::kernels::expDouble;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> any(-708.0, 709.0), near(-1.0, 1.0);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const double x = i % 2 ? any(rng) : near(rng);
    const long double want = expl((long double)x);
    const double error = double(std::fabs((long double)expDouble(x) - want) / want);
    worst = std::max(worst, error);
  }
  EXPECT_LE(worst, 1e-15);
  EXPECT_EQ(expDouble(0.0), 1.0);
  EXPECT_EQ(expDouble(-708.5), 0.0);
  EXPECT_EQ(expDouble(-std::numeric_limits<double>::infinity()), 0.0);
  EXPECT_TRUE(std::isnan(expDouble(std::nan(""))));
  EXPECT_EQ(expDouble(710.0), std::numeric_limits<double>::infinity());
}

} // namespace
