//===- CheckpointExportTest.cpp - dsc-ckpt's export, in process -----------===//
//
// Checkpoints saved here with every rank played in this one process (as
// CheckpointTest.cpp does), then exported: the model's tensors whole
// whatever the saver's world size and partitioning, optimizer state left
// out, master copies exported in their parameter's place, 16-bit floats
// widened, and each refusal with its message. test/e2e/ckpt-export-zero-w2.test
// runs the tool on real GPT-2 checkpoints.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/CheckpointExport.h"
#include "dsc/runtime/Error.h"
#include "dsc/runtime/Float16.h"
#include "dsc/runtime/Run.h"
#include "dsc/runtime/SafeTensors.h"

#include "ScratchDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>

using namespace dsc::rt;
using dsc::rt::test::readBytes;
using dsc::rt::test::ScratchDir;
using nlohmann::json;
using testing::ElementsAre;
using testing::HasSubstr;

namespace {

/// A state of a checkpoint to save: its whole value, and whether ZeRO
/// partitions it.
struct State {
  std::string name;
  ElementType type;
  StateRole role;
  std::vector<int64_t> shape;
  std::vector<char> whole;
  bool partitioned = false;
};

int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

State f32(const std::string &name, StateRole role, std::vector<int64_t> shape,
          float first, bool partitioned) {
  State state{name, ElementType::F32, role, shape, {}, partitioned};
  std::vector<float> values;
  for (int64_t i = 0; i < numel(shape); ++i)
    values.push_back(first + 0.25f * float(i));
  state.whole.resize(values.size() * sizeof(float));
  std::memcpy(state.whole.data(), values.data(), state.whole.size());
  return state;
}

std::vector<float> floats(const std::vector<char> &bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

class DscCkptExport : public testing::Test {
protected:
  DscCkptExport() : root_(dir_.file("ck")) {}

  /// Saves `states` as a job of `worldSize` ranks does, every rank played
  /// here: a partitioned state in blocks of ceil(numel / worldSize), the
  /// last rank's tail zero.
  void save(const std::vector<State> &states, int worldSize) {
    std::vector<int64_t> shardElements(states.size());
    std::vector<StateDesc> descs;
    for (size_t i = 0; i < states.size(); ++i) {
      const State &s = states[i];
      shardElements[i] = (numel(s.shape) + worldSize - 1) / worldSize;
      StateDesc desc{{s.name.c_str(), s.type, int32_t(s.shape.size()),
                      s.shape.data()},
                     s.role};
      if (s.partitioned)
        desc = {{s.name.c_str(), s.type, 1, &shardElements[i]}, s.role,
                int32_t(s.shape.size()), s.shape.data()};
      descs.push_back(desc);
    }
    ArtifactInfo info{};
    info.abiVersion = kArtifactAbiVersion;
    info.target = "cpu";
    info.model = "tiny.mlir";
    info.worldSize = worldSize;
    info.expertParallelSize = 1;
    info.numStates = int32_t(descs.size());
    info.states = descs.data();
    CheckpointJob job{5, worldSize, "tiny.mlir", "cpu", 4, 4};
    beginCheckpoint(root_, job.step);
    std::vector<std::string> reports;
    for (int r = 0; r < worldSize; ++r) {
      std::vector<std::vector<char>> blocks(states.size());
      std::vector<void *> buffers;
      for (size_t i = 0; i < states.size(); ++i) {
        const State &s = states[i];
        if (!s.partitioned) {
          buffers.push_back(const_cast<char *>(s.whole.data()));
          continue;
        }
        size_t element = elementSize(s.type);
        StateSlice slice = stateSlice(descs[i], r, 1);
        blocks[i].assign(size_t(shardElements[i]) * element, 0);
        int64_t count =
            std::max<int64_t>(0, std::min(slice.count,
                                          numel(s.shape) - slice.begin));
        std::memcpy(blocks[i].data(), s.whole.data() + slice.begin * element,
                    size_t(count) * element);
        buffers.push_back(blocks[i].data());
      }
      reports.push_back(writeCheckpointShard(root_, job, info, buffers, r));
    }
    commitCheckpoint(root_, job, info, reports);
  }

  /// Exports the checkpoint and returns the file's tensors' bytes by name.
  std::map<std::string, std::vector<char>> exported() {
    std::string out = dir_.file("model.safetensors");
    exportWeights(Checkpoint::open(root_), out);
    SafeTensorsFile file = SafeTensorsFile::open(out);
    std::map<std::string, std::vector<char>> tensors;
    for (const std::string &name : file.names()) {
      std::vector<char> bytes(file.info(name).bytes);
      file.read(name, bytes.data(), bytes.size());
      tensors[name] = std::move(bytes);
    }
    return tensors;
  }

  std::string refusal(const std::string &out = "") {
    try {
      exportWeights(Checkpoint::open(root_),
                    out.empty() ? dir_.file("model.safetensors") : out);
    } catch (const Error &error) {
      return error.what();
    }
    return "";
  }

  std::string metadataPath() const { return root_ + "/step_5/metadata.json"; }

  /// GPT-like states: two parameters (one of 15 elements, which 2 and 4
  /// ranks split unevenly), a buffer, and AdamW-like optimizer state.
  std::vector<State> model(bool partitioned) const {
    return {f32("wte.weight", StateRole::Parameter, {3, 5}, 1.0f, partitioned),
            f32("ln.bias", StateRole::Parameter, {7}, -2.0f, partitioned),
            f32("attn.mask", StateRole::Buffer, {2, 2}, 0.0f, false),
            f32("wte.weight.exp_avg", StateRole::Optimizer, {3, 5}, 9.0f,
                partitioned),
            f32("optimizer.step", StateRole::Optimizer, {}, 5.0f, false)};
  }

  ScratchDir dir_;
  std::string root_;
};

TEST(DscCkptRoles, NamesRoundTrip) {
  for (StateRole role : {StateRole::Parameter, StateRole::Buffer,
                         StateRole::Optimizer, StateRole::Gradient}) {
    StateRole parsed = StateRole::Gradient;
    ASSERT_TRUE(parseStateRole(stateRoleName(role), parsed));
    EXPECT_EQ(parsed, role);
  }
  StateRole parsed;
  EXPECT_FALSE(parseStateRole("weights", parsed));
  EXPECT_STREQ(stateRoleName(StateRole::Parameter), "parameter");
}

TEST_F(DscCkptExport, RecordsEachTensorsRoleInTheMetadata) {
  save(model(true), 2);
  json meta = json::parse(readBytes(metadataPath()));
  EXPECT_EQ(meta["tensors"]["wte.weight"]["role"], "parameter");
  EXPECT_EQ(meta["tensors"]["attn.mask"]["role"], "buffer");
  EXPECT_EQ(meta["tensors"]["wte.weight.exp_avg"]["role"], "optimizer");
  std::vector<Checkpoint::TensorRecord> records =
      Checkpoint::open(root_).tensors();
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records[3].name, "wte.weight"); // sorted by name
  EXPECT_EQ(records[3].role, StateRole::Parameter);
  EXPECT_EQ(records[3].partitionWorldSize, 2);
  EXPECT_EQ(records[3].shardElements, 8);
  EXPECT_EQ(records[3].pieces, 2u);
  EXPECT_EQ(records[0].name, "attn.mask");
  EXPECT_EQ(records[0].partitionWorldSize, 0);
}

TEST_F(DscCkptExport, WritesTheModelsTensorsWholeWhateverTheSaver) {
  std::vector<State> states = model(false);
  for (int worldSize : {1, 2, 3, 4}) {
    for (bool partitioned : {false, true}) {
      SCOPED_TRACE(std::to_string(worldSize) + " rank(s), " +
                   (partitioned ? "partitioned" : "whole"));
      save(model(partitioned), worldSize);
      std::map<std::string, std::vector<char>> tensors = exported();
      ASSERT_EQ(tensors.size(), 3u); // no optimizer state
      EXPECT_EQ(tensors["wte.weight"], states[0].whole);
      EXPECT_EQ(tensors["ln.bias"], states[1].whole);
      EXPECT_EQ(tensors["attn.mask"], states[2].whole);
    }
  }
  SafeTensorsFile file = SafeTensorsFile::open(dir_.file("model.safetensors"));
  EXPECT_THAT(file.info("wte.weight").shape, ElementsAre(3, 5));
  EXPECT_EQ(file.info("wte.weight").dtype, DType::F32);
  EXPECT_EQ(file.metadata().at("format"), "pt");
  EXPECT_EQ(file.metadata().at("step"), "5");
}

TEST_F(DscCkptExport, TheSameWeightsExportTheSameBytes) {
  save(model(false), 1);
  exportWeights(Checkpoint::open(root_), dir_.file("a.safetensors"));
  save(model(true), 4);
  exportWeights(Checkpoint::open(root_), dir_.file("b.safetensors"));
  EXPECT_EQ(readBytes(dir_.file("a.safetensors")),
            readBytes(dir_.file("b.safetensors")));
}

TEST_F(DscCkptExport, ExportsTheMasterCopyInItsParametersPlace) {
  // A 16-bit parameter with an fp32 master copy (partitioned, as ZeRO
  // partitions master weights from stage 1): the master is what is
  // exported, under the parameter's name; the master's own name is not.
  State weight{"w", ElementType::BF16, StateRole::Parameter, {2, 3}, {}};
  for (float value : {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}) {
    uint16_t bits = floatToBf16(value);
    weight.whole.insert(weight.whole.end(), reinterpret_cast<char *>(&bits),
                        reinterpret_cast<char *>(&bits) + 2);
  }
  State master = f32("w.master", StateRole::Optimizer, {2, 3}, 1.001f, true);
  save({weight, master, f32("b", StateRole::Parameter, {2}, 0.5f, false)}, 2);
  std::vector<ExportedTensor> plan = planWeightsExport(Checkpoint::open(root_));
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[1].name, "w");
  EXPECT_EQ(plan[1].source, "w.master");
  EXPECT_EQ(plan[1].written, DType::F32);
  std::map<std::string, std::vector<char>> tensors = exported();
  EXPECT_EQ(tensors.size(), 2u);
  EXPECT_EQ(tensors["w"], master.whole);
}

