//===- Reduce.cpp - deterministic two-stage reductions on the CPU ---------===//
//
// One engine for sum, mean, sum of squares and max (Reduce.h): an operation
// supplies its accumulator type, the partial of one chunk of a row (a SIMD
// reduction) or of a block of rows of columns (a SIMD loop across the
// columns, rows in order), and how two partials combine. The chunking
// depends on the shape only, never on the number of threads.
//
//===----------------------------------------------------------------------===//

#include "dsc/kernels/Reduce.h"
#include "dsc/kernels/CpuFeatures.h"

#include "ElementTraits.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

using namespace dsc::kernels::cpu;
using namespace dsc::kernels::cpu::detail;

namespace {

/// Below this many elements a reduction runs on the calling thread: a
/// parallel region costs more than it saves. (Which thread computes a
/// partial never changes its value.)
constexpr int64_t kParallelElements = 1 << 15;
/// Columns per work item of a column reduction (its accumulators fit in L1).
constexpr int64_t kColumnTile = 256;

/// The hot loops are compiled twice, for AVX2 and for any x86-64, and the
/// CPU's features pick one at run time (no -march flag: the runtime runs on
/// any x86-64). Sums in double take two SSE2 adds per float, half the rate
/// of AVX2. (Clang has no target_clones for templates: each loop is an
/// always-inline body with two callers compiled for the two targets.)
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DSC_AVX2 __attribute__((target("avx2")))
#else
#define DSC_AVX2
#endif
#define DSC_INLINE [[gnu::always_inline]] inline
#define COMMA ,

/// `Name`(args...) runs `Name##Body` compiled for AVX2 where the CPU has it.
#define DSC_DISPATCH(Name, Template, Params, Args)                             \
  Template DSC_AVX2 auto Name##Avx2 Params { return Name##Body Args; }         \
  Template auto Name##Base Params { return Name##Body Args; }                  \
  Template auto Name Params { return dsc::kernels::cpuHasAvx2() ? Name##Avx2 Args : Name##Base Args; }

template <bool Squares, typename T> DSC_INLINE SumAcc<T> loadSum(T x) {
  SumAcc<T> v = SumAcc<T>(Wide<T>(x));
  return Squares ? v * v : v;
}

template <bool Squares, typename T> DSC_INLINE SumAcc<T> sumRowBody(const T *x, int64_t len) {
  SumAcc<T> acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < len; ++i)
    acc += loadSum<Squares>(x[i]);
  return acc;
}
DSC_DISPATCH(sumRow, template <bool Squares COMMA typename T>, (const T *x, int64_t len),
             <Squares>(x, len))

/// acc[q] = step(acc[q], x[j * stride + q]) for the rows j in order: four
/// rows per pass over the accumulators (the same operations in the same
/// order as one row per pass, with a quarter of the loads and stores of
/// acc).
template <typename A, typename T, typename Step>
DSC_INLINE void foldColumnsBody(const T *x, int64_t stride, int64_t rows, int64_t width,
                                A *acc, Step step) {
  int64_t j = 0;
  for (; j + 4 <= rows; j += 4) {
    const T *r0 = x + j * stride, *r1 = r0 + stride, *r2 = r1 + stride, *r3 = r2 + stride;
#pragma omp simd
    for (int64_t q = 0; q < width; ++q)
      acc[q] = step(step(step(step(acc[q], r0[q]), r1[q]), r2[q]), r3[q]);
  }
  for (; j < rows; ++j) {
    const T *r = x + j * stride;
#pragma omp simd
    for (int64_t q = 0; q < width; ++q)
      acc[q] = step(acc[q], r[q]);
  }
}
DSC_DISPATCH(foldColumns, template <typename A COMMA typename T COMMA typename Step>,
             (const T *x, int64_t stride, int64_t rows, int64_t width, A *acc, Step step),
             (x, stride, rows, width, acc, step))

template <bool Squares> struct SumOp {
  template <typename T> using Acc = SumAcc<T>;
  template <typename T> static Acc<T> identity() { return 0; }
  template <typename T> static Acc<T> row(const T *x, int64_t len) {
    return sumRow<Squares>(x, len);
  }
  template <typename T>
  static void columns(const T *x, int64_t stride, int64_t rows, int64_t width, Acc<T> *acc) {
    foldColumns(x, stride, rows, width, acc,
                [](Acc<T> a, T v) { return a + loadSum<Squares>(v); });
  }
  template <typename A> static A combine(A a, A b) { return a + b; }
};

/// The maximum of a row in kMaxLanes independent running maxima (element i
/// goes to lane i % kMaxLanes), combined in lane order at the end. A
/// float maximum written as a select is no reduction the vectorizer may
/// reorder without -ffinite-math, but lanes that never meet until the end
/// vectorize as plain selects. NaN is tracked on the side and wins.
constexpr int64_t kMaxLanes = 16;
template <typename T> DSC_INLINE Wide<T> maxRowBody(const T *x, int64_t len, Wide<T> m) {
  Wide<T> lane[kMaxLanes];
  bool nan[kMaxLanes];
  for (int64_t j = 0; j < kMaxLanes; ++j)
    lane[j] = m, nan[j] = false;
  int64_t i = 0;
  for (; i + kMaxLanes <= len; i += kMaxLanes) {
#pragma omp simd
    for (int64_t j = 0; j < kMaxLanes; ++j) {
      Wide<T> v = Wide<T>(x[i + j]);
      nan[j] = nan[j] || v != v;
      lane[j] = v > lane[j] ? v : lane[j];
    }
  }
  for (int64_t j = 0; i + j < len; ++j) {
    Wide<T> v = Wide<T>(x[i + j]);
    nan[j] = nan[j] || v != v;
    lane[j] = v > lane[j] ? v : lane[j];
  }
  bool anyNan = false;
  for (int64_t j = 0; j < kMaxLanes; ++j) {
    anyNan = anyNan || nan[j];
    m = lane[j] > m ? lane[j] : m;
  }
  if constexpr (std::numeric_limits<Wide<T>>::has_quiet_NaN)
    if (anyNan)
      return std::numeric_limits<Wide<T>>::quiet_NaN();
  return m;
}
DSC_DISPATCH(maxRow, template <typename T>, (const T *x, int64_t len, Wide<T> m), (x, len, m))

struct MaxOp {
  template <typename T> using Acc = Wide<T>;
  template <typename T> static Acc<T> identity() {
    if constexpr (std::numeric_limits<Acc<T>>::has_infinity)
      return -std::numeric_limits<Acc<T>>::infinity();
    else
      return std::numeric_limits<Acc<T>>::lowest();
  }
  template <typename T> static Acc<T> row(const T *x, int64_t len) {
    return maxRow(x, len, identity<T>());
  }
  template <typename T>
  static void columns(const T *x, int64_t stride, int64_t rows, int64_t width, Acc<T> *acc) {
    foldColumns(x, stride, rows, width, acc, [](Acc<T> a, T v) { return combine(a, Acc<T>(v)); });
  }
  /// NaN-propagating, as torch.amax.
  template <typename A> static A combine(A a, A b) { return b > a || b != b ? b : a; }
};

/// The reduction of in[outer, n, inner] over n by `Op`, each result passed
/// through `finish` (the mean divides there).
template <class Op, typename T, typename Finish>
void reduce(const T *in, T *out, int64_t outer, int64_t n, int64_t inner, Finish finish) {
  using A = typename Op::template Acc<T>;
  const A identity = Op::template identity<T>();
  const bool parallel = outer * n * inner >= kParallelElements;
  if (inner == 1) {
    int64_t chunks = std::max<int64_t>(1, (n + kReduceChunk - 1) / kReduceChunk);
    if (chunks == 1) {
#pragma omp parallel for schedule(static) if (parallel)
      for (int64_t o = 0; o < outer; ++o)
        out[o] = finish(Op::combine(identity, Op::row(in + o * n, n)));
      return;
    }
    std::vector<A> partial(outer * chunks);
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t item = 0; item < outer * chunks; ++item) {
      int64_t o = item / chunks, start = (item % chunks) * kReduceChunk;
      partial[item] = Op::row(in + o * n + start, std::min(kReduceChunk, n - start));
    }
#pragma omp parallel for schedule(static) if (parallel && outer > 1)
    for (int64_t o = 0; o < outer; ++o) {
      A acc = identity;
      for (int64_t c = 0; c < chunks; ++c)
        acc = Op::combine(acc, partial[o * chunks + c]);
      out[o] = finish(acc);
    }
    return;
  }

