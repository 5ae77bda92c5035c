//===- DType.cpp - safetensors element types ------------------------------===//

#include "dsc/runtime/SafeTensors.h"

#include "dsc/runtime/Error.h"

#include <cstring>

namespace dsc::rt {

namespace {
struct DTypeEntry {
  DType dtype;
  const char *name;
  size_t size;
};
// One row per DType, in the enum's order.
constexpr DTypeEntry kDTypes[] = {
    {DType::F64, "F64", 8},   {DType::F32, "F32", 4},   {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2}, {DType::I64, "I64", 8},   {DType::I32, "I32", 4},
    {DType::I16, "I16", 2},   {DType::I8, "I8", 1},     {DType::U8, "U8", 1},
    {DType::U16, "U16", 2},   {DType::BOOL, "BOOL", 1},
};

const DTypeEntry &entry(DType dtype) {
  auto index = static_cast<size_t>(dtype);
  check(index < std::size(kDTypes), "invalid DType " + std::to_string(index));
  return kDTypes[index];
}
} // namespace

size_t dtypeSize(DType dtype) { return entry(dtype).size; }

const char *dtypeName(DType dtype) { return entry(dtype).name; }

DType parseDType(const std::string &name) {
  for (const DTypeEntry &e : kDTypes)
    if (name == e.name)
      return e.dtype;
  throw Error("unknown dtype '" + name + "'");
}

namespace {
/// Index of the first of `count` words whose exponent bits (`mask`) are all
/// set: the NaNs and infinities of an IEEE format; -1 when none.
template <typename Word>
int64_t firstAllOnes(const void *data, size_t count, Word mask) {
  const char *bytes = static_cast<const char *>(data);
  for (size_t i = 0; i < count; ++i) {
    Word word;
    std::memcpy(&word, bytes + i * sizeof(Word), sizeof(Word));
    if ((word & mask) == mask)
      return static_cast<int64_t>(i);
  }
  return -1;
}

/// "nan", "inf" or "-inf" for the element at `data` of float `dtype`.
std::string describeNonFinite(const char *data, DType dtype) {
  uint64_t bits = 0;
  std::memcpy(&bits, data, dtypeSize(dtype));
  uint64_t signBit = uint64_t(1) << (8 * dtypeSize(dtype) - 1);
  uint64_t exponent = dtype == DType::F64   ? 0x7ff0000000000000ull
                      : dtype == DType::F32 ? 0x7f800000u
                      : dtype == DType::F16 ? 0x7c00u
                                            : 0x7f80u;
  uint64_t mantissa = bits & ~signBit & ~exponent;
  if (mantissa != 0)
    return "nan";
  return bits & signBit ? "-inf" : "inf";
}
} // namespace

int64_t firstNonFinite(const void *data, DType dtype, size_t count) {
  switch (dtype) {
  case DType::F64:
    return firstAllOnes<uint64_t>(data, count, 0x7ff0000000000000ull);
  case DType::F32:
    return firstAllOnes<uint32_t>(data, count, 0x7f800000u);
  case DType::F16:
    return firstAllOnes<uint16_t>(data, count, 0x7c00u);
  case DType::BF16:
    return firstAllOnes<uint16_t>(data, count, 0x7f80u);
  default:
    return -1;
  }
}

void checkFinite(const void *data, DType dtype, size_t count,
                 const std::string &where, const std::string &name) {
  int64_t bad = firstNonFinite(data, dtype, count);
  if (bad < 0)
    return;
  throw Error(where + ": tensor '" + name + "' holds " +
              describeNonFinite(static_cast<const char *>(data) +
                                    size_t(bad) * dtypeSize(dtype),
                                dtype) +
              " at element " + std::to_string(bad) + " (of " +
              std::to_string(count) + "); weights must be finite");
}

} // namespace dsc::rt
