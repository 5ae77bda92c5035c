#include "dsc/runtime/Artifact.h"
#include "dsc/runtime/Error.h"

#include <string>

namespace dsc::rt {

size_t elementSize(ElementType type) {
  switch (type) {
  case ElementType::F64:
  case ElementType::I64:
    return 8;
  case ElementType::F32:
  case ElementType::I32:
    return 4;
  case ElementType::F16:
  case ElementType::BF16:
    return 2;
  case ElementType::I1:
    return 1;
  }
  throw Error("unknown element type " + std::to_string(int(type)));
}

const char *elementTypeName(ElementType type) {
  switch (type) {
  case ElementType::F64: return "f64";
  case ElementType::F32: return "f32";
  case ElementType::F16: return "f16";
  case ElementType::BF16: return "bf16";
  case ElementType::I64: return "i64";
  case ElementType::I32: return "i32";
  case ElementType::I1: return "i1";
  }
  return "?";
}

} // namespace dsc::rt
