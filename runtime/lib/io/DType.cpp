//===- DType.cpp - safetensors element types ------------------------------===//

#include "dsc/runtime/SafeTensors.h"

#include "dsc/runtime/Error.h"

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

} // namespace dsc::rt
