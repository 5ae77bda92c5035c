//===- CheckpointPipelineTest.cpp - checkpoints of pipeline stages --------===//
//
// A save of a pipeline-parallel job, every rank played in this process:
// 2 stages on 4 ranks, each stage's weight partitioned over its 2 data
// ranks (ZeRO), and a tied weight that both stages hold. Which rank writes
// what, the metadata that records the stages, each name stored once, and
// loading the same bits at 1 stage, at 2 stages on 2 ranks and at 2 stages
// on 4 ranks; a stage whose states no rank wrote is refused at commit.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/ArtifactLibrary.h"
#include "dsc/runtime/Checkpoint.h"
#include "dsc/runtime/Error.h"
#include "dsc/runtime/MemoryPool.h"
#include "dsc/runtime/Run.h"

#include "ScratchDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace dsc::rt;
using dsc::rt::test::ScratchDir;
using nlohmann::json;
using testing::HasSubstr;

namespace {

constexpr int64_t kWteShape[] = {4, 2}; // tied: both stages hold it
constexpr int64_t kBlockShape[] = {2, 6};
constexpr int64_t kShardShape[] = {6}; // a block's shard over 2 data ranks

StateDesc whole(const char *name, const int64_t *shape) {
  StateDesc state{};
  state.tensor = {name, ElementType::F32, 2, shape, 0};
  state.role = StateRole::Parameter;
  state.tier = MemoryTier::Device;
  return state;
}

/// ZeRO's shard of `name` [2, 6] over a stage's data group of 2.
StateDesc shard(const char *name) {
  StateDesc state = whole(name, kBlockShape);
  state.tensor = {name, ElementType::F32, 1, kShardShape, 0};
  state.wholeRank = 2;
  state.wholeShape = kBlockShape;
  state.partitionGroup = int32_t(CommGroup::Data);
  return state;
}

ArtifactInfo infoWith(const StateDesc *states, int32_t count, int worldSize,
                      int stages, int stage) {
  ArtifactInfo info{};
  info.abiVersion = kArtifactAbiVersion;
  info.target = "cpu";
  info.model = "tiny.mlir";
  info.worldSize = worldSize;
  info.expertParallelSize = 1;
  info.tensorParallelSize = 1;
  info.pipelineParallelSize = stages;
  info.pipelineStage = stage;
  info.numStates = count;
  info.states = states;
  return info;
}

/// Element i of the whole tensor `name`, distinct across tensors.
float valueOf(const std::string &name, int64_t i) {
  return float(name.size()) * 100.0f + float(i) + 0.25f;
}

std::vector<float> wholeOf(const std::string &name, int64_t numel) {
  std::vector<float> values(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i)
    values[size_t(i)] = valueOf(name, i);
  return values;
}

class DscRunPipelineCheckpoint : public testing::Test {
protected:
  DscRunPipelineCheckpoint()
      : stage0_{whole("wte", kWteShape), shard("h.0.w")},
        stage1_{shard("h.1.w"), whole("wte", kWteShape)},
        info0_(infoWith(stage0_, 2, 4, 2, 0)),
        info1_(infoWith(stage1_, 2, 4, 2, 1)), stages_{&info0_, &info1_},
        root_(dir_.file("ck")) {}

  /// Rank `rank`'s buffers of its stage's states, as training holds them.
  std::vector<std::vector<float>> buffersOf(int rank) const {
    const ArtifactInfo &info = *stages_[size_t(rank / 2)];
    std::vector<std::vector<float>> buffers;
    for (int32_t i = 0; i < info.numStates; ++i) {
      const StateDesc &state = info.states[i];
      std::vector<float> held(size_t(numElements(state.tensor)));
      StateSlice slice = stateSlice(state, rank % 2, 1, 1);
      for (int64_t k = 0; k < slice.total(); ++k)
        held[size_t(k)] = valueOf(state.tensor.name, slice.whole(k));
      buffers.push_back(std::move(held));
    }
    return buffers;
  }

  /// Every rank's shard of the save after step 2, in dsc-run's order.
  std::vector<std::string> writeShards() {
    beginCheckpoint(root_, job_.step);
    std::vector<std::string> reports;
    for (int r = 0; r < 4; ++r) {
      std::vector<std::vector<float>> buffers = buffersOf(r);
      std::vector<void *> states;
      for (std::vector<float> &buffer : buffers)
        states.push_back(buffer.data());
      reports.push_back(writeCheckpointShard(root_, job_, stages_, states, r));
    }
    return reports;
  }

