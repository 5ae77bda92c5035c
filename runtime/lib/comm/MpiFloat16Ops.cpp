#include "MpiFloat16Ops.h"

#include "dsc/runtime/Float16.h"

#include <cmath>
#include <cstdint>

namespace dsc::rt {

namespace {

/// b[i] = T(combine(float(a[i]), float(b[i]))) for a 16-bit element type T.
template <typename T, typename Combine>
void combine16(const void *in, void *inout, int count, Combine combine) {
  auto *a = static_cast<const T *>(in);
  auto *b = static_cast<T *>(inout);
  for (int i = 0; i < count; ++i)
    b[i] = T(combine(float(a[i]), float(b[i])));
}

float sum(float x, float y) { return x + y; }

float max(float x, float y) {
  return std::isnan(x) || std::isnan(y) ? NAN : (x > y ? x : y);
}

} // namespace

void bf16SumOp(void *in, void *inout, int *count, MPI_Datatype *) {
  combine16<BFloat16>(in, inout, *count, sum);
}

void bf16MaxOp(void *in, void *inout, int *count, MPI_Datatype *) {
  combine16<BFloat16>(in, inout, *count, max);
}

void f16SumOp(void *in, void *inout, int *count, MPI_Datatype *) {
  combine16<Half>(in, inout, *count, sum);
}

void f16MaxOp(void *in, void *inout, int *count, MPI_Datatype *) {
  combine16<Half>(in, inout, *count, max);
}

} // namespace dsc::rt
