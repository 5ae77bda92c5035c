// The CUDA attention kernels (dsc/kernels/cuda/Attention.cuh) against the
// CPU library kernels (dsc/kernels/Attention.h) on the same inputs: forward
// output and log-sum-exp, dq, dk, dv; causal with T != S, additive and
// boolean masks, head sizes 64 and 16, float and bf16. Skipped without a
// CUDA device.
//
// Tolerance: the CPU kernel accumulates in double, the CUDA kernel in float
// over at most a few hundred terms of magnitude ~1: a few float ulps of the
// largest term, 1e-5 relative plus 1e-6 absolute for float (the e2e parity
// bound); for bf16 both round once to bf16 at the end, so one bf16 ulp
// (2^-7 relative) plus the float error.

#include "dsc/kernels/Attention.h"
#include "dsc/kernels/cuda/Attention.cuh"

#include <cuda_bf16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

bool haveDevice() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

template <typename T> struct Device {
  T *ptr = nullptr;
  explicit Device(const std::vector<T> &host) {
    dsc::kernels::cuda::attention_detail::check(
        cudaMalloc(&ptr, sizeof(T) * (host.empty() ? 1 : host.size())), "cudaMalloc");
    if (!host.empty())
      cudaMemcpy(ptr, host.data(), sizeof(T) * host.size(), cudaMemcpyHostToDevice);
  }
  std::vector<T> read(size_t n) const {
    std::vector<T> host(n);
    cudaMemcpy(host.data(), ptr, sizeof(T) * n, cudaMemcpyDeviceToHost);
    return host;
  }
  ~Device() { cudaFree(ptr); }
};

struct Case {
  int64_t batch, heads, queries, keys, headDim, valueDim;
  bool causal;
  int mask; // 0 none, 1 additive [T, S], 2 boolean [B, 1, 1, S]
};