  std::string save() {
    return commitCheckpoint(root_, job_, stages_, writeShards());
  }

  StateDesc stage0_[2], stage1_[2];
  ArtifactInfo info0_, info1_;
  PipelineStageInfos stages_;
  ScratchDir dir_;
  std::string root_;
  const CheckpointJob job_{2, 4, "tiny.mlir", "cpu", 4, 4, 7, 2};
};

TEST_F(DscRunPipelineCheckpoint, TheFirstStageThatHoldsATiedWeightWritesIt) {
  // Stage 0 (ranks 0, 1): wte by rank 0 (0 % 2), each its piece of h.0.w.
  EXPECT_TRUE(checkpointWrites(stages_, 0, 0, 4));
  EXPECT_FALSE(checkpointWrites(stages_, 0, 1, 4));
  EXPECT_TRUE(checkpointWrites(stages_, 1, 0, 4));
  EXPECT_TRUE(checkpointWrites(stages_, 1, 1, 4));
  // Stage 1 (ranks 2, 3): each its piece of h.1.w; wte, which stage 0
  // holds too, never, though rank 3 is its writer within the stage.
  EXPECT_TRUE(checkpointWrites(stages_, 0, 2, 4));
  EXPECT_TRUE(checkpointWrites(stages_, 0, 3, 4));
  EXPECT_TRUE(checkpointWritesInStage(info1_, 1, 3, 4));
  EXPECT_FALSE(checkpointWrites(stages_, 1, 2, 4));
  EXPECT_FALSE(checkpointWrites(stages_, 1, 3, 4));
}

TEST_F(DscRunPipelineCheckpoint, MetadataRecordsTheStagesAndEachNameOnce) {
  std::string directory = save();
  std::ifstream in(directory + "/metadata.json");
  json meta = json::parse(in);
  EXPECT_EQ(meta["pipeline_parallel_size"], 2);
  EXPECT_EQ(meta["shards"][1]["stage"], 0);
  EXPECT_EQ(meta["shards"][2]["stage"], 1);
  ASSERT_EQ(meta["tensors"].size(), 3u);
  EXPECT_EQ(meta["tensors"]["wte"]["shard"], "shard-0-of-4.safetensors");
  // Each stage's pieces, offsets within the tensor as 2 ranks place them.
  const json &pieces = meta["tensors"]["h.1.w"]["pieces"];
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0]["shard"], "shard-2-of-4.safetensors");
  EXPECT_EQ(pieces[0]["offset"], 0);
  EXPECT_EQ(pieces[1]["shard"], "shard-3-of-4.safetensors");
  EXPECT_EQ(pieces[1]["offset"], 6);
  EXPECT_EQ(meta["tensors"]["h.1.w"]["partition"]["group"], "data");
  EXPECT_EQ(meta["tensors"]["h.1.w"]["partition"]["group_size"], 2);
  EXPECT_EQ(Checkpoint::open(root_).job().pipelineParallelSize, 2);
}

TEST_F(DscRunPipelineCheckpoint, LoadsWholeAtOneStage) {
  save();
  StateDesc all[] = {whole("wte", kWteShape), whole("h.0.w", kBlockShape),
                     whole("h.1.w", kBlockShape)};
  ArtifactInfo single = infoWith(all, 3, 1, 1, 0);
  MemoryPool pool("state");
  std::vector<void *> loaded =
      Checkpoint::open(root_).loadStates(single, pool, 0);
  for (int32_t i = 0; i < 3; ++i) {
    int64_t numel = numElements(all[i].tensor);
    const float *data = static_cast<const float *>(loaded[size_t(i)]);
    EXPECT_EQ(std::vector<float>(data, data + numel),
              wholeOf(all[i].tensor.name, numel))
        << all[i].tensor.name;
  }
}

