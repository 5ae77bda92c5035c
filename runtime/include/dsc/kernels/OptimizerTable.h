//===- OptimizerTable.h - tensor tables of the multi-tensor optimizer -*- C++ -*-===//
//
// The types that the optimizer family's CPU (Optimizer.h) and CUDA
// (cuda/Optimizer.cuh) kernels share: the table of parameter tensors one
// call updates, the run's constant hyper-parameters, and the per-step
// scalars.
//
// Why a table of chunks: one call updates every parameter tensor of a step
// (apex's multi_tensor_apply, PyTorch's fused Adam), so the number of
// kernels does not grow with the number of tensors. Each tensor is cut into
// fixed chunks of kOptimizerChunk elements; the call's work items are the
// (tensor, chunk) pairs, numbered in table order. A CUDA block or an OpenMP
// iteration takes one chunk and finds its tensor by a binary search over
// firstChunk. The chunking is fixed (it does not depend on the thread or
// block count), which is what makes the sum of squares deterministic.
//
// Per-step scalars are read through pointers, not passed by value: on CUDA
// they are device values written earlier in the step (learning-rate
// schedule, loss scale, clipping coefficient, overflow flag), and reading
// them in the kernel keeps the step free of host synchronisation and
// capturable in a CUDA graph. On the CPU they are host pointers.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_OPTIMIZERTABLE_H
#define DSC_KERNELS_OPTIMIZERTABLE_H

#include <cstddef>
#include <cstdint>

#ifdef __CUDACC__
#define DSC_KERNELS_HD __host__ __device__
#else
#define DSC_KERNELS_HD
#endif

namespace dsc::kernels {

/// Elements per chunk: large enough that a chunk's launch and lookup cost
/// vanish beside its traffic (256 KiB of fp32 per stream), small enough
/// that GPT-2's 124M parameters make ~2,000 chunks for 132 SMs.
constexpr int64_t kOptimizerChunk = 65536;

/// ceil(numel / kOptimizerChunk); an empty tensor has no chunk.
DSC_KERNELS_HD inline int64_t chunksOf(int64_t numel) {
  return (numel + kOptimizerChunk - 1) / kOptimizerChunk;
}

/// One parameter tensor of an Adam/AdamW step. `param` is the fp32
/// parameter or, in mixed precision, its fp32 master weight; `grad` its
/// gradient (fp32 or 16-bit, T); `copy`, when not null, receives the
/// updated value rounded to T (the 16-bit parameter of a master weight).
template <typename T> struct AdamTensor {
  float *param;
  const T *grad;
  float *expAvg, *expAvgSq;
  T *copy;
  int64_t numel;
  int64_t firstChunk; // set by assignChunks
};

/// One parameter tensor of an SGD step; `momentumBuffer` is read and
/// written when the configuration's momentum is not 0 (null otherwise).
template <typename T> struct SgdTensor {
  float *param;
  const T *grad;
  float *momentumBuffer;
  T *copy;
  int64_t numel;
  int64_t firstChunk;
};

/// One gradient, for the reductions alone (a step's tables of AdamTensor or
/// SgdTensor serve them as well).
template <typename T> struct GradTensor {
  const T *grad;
  int64_t numel;
  int64_t firstChunk;
};

/// Numbers the chunks of `table` in order (sets each firstChunk) and
/// returns their total, the `chunks` argument of every call over it. Done
/// once, when the table is built; the tensors' addresses may change later,
/// their sizes may not.
template <typename Entry> int64_t assignChunks(Entry *table, int64_t count) {
  int64_t next = 0;
  for (int64_t t = 0; t < count; ++t) {
    table[t].firstChunk = next;
    next += chunksOf(table[t].numel);
  }
  return next;
}

/// The entry of `table` whose chunks include `chunk`: the last one whose
/// firstChunk is at most `chunk` (empty tensors share their successor's
/// firstChunk and are never found).
template <typename Entry>
DSC_KERNELS_HD inline int64_t findChunkOwner(const Entry *table, int64_t count,
                                             int64_t chunk) {
  int64_t lo = 0, hi = count - 1;
  while (lo < hi) {
    int64_t mid = hi - (hi - lo) / 2;
    if (table[mid].firstChunk <= chunk)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/// The run's constant Adam/AdamW hyper-parameters, as fp32 values: build it
/// with adamConfig, which rounds them the way dsc's optimizer pass does.
struct AdamConfig {
  float beta1, oneMinusBeta1; // float(beta1), float(1 - beta1)
  float beta2, oneMinusBeta2;
  float eps;
  float weightDecay; // float(weight_decay); 0: none
  bool decoupled;    // AdamW: p *= 1 - lr * weight_decay; Adam: g += wd * p
  /// AdamW with a constant lr: the decay factor float(1 - lr * wd) computed
  /// in double, as PyTorch's Python scalar is. Otherwise (a scheduled lr,
  /// a float value of the step) the kernel computes 1 - lr * wd in float.
  bool constantDecay;
  float decayFactor;
};

/// `constantLr` < 0: the lr is scheduled (read each step).
inline AdamConfig adamConfig(double beta1, double beta2, double eps,
                             double weightDecay, bool decoupled,
                             double constantLr = -1) {
  AdamConfig c;
  c.beta1 = float(beta1);
  c.oneMinusBeta1 = float(1 - beta1);
  c.beta2 = float(beta2);
  c.oneMinusBeta2 = float(1 - beta2);
  c.eps = float(eps);
  c.weightDecay = float(weightDecay);
  c.decoupled = decoupled;
  c.constantDecay = constantLr >= 0;
  c.decayFactor = c.constantDecay ? float(1 - constantLr * weightDecay) : 1.0f;
  return c;
}

/// SGD with momentum (dampening 0, no Nesterov), weight decay as L2.
struct SgdConfig {
  float momentum;    // 0: no momentum buffer
  float weightDecay; // 0: none
};

inline SgdConfig sgdConfig(double momentum, double weightDecay) {
  return SgdConfig{float(momentum), float(weightDecay)};
}

/// The step's scalars, each a pointer to one value written earlier in the
/// step (device memory on CUDA). Null where the step has no such value.
struct OptimizerStep {
  const float *lr;
  /// The step count of this update, 1 on the first (Adam's t; the pass
  /// keeps it as a float state).
  const float *step;
  /// The gradient factors, applied one after the other, as the pass does:
  /// g = float(grad) * unscale * clipCoef, each product rounded to fp32.
  /// unscale is 1 / loss_scale; clipCoef min(max_norm / (norm + 1e-6), 1).
  const float *unscale;
  const float *clipCoef;
  /// Nonzero: skip the whole update (fp16 overflow); nothing is written.
  const std::uint8_t *skip;
};

/// Bytes of the scratch the multi-tensor sum of squares needs: one double
/// per chunk and one float per tensor, 16-byte aligned sections.
inline std::size_t sumSquaresWorkspaceBytes(int64_t count, int64_t chunks) {
  auto up = [](std::size_t n) { return (n + 15) / 16 * 16; };
  return up(std::size_t(chunks) * sizeof(double)) +
         up(std::size_t(count) * sizeof(float));
}

} // namespace dsc::kernels

#endif // DSC_KERNELS_OPTIMIZERTABLE_H