// CpuT: the CPU library's element type; GpuT: the CUDA one (same bits).
template <typename CpuT, typename GpuT> void compare(const Case &c, double rel) {
  if (!haveDevice())
    GTEST_SKIP() << "no CUDA device";
  const int64_t BH = c.batch * c.heads;
  std::mt19937 rng(99);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto fill = [&](int64_t n) {
    std::vector<CpuT> data(n);
    for (auto &x : data)
      x = CpuT(normal(rng));
    return data;
  };
  auto q = fill(BH * c.queries * c.headDim), k = fill(BH * c.keys * c.headDim),
       v = fill(BH * c.keys * c.valueDim), dOut = fill(BH * c.queries * c.valueDim);
  std::vector<CpuT> additive;
  std::vector<uint8_t> keep;
  int64_t sb = 0, sh = 0, st = 0, ss = 0;
  if (c.mask == 1) {
    for (int64_t i = 0; i < c.queries * c.keys; ++i)
      additive.push_back(CpuT(-0.5f * float(i % 7)));
    st = c.keys, ss = 1;
  } else if (c.mask == 2) {
    for (int64_t i = 0; i < c.batch * c.keys; ++i)
      keep.push_back(i % c.keys == 0 || i % 5 != 0);
    sb = c.keys, ss = 1;
  }
  std::vector<CpuT> out(BH * c.queries * c.valueDim), dq(q.size()), dk(k.size()),
      dv(v.size());
  std::vector<float> lse(BH * c.queries);
  const double scale = 1.0 / std::sqrt(double(c.headDim));
  auto cpu = [&](auto *mask) {
    dsc::kernels::cpu::attentionForward(dsc::kernels::cpu::Queue{}, q.data(), k.data(),
                                        v.data(), mask, sb, sh, st, ss, out.data(),
                                        lse.data(), c.batch, c.heads, c.queries, c.keys,
                                        c.headDim, c.valueDim, scale, c.causal);
    dsc::kernels::cpu::attentionBackward(
        dsc::kernels::cpu::Queue{}, q.data(), k.data(), v.data(), out.data(),
        dOut.data(), lse.data(), mask, sb, sh, st, ss, dq.data(), dk.data(),
        dv.data(), c.batch, c.heads, c.queries, c.keys, c.headDim, c.valueDim,
        scale, c.causal);
  };
  if (c.mask == 2)
    cpu(keep.data());
  else
    cpu(c.mask == 1 ? additive.data() : static_cast<const CpuT *>(nullptr));

  auto asGpu = [](const std::vector<CpuT> &x) {
    std::vector<GpuT> y(x.size());
    std::memcpy(y.data(), x.data(), sizeof(CpuT) * x.size());
    return y;
  };
  Device<GpuT> gq(asGpu(q)), gk(asGpu(k)), gv(asGpu(v)), gdOut(asGpu(dOut)),
      gOut(std::vector<GpuT>(out.size())), gdq(std::vector<GpuT>(dq.size())),
      gdk(std::vector<GpuT>(dk.size())), gdv(std::vector<GpuT>(dv.size())),
      gAdditive(asGpu(additive));
  Device<uint8_t> gKeep(keep);
  Device<float> gLse(std::vector<float>(lse.size()));
  auto gpu = [&](auto *mask) {
    dsc::kernels::cuda::attentionForward(nullptr, gq.ptr, gk.ptr, gv.ptr, mask, sb, sh,
                                         st, ss, gOut.ptr, gLse.ptr, c.batch, c.heads,
                                         c.queries, c.keys, c.headDim, c.valueDim,
                                         scale, c.causal);
    dsc::kernels::cuda::attentionBackward(
        nullptr, gq.ptr, gk.ptr, gv.ptr, gOut.ptr, gdOut.ptr, gLse.ptr, mask, sb, sh,
        st, ss, gdq.ptr, gdk.ptr, gdv.ptr, c.batch, c.heads, c.queries, c.keys,
        c.headDim, c.valueDim, scale, c.causal);
  };
  if (c.mask == 2)
    gpu(static_cast<const uint8_t *>(gKeep.ptr));
  else
    gpu(c.mask == 1 ? static_cast<const GpuT *>(gAdditive.ptr)
                    : static_cast<const GpuT *>(nullptr));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  auto expectClose = [&](const std::vector<CpuT> &want, const Device<GpuT> &got,
                         const char *what) {
    auto g = got.read(want.size());
    int failures = 0;
    for (size_t i = 0; i < want.size() && failures < 5; ++i) {
      CpuT gi;
      std::memcpy(&gi, &g[i], sizeof gi);
      double w = float(want[i]), x = float(gi);
      if (!(std::abs(w - x) <= rel * std::abs(w) + 1e-5)) {
        ADD_FAILURE() << what << "[" << i << "] = " << x << ", CPU " << w;
        ++failures;
      }
    }
  };
  expectClose(out, gOut, "out");
  expectClose(dq, gdq, "dq");
  expectClose(dk, gdk, "dk");
  expectClose(dv, gdv, "dv");
  auto gl = gLse.read(lse.size());
  for (size_t i = 0; i < lse.size(); ++i)
    if (std::isinf(lse[i]))
      EXPECT_TRUE(std::isinf(gl[i])) << "lse[" << i << "]";
    else
      EXPECT_NEAR(gl[i], lse[i], 1e-5 * std::abs(lse[i]) + 1e-5) << "lse[" << i << "]";
}

TEST(AttentionCudaKernel, CausalHead64) {
  compare<float, float>({2, 3, 130, 130, 64, 64, true, 0}, 1e-4);
}
TEST(AttentionCudaKernel, CausalFewerQueries) {
  compare<float, float>({1, 2, 37, 100, 16, 16, true, 0}, 1e-4);
}
TEST(AttentionCudaKernel, CausalEmptyRows) {
  compare<float, float>({1, 2, 45, 20, 16, 16, true, 0}, 1e-4);
}
TEST(AttentionCudaKernel, AdditiveMaskValueDim) {
  compare<float, float>({2, 2, 29, 67, 64, 48, false, 1}, 1e-4);
}
TEST(AttentionCudaKernel, BooleanMaskHead128) {
  compare<float, float>({2, 2, 33, 33, 128, 128, false, 2}, 1e-4);
}
TEST(AttentionCudaKernel, BFloat16Causal) {
  compare<dsc::rt::BFloat16, __nv_bfloat16>({1, 2, 41, 41, 64, 64, true, 0},
                                            std::ldexp(1.0, -6));
}

} // namespace
