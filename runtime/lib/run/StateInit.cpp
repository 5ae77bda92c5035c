//===- StateInit.cpp - filling the states a rewrite added
//------------------===//
//
// A weights file exported from the dense model lacks the parameters that
// dsc-opt's rewrites add (the experts of --dsc-moe). Their StateDesc says
// how to make them (Artifact.h): repeat a stored tensor along a new leading
// dimension (upcycling: every expert a copy of the dense block), or draw
// uniform values from a generator keyed by the state's name, so that every
// rank, every world size and any other implementation that follows
// docs/moe.md compute the same numbers. Each rank makes only its slice of
// a partitioned state (ZeRO's shard, or expert parallelism's experts).
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/ArtifactLibrary.h"
#include "dsc/runtime/Error.h"
#include "dsc/runtime/Float16.h"
#include "dsc/runtime/Run.h"
#include "dsc/runtime/SafeTensors.h"
#include "dsc/runtime/Xxh64.h"

#include <cstring>
#include <vector>

namespace dsc::rt {

bool hasInitRule(const StateDesc &state) {
  return state.initFrom != nullptr || state.initUniform > 0;
}

double initUniformValue(const std::string &name, uint64_t seed, int64_t index,
                        double bound) {
  uint64_t x = Xxh64::of(name.data(), name.size(), seed) +
               (uint64_t(index) + 1) * 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  double u = double(x >> 40) / double(1ull << 24);
  return (2.0 * u - 1.0) * bound;
}

namespace {
/// Stores `value` as element `i` of `dst`, a buffer of `type`.
void store(void *dst, ElementType type, int64_t i, double value) {
  switch (type) {
  case ElementType::F64:
    static_cast<double *>(dst)[i] = value;
    return;
  case ElementType::F32:
    static_cast<float *>(dst)[i] = float(value);
    return;
  case ElementType::BF16:
    static_cast<uint16_t *>(dst)[i] = floatToBf16(float(value));
    return;
  case ElementType::F16:
    static_cast<uint16_t *>(dst)[i] = floatToF16(float(value));
    return;
  default:
    throw Error(std::string("a drawn state must be a float tensor, not ") +
                elementTypeName(type));
  }
}

void repeat(const StateDesc &state, const SafeTensorsFile &weights,
            StateSlice slice, void *dst) {
  const std::string source = state.initFrom;
  TensorDesc whole = wholeTensor(state);
  const std::string where = weights.path();
  check(weights.contains(source),
        where + ": no tensor '" + source + "', which state '" +
            state.tensor.name + "' repeats (it is the dense tensor the "
            "experts, or a residual MoE's dense block, start from)");
  const TensorInfo &stored = weights.info(source);
  // The stored tensor is the state without its leading dimension (the
  // experts, each a copy), or the state itself (residual MoE's dense block
  // under its new name).
  TensorDesc one = whole;
  one.name = source.c_str();
  if (int64_t(stored.shape.size()) != whole.rank) {
    one.rank = whole.rank - 1;
    one.shape = whole.shape + 1;
  }
  checkStateMatches(where, one, stored.dtype, stored.shape);
  int64_t period = stored.numel();
  size_t width = dtypeSize(stored.dtype);
  std::vector<char> data(size_t(period) * width);
  weights.read(source, data.data(), data.size());
  checkFinite(data.data(), stored.dtype, size_t(period), where, source);
  size_t element = elementSize(state.tensor.type);
  char *out = static_cast<char *>(dst);
  for (int64_t i = 0; i < slice.total(); ++i) {
    int64_t at = slice.whole(i) % period;
    copyStored(out + size_t(i) * element, state.tensor.type,
               data.data() + size_t(at) * width, stored.dtype, 1);
  }
}
} // namespace

void initState(const StateDesc &state, const SafeTensorsFile &weights, int rank,
               int expertParallelSize, void *dst, int tensorParallelSize) {
  StateSlice slice =
      stateSlice(state, rank, expertParallelSize, tensorParallelSize);
  if (isPartitioned(state))
    std::memset(dst, 0, tensorBytes(state.tensor));
  if (state.initFrom) {
    repeat(state, weights, slice, dst);
    return;
  }
  // A master weight draws its parameter's values (keyed by the
  // parameter's name), so that the 16-bit parameter is its master rounded.
  std::string key = state.tensor.name;
  const std::string suffix = ".master";
  if (state.role == StateRole::Master && key.size() > suffix.size() &&
      key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0)
    key.resize(key.size() - suffix.size());
  for (int64_t i = 0; i < slice.total(); ++i)
    store(dst, state.tensor.type, i,
          initUniformValue(key, state.initSeed, slice.whole(i),
                           state.initUniform));
}

} // namespace dsc::rt