  int64_t chunks = std::max<int64_t>(1, (n + kReduceChunkRows - 1) / kReduceChunkRows);
  int64_t tiles = (inner + kColumnTile - 1) / kColumnTile;
  std::vector<A> partial(chunks > 1 ? outer * chunks * inner : 0);
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t item = 0; item < outer * chunks * tiles; ++item) {
    int64_t o = item / (chunks * tiles), c = item / tiles % chunks, t = item % tiles;
    int64_t q0 = t * kColumnTile, width = std::min(kColumnTile, inner - q0);
    int64_t j0 = c * kReduceChunkRows, rows = std::min(kReduceChunkRows, n - j0);
    A acc[kColumnTile];
    std::fill(acc, acc + width, identity);
    Op::columns(in + (o * n + j0) * inner + q0, inner, std::max<int64_t>(rows, 0),
                width, acc);
    if (chunks == 1) {
      for (int64_t q = 0; q < width; ++q)
        out[o * inner + q0 + q] = finish(Op::combine(identity, acc[q]));
    } else {
      std::copy(acc, acc + width, partial.begin() + (o * chunks + c) * inner + q0);
    }
  }
  if (chunks == 1)
    return;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t item = 0; item < outer * inner; ++item) {
    int64_t o = item / inner, q = item % inner;
    A acc = identity;
    for (int64_t c = 0; c < chunks; ++c)
      acc = Op::combine(acc, partial[(o * chunks + c) * inner + q]);
    out[item] = finish(acc);
  }
}

} // namespace

