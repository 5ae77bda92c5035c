//===- RunData.cpp - the data file cut into the artifact's inputs ---------===//

#include "dsc/runtime/ArtifactLibrary.h"
#include "dsc/runtime/Run.h"

namespace dsc::rt {

std::vector<SampleSpec> sampleSpecs(const ArtifactInfo &info) {
  std::vector<SampleSpec> specs;
  for (int32_t i = 0; i < info.numInputs; ++i) {
    const TensorDesc &input = info.inputs[i];
    check(input.rank >= 1, std::string("artifact input '") + input.name +
                               "' has no micro-batch dimension");
    specs.push_back({input.name, storageDType(input.type),
                     std::vector<int64_t>(input.shape + 1,
                                          input.shape + input.rank),
                     input.indexLimit});
  }
  return specs;
}

InputFeed::InputFeed(const std::string &path, const FeedPlan &plan,
                     const ArtifactInfo &info)
    : plan_(plan) {
  if (plan.format == DataFormat::Samples) {
    samples_ = SampleData::open(path, sampleSpecs(info));
    return;
  }
  tokens_ = TokenData::open(path, plan.tokenLimit);
  if (plan.tokensInput < 0 || plan.targetsInput < 0)
    unfed_.resize(static_cast<size_t>(plan.microBatch * plan.seqLen));
}

void InputFeed::fill(int64_t index, int rank, int worldSize,
                     const std::vector<void *> &inputs) {
  int64_t globalBatch = plan_.microBatch * worldSize;
  if (samples_) {
    samples_->batch(index, globalBatch, rank, worldSize, inputs);
    return;
  }
  auto buffer = [&](int32_t input) {
    return input >= 0 ? static_cast<int64_t *>(inputs[size_t(input)])
                      : unfed_.data();
  };
  tokens_->batch(index, globalBatch, plan_.seqLen, rank, worldSize,
                 buffer(plan_.tokensInput), buffer(plan_.targetsInput));
}

} // namespace dsc::rt