TEST_F(DscCkptExport, AMasterCopyWithTheParameterRoleIsNotExportedTwice) {
  save({f32("w", StateRole::Parameter, {4}, 0.0f, false),
        f32("w.master", StateRole::Parameter, {4}, 3.0f, true)},
       2);
  std::map<std::string, std::vector<char>> tensors = exported();
  ASSERT_EQ(tensors.size(), 1u);
  EXPECT_EQ(floats(tensors["w"]),
            (std::vector<float>{3.0f, 3.25f, 3.5f, 3.75f}));
}

TEST_F(DscCkptExport, WidensSixteenBitParametersWithoutAMaster) {
  State weight{"w", ElementType::F16, StateRole::Parameter, {3}, {}};
  for (float value : {0.5f, -1.25f, 1024.0f}) {
    uint16_t bits = floatToF16(value);
    weight.whole.insert(weight.whole.end(), reinterpret_cast<char *>(&bits),
                        reinterpret_cast<char *>(&bits) + 2);
  }
  weight.partitioned = true;
  save({weight}, 2);
  EXPECT_EQ(floats(exported()["w"]),
            (std::vector<float>{0.5f, -1.25f, 1024.0f}));
}

TEST_F(DscCkptExport, RefusesAMasterOfAnotherShape) {
  save({f32("w", StateRole::Parameter, {2, 3}, 0.0f, false),
        f32("w.master", StateRole::Optimizer, {6}, 0.0f, false)},
       1);
  EXPECT_THAT(refusal(), HasSubstr(": the master copy 'w.master' is F32 [6], "
                                   "but 'w' is F32 [2, 3]"));
}