TEST_F(DscRunPipelineCheckpoint, LoadsEachStagesPieceAtItsPlaceInTheStage) {
  save();
  Checkpoint checkpoint = Checkpoint::open(root_);
  // Rank 3 of 4 is stage 1's data rank 1: the second half of h.1.w.
  MemoryPool pool("state");
  std::vector<void *> loaded = checkpoint.loadStates(info1_, pool, 3);
  const float *piece = static_cast<const float *>(loaded[0]);
  std::vector<float> expected = wholeOf("h.1.w", 12);
  EXPECT_EQ(std::vector<float>(piece, piece + 6),
            std::vector<float>(expected.begin() + 6, expected.end()));
  const float *wte = static_cast<const float *>(loaded[1]);
  EXPECT_EQ(std::vector<float>(wte, wte + 8), wholeOf("wte", 8));

  // Two stages of one rank each: stage 1 holds h.1.w whole.
  StateDesc later[] = {whole("h.1.w", kBlockShape), whole("wte", kWteShape)};
  ArtifactInfo narrow = infoWith(later, 2, 2, 2, 1);
  loaded = checkpoint.loadStates(narrow, pool, 1);
  const float *block = static_cast<const float *>(loaded[0]);
  EXPECT_EQ(std::vector<float>(block, block + 12), expected);
}

TEST_F(DscRunPipelineCheckpoint, RefusesACommitThatLacksAStagesState) {
  std::vector<std::string> reports = writeShards();
  // Stage 1's tables with a state that its ranks did not write.
  StateDesc grown[] = {shard("h.1.w"), whole("wte", kWteShape),
                       whole("h.1.extra", kBlockShape)};
  ArtifactInfo info1 = infoWith(grown, 3, 4, 2, 1);
  try {
    commitCheckpoint(root_, job_, {&info0_, &info1}, reports);
    ADD_FAILURE() << "committed a checkpoint without h.1.extra";
  } catch (const Error &error) {
    EXPECT_THAT(error.what(), HasSubstr("no rank wrote state 'h.1.extra' of "
                                        "pipeline stage 1"));
  }
  EXPECT_FALSE(std::filesystem::exists(root_ + "/latest"));
}

TEST_F(DscRunPipelineCheckpoint, RefusesAnotherModelsCheckpoint) {
  save();
  StateDesc other[] = {whole("other.w", kBlockShape)};
  ArtifactInfo info = infoWith(other, 1, 1, 1, 0);
  MemoryPool pool("state");
  try {
    Checkpoint::open(root_).loadStates(info, pool, 0);
    ADD_FAILURE() << "loaded another model's checkpoint";
  } catch (const Error &error) {
    EXPECT_THAT(error.what(),
                HasSubstr("step_2: holds none of the artifact's "
                          "parameters and buffers (such as 'other.w'): it "
                          "is another model's checkpoint"));
  }
}

TEST_F(DscRunPipelineCheckpoint, ResumesAccumulatorsAbsentFromTheSaverAtZero) {
  save();
  // Gradient accumulation's sums and count, which a pipeline has not.
  constexpr int64_t kScalar[] = {1};
  StateDesc withAccumulation[] = {whole("wte", kWteShape),
                                  whole("wte.grad_acc", kWteShape),
                                  whole("optimizer.micro_step", kScalar),
                                  whole("wte.exp_avg", kWteShape)};
  withAccumulation[1].role = StateRole::Gradient;
  withAccumulation[2].role = StateRole::Optimizer;
  withAccumulation[2].tensor.rank = 1;
  withAccumulation[3].role = StateRole::Optimizer;
  ArtifactInfo info = infoWith(withAccumulation, 3, 1, 1, 0);
  MemoryPool pool("state");
  Checkpoint checkpoint = Checkpoint::open(root_);
  std::vector<void *> loaded = checkpoint.loadStates(info, pool, 0);
  const float *sums = static_cast<const float *>(loaded[1]);
  EXPECT_EQ(std::vector<float>(sums, sums + 8), std::vector<float>(8, 0.0f));
  EXPECT_EQ(*static_cast<const float *>(loaded[2]), 0.0f);
  // An optimizer moment is the optimizer's state: never made up.
  info.numStates = 4;
  try {
    checkpoint.loadStates(info, pool, 0);
    ADD_FAILURE() << "loaded a checkpoint that lacks wte.exp_avg";
  } catch (const Error &error) {
    EXPECT_THAT(error.what(), HasSubstr("no tensor 'wte.exp_avg'"));
  }
}

} // namespace
