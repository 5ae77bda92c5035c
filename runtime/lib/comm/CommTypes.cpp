#include "dsc/runtime/CommTypes.h"

#include "dsc/runtime/Error.h"

#include <iterator>
#include <string>

namespace dsc::rt {

namespace {

struct DTypeEntry {
  const char *name;
  std::size_t size;
};
// One row per enumerator, in the enum's order.
constexpr DTypeEntry kDTypes[] = {
    {"f32", 4}, {"f64", 8}, {"i32", 4}, {"i64", 8}, {"bf16", 2}, {"f16", 2}};
constexpr const char *kReduceOps[] = {"sum", "max"};
constexpr const char *kCollectiveKinds[] = {"allReduce",     "allGather",
                                            "reduceScatter", "broadcast",
                                            "barrier",       "allToAll",
                                            "send",          "recv"};
static_assert(std::size(kCollectiveKinds) == kCollectiveKindCount);

/// table[value]; Error for a value cast from an out-of-range integer.
template <typename Enum, typename Row, std::size_t N>
const Row &row(const Row (&table)[N], Enum value, const char *enumName) {
  auto index = static_cast<std::size_t>(value);
  check(index < N,
        std::string("invalid ") + enumName + " " + std::to_string(index));
  return table[index];
}

} // namespace

std::size_t byteSize(CommDType dtype) {
  return row(kDTypes, dtype, "CommDType").size;
}

const char *name(CommDType dtype) {
  return row(kDTypes, dtype, "CommDType").name;
}

const char *name(ReduceOp op) { return row(kReduceOps, op, "ReduceOp"); }

const char *name(CollectiveKind kind) {
  return row(kCollectiveKinds, kind, "CollectiveKind");
}

} // namespace dsc::rt