template <typename T>
void dsc::kernels::cpu::reduceSum(Queue, const T *in, T *out, int64_t outer, int64_t n,
                                  int64_t inner) {
  reduce<SumOp<false>>(in, out, outer, n, inner, [](SumAcc<T> a) { return store<T>(a); });
}

template <typename T>
void dsc::kernels::cpu::reduceMean(Queue, const T *in, T *out, int64_t outer, int64_t n,
                                   int64_t inner) {
  double count = double(n);
  reduce<SumOp<false>>(in, out, outer, n, inner,
                       [count](SumAcc<T> a) { return store<T>(double(a) / count); });
}

template <typename T>
void dsc::kernels::cpu::sumSquares(Queue, const T *in, T *out, int64_t outer, int64_t n,
                                   int64_t inner) {
  reduce<SumOp<true>>(in, out, outer, n, inner, [](SumAcc<T> a) { return store<T>(a); });
}

template <typename T>
void dsc::kernels::cpu::reduceMax(Queue, const T *in, T *out, int64_t outer, int64_t n,
                                  int64_t inner) {
  reduce<MaxOp>(in, out, outer, n, inner, [](Wide<T> a) { return store<T>(a); });
}

#define DSC_REDUCE_INSTANTIATE(T)                                              \
  template void dsc::kernels::cpu::reduceSum<T>(Queue, const T *, T *, int64_t, int64_t, \
                                                int64_t);                      \
  template void dsc::kernels::cpu::reduceMax<T>(Queue, const T *, T *, int64_t, int64_t, \
                                                int64_t);
#define DSC_REDUCE_INSTANTIATE_FLOAT(T)                                        \
  DSC_REDUCE_INSTANTIATE(T)                                                    \
  template void dsc::kernels::cpu::reduceMean<T>(Queue, const T *, T *, int64_t, int64_t, \
                                                 int64_t);                     \
  template void dsc::kernels::cpu::sumSquares<T>(Queue, const T *, T *, int64_t, int64_t, \
                                                 int64_t);
DSC_REDUCE_INSTANTIATE_FLOAT(float)
DSC_REDUCE_INSTANTIATE_FLOAT(double)
DSC_REDUCE_INSTANTIATE_FLOAT(dsc::rt::BFloat16)
DSC_REDUCE_INSTANTIATE_FLOAT(dsc::rt::Half)
DSC_REDUCE_INSTANTIATE(int64_t)
DSC_REDUCE_INSTANTIATE(int32_t)
