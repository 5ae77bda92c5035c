//===- StateSource.cpp - which stored tensor fills a state, and how -------===//
//
// Weights files and checkpoints hold states by name. Mixed precision adds
// two rules (Artifact.h, StateRole): a master weight "X.master" that the file
// lacks is the fp32 weight X, and a 16-bit parameter whose tensor is f32 is
// rounded to nearest even, with the kernels' conversions (Float16.h), so
// that it equals its master rounded, as after every update.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/Float16.h"
#include "dsc/runtime/Run.h"
#include "dsc/runtime/SafeTensors.h"

#include <cstring>

namespace dsc::rt {

std::string stateSource(const StateDesc &state,
                        const std::function<bool(const std::string &)> &has) {
  std::string name = state.tensor.name;
  static const std::string suffix = ".master";
  if (state.role != StateRole::Master || has(name) ||
      name.size() <= suffix.size() ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return name;
  return name.substr(0, name.size() - suffix.size());
}

bool zeroBetweenSteps(const StateDesc &state) {
  return state.role == StateRole::Gradient ||
         (state.role == StateRole::Optimizer &&
          std::strcmp(state.tensor.name, "optimizer.micro_step") == 0);
}

bool roundsOnLoad(ElementType type, DType stored) {
  return stored == DType::F32 &&
         (type == ElementType::BF16 || type == ElementType::F16);
}

void copyStored(void *dst, ElementType type, const void *src, DType stored,
                size_t count) {
  if (!roundsOnLoad(type, stored)) {
    std::memcpy(dst, src, count * elementSize(type));
    return;
  }
  auto *out = static_cast<std::uint16_t *>(dst);
  const char *in = static_cast<const char *>(src);
  for (size_t i = 0; i < count; ++i) {
    float value;
    std::memcpy(&value, in + i * sizeof value, sizeof value);
    out[i] = type == ElementType::BF16 ? floatToBf16(value) : floatToF16(value);
  }
}

} // namespace dsc::rt