TEST_F(DscCkptExport, RefusesACheckpointWithoutRoles) {
  save(model(true), 2);
  json meta = json::parse(readBytes(metadataPath()));
  for (auto &[name, entry] : meta["tensors"].items())
    entry.erase("role");
  std::ofstream(metadataPath(), std::ios::trunc) << meta.dump();
  EXPECT_THAT(refusal(),
              HasSubstr("checkpoint " + root_ +
                        "/step_5: metadata.json records no role for tensor "
                        "'attn.mask'"));
  // Loading into an artifact needs no roles: older checkpoints resume.
  EXPECT_NO_THROW(Checkpoint::open(root_));
}

TEST_F(DscCkptExport, RefusesAnUnknownRole) {
  save(model(false), 1);
  json meta = json::parse(readBytes(metadataPath()));
  meta["tensors"]["ln.bias"]["role"] = "weights";
  std::ofstream(metadataPath(), std::ios::trunc) << meta.dump();
  try {
    Checkpoint::open(root_);
    ADD_FAILURE() << "opened a checkpoint with an unknown role";
  } catch (const Error &error) {
    EXPECT_THAT(error.what(), HasSubstr("tensor 'ln.bias': unknown role "
                                        "'weights'"));
  }
}

TEST_F(DscCkptExport, RefusesACheckpointWithNoParameter) {
  save({f32("optimizer.step", StateRole::Optimizer, {}, 1.0f, false)}, 1);
  EXPECT_THAT(refusal(), HasSubstr("/step_5: holds no parameter to export"));
}

