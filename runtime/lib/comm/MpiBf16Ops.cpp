#include "MpiBf16Ops.h"

#include "BFloat16.h"

#include <cmath>
#include <cstdint>

namespace dsc::rt {

namespace {

template <typename Combine>
void combineBf16(const void *in, void *inout, int count, Combine combine) {
  auto *a = static_cast<const std::uint16_t *>(in);
  auto *b = static_cast<std::uint16_t *>(inout);
  for (int i = 0; i < count; ++i)
    b[i] = floatToBf16(combine(bf16ToFloat(a[i]), bf16ToFloat(b[i])));
}

} // namespace

void bf16SumOp(void *in, void *inout, int *count, MPI_Datatype *) {
  combineBf16(in, inout, *count, [](float x, float y) { return x + y; });
}

void bf16MaxOp(void *in, void *inout, int *count, MPI_Datatype *) {
  combineBf16(in, inout, *count, [](float x, float y) {
    return std::isnan(x) || std::isnan(y) ? NAN : (x > y ? x : y);
  });
}

} // namespace dsc::rt
