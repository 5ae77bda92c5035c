//===- RunDumpStates.cpp - dsc-run --dump-states --------------------------===//
//
// Every state a rank holds after its last step, as a safetensors file: what
// a test reads to check a state no checkpoint records (a teacher's frozen
// weights) or a rank's shard as it is, before any gathering.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/MemoryPool.h"
#include "dsc/runtime/Run.h"
#include "dsc/runtime/SafeTensors.h"

namespace dsc::rt {

std::string dumpStatesPath(const std::string &path, int rank) {
  return rank == 0 ? path : path + ".rank" + std::to_string(rank);
}

void dumpStates(const std::string &path, const ArtifactInfo &info,
                RunTarget &target) {
  MemoryPool scratch("--dump-states copies");
  std::vector<TensorView> views;
  for (int32_t i = 0; i < info.numStates; ++i) {
    const TensorDesc &state = info.states[i].tensor;
    const void *bytes = target.hostState(info, i, scratch);
    if (!bytes) // released (a teacher after staged KD's stop)
      continue;
    views.push_back({state.name, storageDType(state.type),
                     std::vector<int64_t>(state.shape, state.shape + state.rank),
                     bytes});
  }
  writeSafeTensors(path, views);
}

} // namespace dsc::rt