TEST_F(DscCkptExport, RefusesAnUnwritableOutputAndKeepsTheOldFile) {
  save(model(true), 2);
  std::string out = dir_.write("model.safetensors", "previous");
  EXPECT_THAT(refusal(dir_.file("missing/model.safetensors")),
              HasSubstr("missing/model.safetensors: cannot write: directory " +
                        dir_.file("missing") + " does not exist"));
  EXPECT_THAT(refusal(out + "/x.safetensors"),
              HasSubstr(out + " is not a directory"));
  EXPECT_THAT(refusal(dir_.path()), HasSubstr("cannot write: it is a directory"));
  // A checkpoint that fails its checksum leaves the previous export alone.
  json meta = json::parse(readBytes(metadataPath()));
  meta["tensors"]["ln.bias"]["pieces"][1]["checksum"] = "0000000000000000";
  std::ofstream(metadataPath(), std::ios::trunc) << meta.dump();
  EXPECT_THAT(refusal(out), HasSubstr("tensor 'ln.bias' in "
                                      "shard-1-of-2.safetensors fails its "
                                      "checksum"));
  EXPECT_EQ(readBytes(out), "previous");
}

TEST_F(DscCkptExport, DescribesTheSaverAndInfersTheStage) {
  save(model(true), 2);
  std::string text = describeCheckpoint(Checkpoint::open(root_));
  EXPECT_THAT(text, HasSubstr("step 5, saved by 2 rank(s), target cpu, model "
                              "tiny.mlir, global batch 4, sequence 4\n"));
  EXPECT_THAT(text, HasSubstr("  parameter: 2 tensor(s), 22 element(s), 2 "
                              "partitioned\n"));
  EXPECT_THAT(text, HasSubstr("zero stage: 3 (parameters partitioned: 2 "
                              "partitioned, 0 whole on every rank under the "
                              "persistence threshold)\n"));
  EXPECT_THAT(text, HasSubstr("  wte.weight  parameter F32 [3, 5]  partitioned "
                              "over 2 by 8, 2 piece(s)\n"));
  // Optimizer state partitioned, parameters whole: stage 1 or 2.
  std::vector<State> states = model(false);
  states[3].partitioned = true;
  save(states, 2);
  EXPECT_THAT(describeCheckpoint(Checkpoint::open(root_)),
              HasSubstr("zero stage: 1 or 2 (optimizer state partitioned, no "
                        "gradient state)\n"));
  save(model(false), 2);
  EXPECT_THAT(describeCheckpoint(Checkpoint::open(root_)),
              HasSubstr("zero stage: 0 (nothing partitioned)\n"));
  // Stage 3 with a parameter under the persistence threshold: it is whole.
  states = model(true);
  states[1].partitioned = false; // ln.bias, 7 elements
  save(states, 2);
  EXPECT_THAT(describeCheckpoint(Checkpoint::open(root_)),
              HasSubstr("zero stage: 3 (parameters partitioned: 1 "
                        "partitioned, 1 whole on every rank under the "
                        "persistence threshold)\n"));
}

} // namespace
