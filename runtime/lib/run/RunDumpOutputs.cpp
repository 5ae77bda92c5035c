//===- RunDumpOutputs.cpp - dsc-run --dump-outputs ------------------------===//
//
// The outputs of one step as a safetensors file, for checks against
// PyTorch (gradients against torch.autograd on the same weights and batch).
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/Run.h"
#include "dsc/runtime/SafeTensors.h"

namespace dsc::rt {

void dumpOutputs(const std::string &path, const ArtifactInfo &info,
                 RunTarget &target) {
  std::vector<TensorView> views;
  for (int32_t i = 0; i < info.numOutputs; ++i) {
    const TensorDesc &output = info.outputs[i];
    views.push_back({output.name, storageDType(output.type),
                     std::vector<int64_t>(output.shape, output.shape + output.rank),
                     target.hostOutput(i)});
  }
  writeSafeTensors(path, views);
}

} // namespace dsc::rt
