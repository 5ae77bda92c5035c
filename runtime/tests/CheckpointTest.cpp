//===- CheckpointTest.cpp - checkpoints, in process -----------------------===//
//
// The checksum against published vectors, and the save and load of
// Checkpoint.h with every rank of a save played in this one process (the
// pieces are MPI-free): the layout, loading the same bits whatever the
// world size of the saver, replacing a save, `latest` across a save that
// never commits, and each damaged checkpoint refused with its message.
// CheckpointToolTest.cpp runs the same through dsc-run under mpirun.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/Checkpoint.h"
#include "dsc/runtime/ArtifactLibrary.h"
#include "dsc/runtime/CheckpointExport.h"
#include "dsc/runtime/Float16.h"
#include "dsc/runtime/MemoryPool.h"
#include "dsc/runtime/Run.h"
#include "dsc/runtime/SafeTensors.h"

#include "Inputs/TinyModel.h"
#include "ScratchDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

using namespace dsc::rt;
using dsc::rt::test::readBytes;
using dsc::rt::test::ScratchDir;
using dsc::rt::test::TinyModel;
using nlohmann::json;
using testing::HasSubstr;

namespace fs = std::filesystem;

namespace {

//===----------------------------------------------------------------------===//
// Checksum and names
//===----------------------------------------------------------------------===//

uint64_t fnv(const std::string &text) {
  return fnv1a64(text.data(), text.size());
}

TEST(DscRunCheckpointChecksum, MatchesThePublishedFnv1a64Vectors) {
  // From the FNV reference test suite (Fowler, Noll, Vo).
  EXPECT_EQ(fnv(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv("foobar"), 0x85944171f73967e8ull);
  EXPECT_EQ(fnv("chongo was here!\n"), 0x46810940eff5f915ull);
}

TEST(DscRunCheckpointChecksum, ContinuesFromAPreviousHash) {
  EXPECT_EQ(fnv1a64("bar", 3, fnv1a64("foo", 3)), fnv("foobar"));
}

TEST(DscRunCheckpointChecksum, FormatsAsSixteenHexDigits) {
  EXPECT_EQ(formatChecksum(0xaf63dc4c8601ec8cull), "af63dc4c8601ec8c");
  EXPECT_EQ(formatChecksum(1), "0000000000000001");
}

TEST(DscRunCheckpointLayout, NamesAndWriters) {
  EXPECT_EQ(checkpointStepName(12), "step_12");
  EXPECT_EQ(checkpointShardName(1, 4), "shard-1-of-4.safetensors");
  EXPECT_EQ(checkpointWriter(0, 2), 0);
  EXPECT_EQ(checkpointWriter(1, 2), 1);
  EXPECT_EQ(checkpointWriter(2, 2), 0);
  EXPECT_EQ(checkpointWriter(2, 1), 0);
}

TEST(DscRunCheckpointOptions, ParsesSaveAndResume) {
  RunOptions options = parseRunOptions(
      {"step.so", "--data", "d.bin", "--batch", "4", "--seq", "4", "--steps",
       "2", "--save", "ck", "--save-interval=3", "--resume=old"});
  EXPECT_EQ(options.save, "ck");
  EXPECT_EQ(options.saveInterval, 3);
  EXPECT_EQ(options.resume, "old");
  // --weights is not required when the state comes from a checkpoint.
  EXPECT_TRUE(options.weights.empty());
}

//===----------------------------------------------------------------------===//
// Save and load
//===----------------------------------------------------------------------===//

constexpr int64_t kWteShape[] = {16, 8};
constexpr int64_t kHeadShape[] = {1, 8};
constexpr int64_t kBiasShape[] = {16};
constexpr int64_t kWideShape[] = {16, 9};

/// TinyArtifact's states (Inputs/TinyArtifact.cpp), in its order.
const StateDesc kStates[] = {
    {{"wte.weight", ElementType::F32, 2, kWteShape}, StateRole::Parameter},
    {{"head.weight", ElementType::F32, 2, kHeadShape}, StateRole::Parameter},
    {{"bias", ElementType::F32, 1, kBiasShape}, StateRole::Buffer},
};

ArtifactInfo infoWith(const StateDesc *states, int32_t count) {
  ArtifactInfo info{};
  info.abiVersion = kArtifactAbiVersion;
  info.target = "cpu";
  info.model = "tiny.mlir";
  info.worldSize = 1;
  info.expertParallelSize = 1;
  info.numStates = count;
  info.states = states;
  return info;
}

std::string readText(const std::string &path) { return readBytes(path); }

void writeText(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

class DscRunCheckpoint : public testing::Test {
protected:
  DscRunCheckpoint()
      : info_(infoWith(kStates, 3)), states_{model_.wte.data(),
                                             model_.head.data(),
                                             model_.bias.data()},
        root_(dir_.file("ck")) {}

  CheckpointJob job(int64_t step, int worldSize) const {
    return {step, worldSize, "tiny.mlir", "cpu", 4, 4, /*seed=*/77};
  }

  /// A save of `worldSize` ranks, every rank played here, in dsc-run's order.
  std::string save(int64_t step, int worldSize) {
    beginCheckpoint(root_, step);
    std::vector<std::string> reports;
    for (int r = 0; r < worldSize; ++r)
      reports.push_back(
          writeCheckpointShard(root_, job(step, worldSize), info_, states_, r));
    return commitCheckpoint(root_, job(step, worldSize), info_, reports);
  }

  /// Loads `dir` for `info` and expects the model's bytes in every state.
  void expectLoadsTheModel(const std::string &dir) {
    Checkpoint checkpoint = Checkpoint::open(dir);
    MemoryPool pool("state");
    std::vector<void *> loaded = checkpoint.loadStates(info_, pool);
    ASSERT_EQ(loaded.size(), 3u);
    for (size_t i = 0; i < 3; ++i)
      EXPECT_EQ(
          std::memcmp(loaded[i], states_[i], tensorBytes(kStates[i].tensor)), 0)
          << kStates[i].tensor.name;
  }

  /// The Error message of opening `dir` and loading `info` from it.
  std::string refusal(const std::string &dir,
                      const ArtifactInfo *info = nullptr) {
    try {
      Checkpoint checkpoint = Checkpoint::open(dir);
      MemoryPool pool("state");
      checkpoint.loadStates(info ? *info : info_, pool);
    } catch (const Error &error) {
      return error.what();
    }
    return "";
  }

  std::string step2(const std::string &name = "") const {
    return root_ + "/step_2" + (name.empty() ? "" : "/" + name);
  }

  json metadata() const {
    return json::parse(readText(step2("metadata.json")));
  }
  void setMetadata(const json &value) const {
    writeText(step2("metadata.json"), value.dump(2));
  }

  ScratchDir dir_;
  TinyModel model_;
  ArtifactInfo info_;
  std::vector<void *> states_;
  std::string root_;
};

TEST_F(DscRunCheckpoint, WritesEveryStateOnceAcrossTheShards) {
  EXPECT_EQ(save(2, 2), root_ + "/step_2");
  EXPECT_EQ(readText(root_ + "/latest"), "step_2\n");
  EXPECT_FALSE(fs::exists(root_ + "/step_2.saving"));
  std::vector<std::string> files;
  for (const auto &entry : fs::directory_iterator(step2()))
    files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"metadata.json",
                                             "shard-0-of-2.safetensors",
                                             "shard-1-of-2.safetensors"}));

  // State i goes to rank i % 2, whole, under its own name.
  SafeTensorsFile shard0 =
      SafeTensorsFile::open(step2("shard-0-of-2.safetensors"));
  SafeTensorsFile shard1 =
      SafeTensorsFile::open(step2("shard-1-of-2.safetensors"));
  EXPECT_EQ(shard0.names(), (std::vector<std::string>{"bias", "wte.weight"}));
  EXPECT_EQ(shard1.names(), (std::vector<std::string>{"head.weight"}));
  EXPECT_EQ(shard1.metadata().at("rank"), "1");
  EXPECT_EQ(shard1.metadata().at("step"), "2");

  json meta = metadata();
  EXPECT_EQ(meta["format"], "dsc-checkpoint");
  EXPECT_EQ(meta["version"], 1);
  EXPECT_EQ(meta["step"], 2);
  EXPECT_EQ(meta["world_size"], 2);
  EXPECT_EQ(meta["model"], "tiny.mlir");
  EXPECT_EQ(meta["target"], "cpu");
  EXPECT_EQ(meta["global_batch"], 4);
  EXPECT_EQ(meta["seq"], 4);
  EXPECT_EQ(meta["seed"], 77);
  EXPECT_EQ(meta["checksum"], "fnv1a64");
  ASSERT_EQ(meta["shards"].size(), 2u);
  EXPECT_EQ(meta["shards"][1]["file"], "shard-1-of-2.safetensors");
  EXPECT_EQ(meta["shards"][1]["bytes"],
            fs::file_size(step2("shard-1-of-2.safetensors")));
  const json &head = meta["tensors"]["head.weight"];
  EXPECT_EQ(head["dtype"], "F32");
  EXPECT_EQ(head["shape"], json({1, 8}));
  EXPECT_EQ(head["shard"], "shard-1-of-2.safetensors");
  EXPECT_EQ(head["bytes"], 32);
  EXPECT_EQ(head["checksum"], formatChecksum(fnv1a64(model_.head.data(), 32)));
}

TEST_F(DscRunCheckpoint, LoadsTheSameBitsWhateverTheSaversWorldSize) {
  // Four ranks for three states: rank 3 writes a shard with no tensor.
  for (int worldSize : {1, 2, 3, 4}) {
    SCOPED_TRACE("saved by " + std::to_string(worldSize) + " rank(s)");
    std::string directory = save(2, worldSize);
    expectLoadsTheModel(root_);     // through latest
    expectLoadsTheModel(directory); // the step directory itself
    EXPECT_EQ(Checkpoint::open(root_).job().worldSize, worldSize);
    EXPECT_EQ(Checkpoint::open(root_).job().seed, 77);
  }
}

TEST_F(DscRunCheckpoint, ReportsTheJobThatSavedIt) {
  save(7, 2);
  Checkpoint checkpoint = Checkpoint::open(root_ + "/");
  EXPECT_EQ(checkpoint.directory(), root_ + "/step_7");
  EXPECT_EQ(checkpoint.job().step, 7);
  EXPECT_EQ(checkpoint.job().model, "tiny.mlir");
  checkpoint.checkJob(4, 4);
  try {
    checkpoint.checkJob(8, 4);
    ADD_FAILURE() << "accepted another global batch";
  } catch (const Error &error) {
    EXPECT_THAT(error.what(),
                HasSubstr("was saved by a job of global batch 4 and sequence "
                          "length 4, not --batch 8 --seq 4"));
  }
}

TEST_F(DscRunCheckpoint, ASecondSaveOfAStepReplacesTheFirst) {
  save(2, 3);
  // The new save goes beside the old one, `latest` moves to it, and only
  // then is the old one removed.
  EXPECT_EQ(save(2, 1), root_ + "/step_2.1");
  EXPECT_EQ(readText(root_ + "/latest"), "step_2.1\n");
  EXPECT_FALSE(fs::exists(step2()));
  EXPECT_TRUE(fs::exists(root_ + "/step_2.1/shard-0-of-1.safetensors"));
  expectLoadsTheModel(root_);
  // A third save takes the free name again.
  EXPECT_EQ(save(2, 2), step2());
  EXPECT_EQ(readText(root_ + "/latest"), "step_2\n");
  EXPECT_FALSE(fs::exists(root_ + "/step_2.1"));
  expectLoadsTheModel(root_);
}

TEST_F(DscRunCheckpoint, StepDirectoryNames) {
  EXPECT_EQ(checkpointStepOf("step_12"), 12);
  EXPECT_EQ(checkpointStepOf("step_12.3"), 12);
  for (const char *other : {"step_", "step_1.", "step_1.saving", "step_x",
                            "step_1.2.3", "latest", "step_-1", "xstep_1"})
    EXPECT_EQ(checkpointStepOf(other), -1) << other;
}

TEST_F(DscRunCheckpoint, LatestMovesOnlyWhenASaveCommits) {
  save(2, 2);
  // Step 4's shards are written, but the save never commits (a rank
  // failed, or the job died): latest still names step 2.
  beginCheckpoint(root_, 4);
  writeCheckpointShard(root_, job(4, 2), info_, states_, 0);
  EXPECT_EQ(readText(root_ + "/latest"), "step_2\n");
  EXPECT_FALSE(fs::exists(root_ + "/step_4"));
  EXPECT_EQ(Checkpoint::open(root_).job().step, 2);
  abandonCheckpoint(root_, 4);
  EXPECT_FALSE(fs::exists(root_ + "/step_4.saving"));
  // The next save of the step starts from a clean staging directory.
  save(4, 2);
  EXPECT_EQ(readText(root_ + "/latest"), "step_4\n");
  expectLoadsTheModel(root_);
}

TEST_F(DscRunCheckpoint, ARankThatDoesNotSeeTheStagingDirectoryFails) {
  // Rank 0 created the staging directory in a directory this rank does not
  // share (node-local disks): the shard cannot be written beside the others.
  try {
    writeCheckpointShard(root_, job(2, 2), info_, states_, 1);
    ADD_FAILURE() << "wrote a shard with no staging directory";
  } catch (const Error &error) {
    EXPECT_THAT(error.what(),
                HasSubstr(root_ + "/step_2.saving: this rank does not see the "
                                  "directory rank 0 created for the save; "
                                  "--save must name a directory that every "
                                  "rank shares"));
  }
}

TEST_F(DscRunCheckpoint, RefusesAnUncreatableRoot) {
  writeText(dir_.file("file"), "x");
  try {
    createCheckpointRoot(dir_.file("file") + "/ck");
    ADD_FAILURE() << "created a directory under a file";
  } catch (const Error &error) {
    EXPECT_THAT(error.what(), HasSubstr(dir_.file("file") +
                                        "/ck: cannot "
                                        "create the checkpoint directory: "));
  }
}

//===----------------------------------------------------------------------===//
// Damaged checkpoints
//===----------------------------------------------------------------------===//

TEST_F(DscRunCheckpoint, RefusesATruncatedShard) {
  save(2, 2);
  std::string shard = step2("shard-1-of-2.safetensors");
  uintmax_t size = fs::file_size(shard);
  fs::resize_file(shard, size - 1);
  EXPECT_THAT(refusal(root_),
              HasSubstr("checkpoint " + step2() +
                        ": shard shard-1-of-2.safetensors is " +
                        std::to_string(size - 1) +
                        " bytes, but metadata.json says " +
                        std::to_string(size) + " (truncated or overwritten)"));
}

TEST_F(DscRunCheckpoint, RefusesAFlippedByte) {
  save(2, 2);
  // The last byte of shard 0 is wte.weight's (tensors are stored sorted by
  // name: bias, then wte.weight).
  std::string shard = step2("shard-0-of-2.safetensors");
  std::string bytes = readText(shard);
  bytes.back() = static_cast<char>(bytes.back() ^ 0x01);
  writeText(shard, bytes);
  EXPECT_THAT(refusal(root_),
              HasSubstr("checkpoint " + step2() +
                        ": tensor 'wte.weight' in shard-0-of-2.safetensors "
                        "fails its checksum (fnv1a64 "));
  EXPECT_THAT(refusal(root_), HasSubstr("): the shard is corrupt"));
}

TEST_F(DscRunCheckpoint, RefusesAMissingShard) {
  save(2, 2);
  fs::remove(step2("shard-1-of-2.safetensors"));
  EXPECT_EQ(refusal(root_), "checkpoint " + step2() +
                                ": shard shard-1-of-2.safetensors is missing");
}

TEST_F(DscRunCheckpoint, RefusesAMissingMetadataFile) {
  save(2, 2);
  fs::remove(step2("metadata.json"));
  std::string expected = "checkpoint " + step2() +
                         ": no metadata.json, so the save did not complete "
                         "(or the file was removed)";
  EXPECT_EQ(refusal(root_), expected);
  EXPECT_EQ(refusal(step2()), expected);
}

TEST_F(DscRunCheckpoint, RefusesMetadataThatDisagreesWithTheShard) {
  save(2, 2);
  json meta = metadata();
  meta["tensors"]["wte.weight"]["shape"] = {16, 9};
  setMetadata(meta);
  EXPECT_EQ(refusal(root_),
            "checkpoint " + step2() +
                ": shard shard-0-of-2.safetensors holds tensor 'wte.weight' "
                "as F32 [16, 8], but metadata.json says F32 [16, 9] of 512 "
                "bytes");
  meta["tensors"]["wte.weight"]["shape"] = {16, 8};
  meta["tensors"]["wte.weight"]["shard"] = "shard-1-of-2.safetensors";
  setMetadata(meta);
  EXPECT_EQ(refusal(root_),
            "checkpoint " + step2() +
                ": shard shard-0-of-2.safetensors holds tensor 'wte.weight', "
                "which metadata.json does not place there (the metadata lost "
                "it, or the shard is another save's)");
}

TEST_F(DscRunCheckpoint, RefusesACheckpointThatLacksAState) {
  save(2, 2);
  const StateDesc more[] = {
      kStates[0], kStates[1], kStates[2],
      {{"extra", ElementType::F32, 1, kBiasShape}, StateRole::Buffer}};
  ArtifactInfo moreInfo = infoWith(more, 4);
  EXPECT_EQ(refusal(root_, &moreInfo),
            "checkpoint " + step2() +
                ": no tensor 'extra'; the artifact needs it as f32 [16]");
}

TEST_F(DscRunCheckpoint, RefusesMetadataThatLostATensor) {
  save(2, 2);
  json meta = metadata();
  meta["tensors"].erase("bias");
  setMetadata(meta);
  EXPECT_EQ(refusal(root_),
            "checkpoint " + step2() +
                ": shard shard-0-of-2.safetensors holds tensor 'bias', which "
                "metadata.json does not place there (the metadata lost it, "
                "or the shard is another save's)");
}

TEST_F(DscRunCheckpoint, RefusesAShardTheMetadataDoesNotList) {
  save(2, 2);
  fs::copy_file(step2("shard-1-of-2.safetensors"),
                step2("shard-2-of-3.safetensors"));
  EXPECT_EQ(refusal(root_), "checkpoint " + step2() +
                                ": shard shard-2-of-3.safetensors is not "
                                "listed in metadata.json");
}

TEST_F(DscRunCheckpoint, RefusesATensorOfAnotherRoleThanTheArtifacts) {
  save(2, 2);
  json meta = metadata();
  meta["tensors"]["head.weight"]["role"] = "optimizer";
  setMetadata(meta);
  EXPECT_EQ(refusal(root_),
            "checkpoint " + step2() +
                ": tensor 'head.weight' is recorded as optimizer state, but "
                "the artifact has it as parameter state");
}

// Loading refuses a NaN behind a valid checksum too
// (test/bad-input/data-checkpoint-damage.test); a save never writes one.
TEST_F(DscRunCheckpoint, NeverSavesNonFiniteState) {
  save(1, 2);
  model_.head[3] = std::numeric_limits<float>::quiet_NaN();
  beginCheckpoint(root_, 2);
  try {
    writeCheckpointShard(root_, job(2, 2), info_, states_, 1);
    ADD_FAILURE() << "saved a NaN";
  } catch (const Error &error) {
    EXPECT_EQ(std::string(error.what()),
              "the state after step 2: tensor 'head.weight' holds nan at "
              "element 3 (of 8); weights must be finite");
  }
  abandonCheckpoint(root_, 2);
  EXPECT_EQ(readText(root_ + "/latest"), "step_1\n");
}

TEST_F(DscRunCheckpoint, RefusesAnotherDtypeOrShapeThanTheArtifacts) {
  save(2, 2);
  const StateDesc wide[] = {
      {{"wte.weight", ElementType::F32, 2, kWideShape}, StateRole::Parameter}};
  ArtifactInfo wideInfo = infoWith(wide, 1);
  EXPECT_EQ(refusal(root_, &wideInfo),
            "checkpoint " + step2() +
                ": tensor 'wte.weight' is F32 [16, 8], but the artifact "
                "expects F32 [16, 9]");
  const StateDesc f64[] = {
      {{"bias", ElementType::F64, 1, kBiasShape}, StateRole::Buffer}};
  ArtifactInfo f64Info = infoWith(f64, 1);
  EXPECT_EQ(refusal(root_, &f64Info),
            "checkpoint " + step2() +
                ": tensor 'bias' is F32 [16], but the artifact expects F64 "
                "[16]");
}

TEST_F(DscRunCheckpoint, RefusesMalformedMetadata) {
  save(2, 2);
  std::string path = step2("metadata.json");
  json good = metadata();
  struct Case {
    std::string text;
    std::string message;
  };
  json version = good, noStep = good, badShard = good, badChecksum = good,
       fewShards = good;
  version["version"] = 2;
  noStep.erase("step");
  badShard["shards"][0]["file"] = "../w.safetensors";
  badChecksum["tensors"]["bias"]["checksum"] = "xyz";
  fewShards["shards"].erase(1);
  const Case cases[] = {
      {"{\"format\": \"dsc-checkpoint\"", path + ": not valid JSON: "},
      {"[1, 2]", path + ": not a dsc checkpoint's metadata"},
      {version.dump(), path + ": checkpoint format version 2, but this "
                              "dsc-run reads version 1"},
      {noStep.dump(), path + ": field \"step\" is missing or has the wrong "
                             "type"},
      {badShard.dump(), path + ": shard 0 is named '../w.safetensors', "
                               "expected shard-0-of-2.safetensors"},
      {badChecksum.dump(), path + ": tensor 'bias': checksum 'xyz' is not 16 "
                                  "hex digits"},
      {fewShards.dump(), path + ": \"shards\" does not list one shard per "
                                "rank of the 2 that saved it"},
  };
  for (const Case &c : cases) {
    writeText(path, c.text);
    EXPECT_THAT(refusal(root_), HasSubstr(c.message)) << c.text;
  }
}

TEST_F(DscRunCheckpoint, RefusesWhatIsNoCheckpoint) {
  EXPECT_EQ(refusal(dir_.file("nothing")),
            dir_.file("nothing") + ": no checkpoint here: no such directory");
  fs::create_directory(root_);
  EXPECT_EQ(refusal(root_), root_ + ": no checkpoint here: no 'latest' file, "
                                    "and it is no step_<N> directory");
  writeText(root_ + "/latest", "../elsewhere\n");
  EXPECT_EQ(refusal(root_), root_ + "/latest: names no step directory "
                                    "(step_<N>[.<V>]): '../elsewhere'");
  writeText(root_ + "/latest", "step_9\n");
  EXPECT_EQ(refusal(root_),
            root_ + "/latest: names step_9, which does not exist");
}

TEST_F(DscRunCheckpoint, RefusesAStepDirectoryOfAnotherStep) {
  save(2, 1);
  fs::rename(step2(), root_ + "/step_3");
  EXPECT_EQ(refusal(root_ + "/step_3"),
            "checkpoint " + root_ +
                "/step_3: metadata.json is for step 2, not the directory's "
                "step 3");
}

//===----------------------------------------------------------------------===//
// Partitioned (ZeRO) states
//===----------------------------------------------------------------------===//

constexpr int64_t kWholeShape[] = {3, 5}; // 15 elements
constexpr int64_t kShardOf2[] = {8};      // ceil(15 / 2)
constexpr int64_t kShardOf4[] = {4};      // ceil(15 / 4)

/// One replicated parameter and a moment of 15 elements partitioned over
/// `shard` elements per rank (`shard` null: not partitioned); `role` makes
/// "m" a partitioned parameter instead (ZeRO stage 3).
std::vector<StateDesc> partitionedStates(const int64_t *shard,
                                         StateRole role = StateRole::Optimizer) {
  StateDesc moment{{"m", ElementType::F32, 2, kWholeShape}, role};
  if (shard)
    moment = {{"m", ElementType::F32, 1, shard}, role, 2, kWholeShape};
  return {{{"head.weight", ElementType::F32, 2, kHeadShape}, StateRole::Parameter},
          moment};
}

class DscRunPartitionedCheckpoint : public testing::Test {
protected:
  DscRunPartitionedCheckpoint() : root_(dir_.file("ck")) {
    for (int i = 0; i < 15; ++i)
      whole_.push_back(0.5f + float(i));
    head_.assign(8, 2.0f);
  }

  /// Rank `rank`'s storage of the moment in shards of `shard`: its block of
  /// the whole, zero past the end.
  std::vector<float> block(int rank, int64_t shard) const {
    std::vector<float> out(size_t(shard), 0.0f);
    for (int64_t i = 0; i < shard && rank * shard + i < 15; ++i)
      out[size_t(i)] = whole_[size_t(rank * shard + i)];
    return out;
  }

  /// A save by 2 ranks, each holding its block of the moment.
  void saveByTwo(StateRole role = StateRole::Optimizer) {
    std::vector<StateDesc> states = partitionedStates(kShardOf2, role);
    ArtifactInfo info = infoWith(states.data(), 2);
    CheckpointJob job{3, 2, "tiny.mlir", "cpu", 4, 4};
    beginCheckpoint(root_, 3);
    std::vector<std::string> reports;
    for (int r = 0; r < 2; ++r) {
      std::vector<float> mine = block(r, 8);
      reports.push_back(writeCheckpointShard(
          root_, job, info, {head_.data(), mine.data()}, r));
    }
    commitCheckpoint(root_, job, info, reports);
  }

  /// The moment as rank `rank` of a job partitioning it in `shard`s (null:
  /// whole) loads it.
  std::vector<float> load(const int64_t *shard, int rank) {
    std::vector<StateDesc> states = partitionedStates(shard);
    ArtifactInfo info = infoWith(states.data(), 2);
    MemoryPool pool("state");
    std::vector<void *> loaded =
        Checkpoint::open(root_).loadStates(info, pool, rank);
    const float *m = static_cast<const float *>(loaded[1]);
    EXPECT_EQ(std::memcmp(loaded[0], head_.data(), 8 * sizeof(float)), 0);
    return std::vector<float>(m, m + (shard ? shard[0] : 15));
  }

  ScratchDir dir_;
  std::string root_;
  std::vector<float> whole_, head_;
};

TEST_F(DscRunPartitionedCheckpoint, EveryRankWritesItsPieceWithoutPadding) {
  saveByTwo();
  json meta = json::parse(readText(root_ + "/step_3/metadata.json"));
  const json &m = meta["tensors"]["m"];
  EXPECT_EQ(m["shape"], json({3, 5}));
  EXPECT_EQ(m["partition"], json({{"world_size", 2}, {"shard_elements", 8}}));
  ASSERT_EQ(m["pieces"].size(), 2u);
  EXPECT_EQ(m["pieces"][0]["shard"], "shard-0-of-2.safetensors");
  EXPECT_EQ(m["pieces"][0]["offset"], 0);
  EXPECT_EQ(m["pieces"][0]["shape"], json({8}));
  EXPECT_EQ(m["pieces"][1]["shard"], "shard-1-of-2.safetensors");
  EXPECT_EQ(m["pieces"][1]["offset"], 8);
  EXPECT_EQ(m["pieces"][1]["shape"], json({7})); // the padding is stripped
  // A replicated state is written once, by its checkpointWriter.
  EXPECT_EQ(meta["tensors"]["head.weight"]["shard"], "shard-0-of-2.safetensors");
}

TEST_F(DscRunPartitionedCheckpoint, ResumesTheSamePartitionsBitForBit) {
  saveByTwo();
  EXPECT_EQ(load(kShardOf2, 0), block(0, 8));
  EXPECT_EQ(load(kShardOf2, 1), block(1, 8)); // zero padding restored
}

TEST_F(DscRunPartitionedCheckpoint, ReshardsForAnotherWorldSizeOrWhole) {
  saveByTwo();
  for (int r = 0; r < 4; ++r) // pieces cut across the saver's ranks
    EXPECT_EQ(load(kShardOf4, r), block(r, 4)) << "rank " << r;
  EXPECT_EQ(load(nullptr, 0), whole_);
}

TEST_F(DscRunPartitionedCheckpoint, LoadsEachRanksSliceOfAWholeWeight) {
  std::string path = dir_.file("w.safetensors");
  writeSafeTensors(path, {{"head.weight", DType::F32, {1, 8}, head_.data()},
                          {"m", DType::F32, {3, 5}, whole_.data()}});
  std::vector<StateDesc> states = partitionedStates(kShardOf4);
  ArtifactInfo info = infoWith(states.data(), 2);
  for (int r = 0; r < 4; ++r) {
    MemoryPool pool("state");
    std::vector<void *> loaded =
        loadStates(info, SafeTensorsFile::open(path), pool, r);
    const float *m = static_cast<const float *>(loaded[1]);
    EXPECT_EQ(std::vector<float>(m, m + 4), block(r, 4)) << "rank " << r;
  }
}

/// Mixed precision on 4 ranks from an fp32 tensor "m": the 16-bit parameter
/// "m" (bf16) and its master "m.master" (f32), both partitioned.
std::vector<StateDesc> mixedPrecisionStates() {
  return {{{"head.weight", ElementType::F32, 2, kHeadShape}, StateRole::Parameter},
          {{"m", ElementType::BF16, 1, kShardOf4}, StateRole::Parameter, 2,
           kWholeShape},
          {{"m.master", ElementType::F32, 1, kShardOf4}, StateRole::Master, 2,
           kWholeShape}};
}

/// Rank `r`'s slices of "m" and "m.master" as `states[1]`, `states[2]`
/// hold them: the master is the fp32 block, the parameter its rounding.
void expectMixedPrecisionSlices(const std::vector<void *> &states,
                                const std::vector<float> &master, int r) {
  const float *m32 = static_cast<const float *>(states[2]);
  const uint16_t *m16 = static_cast<const uint16_t *>(states[1]);
  EXPECT_EQ(std::vector<float>(m32, m32 + 4), master) << "rank " << r;
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(m16[i], floatToBf16(master[i])) << "rank " << r << " " << i;
}

TEST_F(DscRunPartitionedCheckpoint, ResumesAnFp32CheckpointInMixedPrecision) {
  for (int i = 0; i < 15; ++i) // values bf16 must round
    whole_[size_t(i)] = 1.0f + float(i) / 3.0f;
  saveByTwo(StateRole::Parameter);
  std::vector<StateDesc> states = mixedPrecisionStates();
  ArtifactInfo info = infoWith(states.data(), 3);
  for (int r = 0; r < 4; ++r) {
    MemoryPool pool("state");
    std::vector<void *> loaded =
        Checkpoint::open(root_).loadStates(info, pool, r);
    expectMixedPrecisionSlices(loaded, block(r, 4), r);
  }
}

TEST_F(DscRunPartitionedCheckpoint, LoadsMixedPrecisionFromFp32Weights) {
  for (int i = 0; i < 15; ++i)
    whole_[size_t(i)] = -2.0f + float(i) / 7.0f;
  std::string path = dir_.file("w.safetensors");
  writeSafeTensors(path, {{"head.weight", DType::F32, {1, 8}, head_.data()},
                          {"m", DType::F32, {3, 5}, whole_.data()}});
  std::vector<StateDesc> states = mixedPrecisionStates();
  ArtifactInfo info = infoWith(states.data(), 3);
  for (int r = 0; r < 4; ++r) {
    MemoryPool pool("state");
    std::vector<void *> loaded =
        loadStates(info, SafeTensorsFile::open(path), pool, r);
    expectMixedPrecisionSlices(loaded, block(r, 4), r);
  }
  // A master the file holds is read as it is, not from the parameter.
  std::vector<float> master(15, 0.25f);
  writeSafeTensors(path, {{"head.weight", DType::F32, {1, 8}, head_.data()},
                          {"m", DType::F32, {3, 5}, whole_.data()},
                          {"m.master", DType::F32, {3, 5}, master.data()}});
  MemoryPool pool("state");
  std::vector<void *> loaded =
      loadStates(info, SafeTensorsFile::open(path), pool, 0);
  EXPECT_EQ(std::vector<float>(static_cast<const float *>(loaded[2]),
                               static_cast<const float *>(loaded[2]) + 4),
            std::vector<float>(4, 0.25f));
  // Only f32 rounds into a 16-bit state: f64 is refused.
  std::vector<double> wide(15, 1.0);
  writeSafeTensors(path, {{"head.weight", DType::F32, {1, 8}, head_.data()},
                          {"m", DType::F64, {3, 5}, wide.data()}});
  try {
    loadStates(info, SafeTensorsFile::open(path), pool, 0);
    ADD_FAILURE() << "loaded an f64 tensor into a bf16 state";
  } catch (const Error &error) {
    EXPECT_THAT(error.what(), HasSubstr("tensor 'm' is F64 [3, 5], but the "
                                        "artifact expects BF16 [3, 5]"));
  }
}

TEST_F(DscRunPartitionedCheckpoint, RefusesPiecesThatLeaveAGap) {
  saveByTwo();
  std::string path = root_ + "/step_3/metadata.json";
  json meta = json::parse(readText(path));
  meta["tensors"]["m"]["pieces"][1]["offset"] = 9;
  writeText(path, meta.dump());
  try {
    Checkpoint::open(root_);
    ADD_FAILURE() << "opened a checkpoint with a gap";
  } catch (const Error &error) {
    EXPECT_THAT(error.what(),
                HasSubstr("tensor 'm': the pieces do not cover the tensor's "
                          "15 elements once, in order (a piece at element 9)"));
  }
}

//===----------------------------------------------------------------------===//
// Expert-partitioned states
//===----------------------------------------------------------------------===//

constexpr int64_t kExpertsShape[] = {4, 3}; // 4 experts of 3: 12 elements

/// The states of a job of `worldSize` ranks and expert-parallel size `p`: a
/// replicated parameter, the experts [4, 3] partitioned over `experts`
/// (the Expert group: shards of ceil(12 / P); the World: ZeRO's, of
/// ceil(12 / W); the ExpertData group: ZeRO's of the rank's 12 / P
/// elements over W / P ranks), and their moment partitioned over the World
/// by ZeRO.
class ExpertStates {
public:
  ExpertStates(int worldSize, int p, CommGroup experts = CommGroup::Expert)
      : expertShard_{experts == CommGroup::Expert ? (12 + p - 1) / p
                     : experts == CommGroup::World
                         ? (12 + worldSize - 1) / worldSize
                         : (12 / p + worldSize / p - 1) / (worldSize / p)},
        momentShard_{(12 + worldSize - 1) / worldSize},
        states_{{{"head.weight", ElementType::F32, 2, kHeadShape},
                 StateRole::Parameter},
                {{"experts.w", ElementType::F32, 1, expertShard_},
                 StateRole::Parameter,
                 2,
                 kExpertsShape,
                 static_cast<int32_t>(experts)},
                {{"experts.w.exp_avg", ElementType::F32, 1, momentShard_},
                 StateRole::Optimizer,
                 2,
                 kExpertsShape,
                 static_cast<int32_t>(CommGroup::World)}},
        info_(infoWith(states_, 3)) {
    info_.worldSize = worldSize;
    info_.expertParallelSize = p;
  }
  ExpertStates(const ExpertStates &) = delete;
  ExpertStates &operator=(const ExpertStates &) = delete;

  const ArtifactInfo &info() const { return info_; }
  int64_t expertShard() const { return expertShard_[0]; }
  int64_t momentShard() const { return momentShard_[0]; }

private:
  int64_t expertShard_[1];
  int64_t momentShard_[1];
  StateDesc states_[3];
  ArtifactInfo info_;
};

class DscRunExpertCheckpoint : public testing::Test {
protected:
  DscRunExpertCheckpoint() : root_(dir_.file("ck")) {
    for (int i = 0; i < 12; ++i) {
      experts_.push_back(1.25f + float(i));
      moment_.push_back(-0.5f - float(i));
    }
    head_.assign(8, 2.0f);
  }

  /// `shard` elements of `whole` from `begin`, zero past its end.
  static std::vector<float> piece(const std::vector<float> &whole,
                                  int64_t begin, int64_t shard) {
    std::vector<float> out(size_t(shard), 0.0f);
    for (int64_t i = 0; i < shard && begin + i < int64_t(whole.size()); ++i)
      out[size_t(i)] = whole[size_t(begin + i)];
    return out;
  }

  /// What a rank holds of `whole` in a shard of `shard` elements: its
  /// slice, zero after it.
  static std::vector<float> held(const std::vector<float> &whole,
                                 StateSlice slice, int64_t shard) {
    std::vector<float> out = piece(whole, slice.begin, slice.count);
    out.resize(size_t(shard), 0.0f);
    return out;
  }

  /// A save by every rank of a job of `worldSize` ranks and expert-parallel
  /// size `p`, each holding its storage of the states.
  void save(int worldSize, int p, CommGroup experts = CommGroup::Expert) {
    ExpertStates states(worldSize, p, experts);
    CheckpointJob job{3, worldSize, "tiny.mlir", "cpu", 4, 4};
    beginCheckpoint(root_, 3);
    std::vector<std::string> reports;
    for (int r = 0; r < worldSize; ++r) {
      StateSlice mine = stateSlice(states.info().states[1], r, p);
      std::vector<float> expert = held(experts_, mine, states.expertShard());
      std::vector<float> moment =
          piece(moment_, r * states.momentShard(), states.momentShard());
      reports.push_back(writeCheckpointShard(
          root_, job, states.info(),
          {head_.data(), expert.data(), moment.data()}, r));
    }
    commitCheckpoint(root_, job, states.info(), reports);
  }

  /// Loads the checkpoint as rank `rank` of a job of `worldSize` ranks and
  /// expert-parallel size `p`, and expects that rank's storage of each
  /// state: its experts, its ZeRO shard of the moment, the parameter whole.
  void expectLoads(int worldSize, int p, int rank,
                   CommGroup experts = CommGroup::Expert) {
    SCOPED_TRACE("W=" + std::to_string(worldSize) + " P=" + std::to_string(p) +
                 " rank " + std::to_string(rank));
    ExpertStates states(worldSize, p, experts);
    MemoryPool pool("state");
    std::vector<void *> loaded =
        Checkpoint::open(root_).loadStates(states.info(), pool, rank);
    auto floats = [&](int i, int64_t count) {
      const float *data = static_cast<const float *>(loaded[size_t(i)]);
      return std::vector<float>(data, data + count);
    };
    EXPECT_EQ(floats(0, 8), head_);
    int64_t expertShard = states.expertShard();
    EXPECT_EQ(floats(1, expertShard),
              held(experts_, stateSlice(states.info().states[1], rank, p),
                   expertShard));
    int64_t momentShard = states.momentShard();
    EXPECT_EQ(floats(2, momentShard),
              piece(moment_, rank * momentShard, momentShard));
  }

  json metadata() const {
    return json::parse(readText(root_ + "/step_3/metadata.json"));
  }

  ScratchDir dir_;
  std::string root_;
  std::vector<float> experts_, moment_, head_;
};

TEST_F(DscRunExpertCheckpoint, WritesEachExpertOnce) {
  save(4, 2);
  json meta = metadata();
  const json &experts = meta["tensors"]["experts.w"];
  EXPECT_EQ(experts["shape"], json({4, 3}));
  EXPECT_EQ(experts["role"], "parameter");
  EXPECT_EQ(experts["partition"], json({{"world_size", 4},
                                        {"group", "expert"},
                                        {"group_size", 2},
                                        {"shard_elements", 6}}));
  // Ranks 0 and 1 (ExpertData index 0) write a piece each; ranks 2 and 3
  // hold copies of the same pieces and write none.
  ASSERT_EQ(experts["pieces"].size(), 2u);
  EXPECT_EQ(experts["pieces"][0]["shard"], "shard-0-of-4.safetensors");
  EXPECT_EQ(experts["pieces"][0]["offset"], 0);
  EXPECT_EQ(experts["pieces"][0]["shape"], json({6}));
  EXPECT_EQ(experts["pieces"][1]["shard"], "shard-1-of-4.safetensors");
  EXPECT_EQ(experts["pieces"][1]["offset"], 6);
  EXPECT_EQ(experts["pieces"][1]["shape"], json({6}));
  for (int r = 0; r < 4; ++r) {
    SafeTensorsFile shard =
        SafeTensorsFile::open(root_ + "/step_3/" + checkpointShardName(r, 4));
    EXPECT_EQ(shard.contains("experts.w"), r < 2) << r;
    EXPECT_TRUE(shard.contains("experts.w.exp_avg")) << r;
  }
  // ZeRO's moment is as before: every rank's piece, no group.
  const json &moment = meta["tensors"]["experts.w.exp_avg"];
  EXPECT_EQ(moment["partition"],
            json({{"world_size", 4}, {"shard_elements", 3}}));
  EXPECT_EQ(moment["pieces"].size(), 4u);
  // Every element once, and the bytes are the tensor's.
  std::vector<float> whole(12);
  Checkpoint::open(root_).readTensor("experts.w", whole.data(),
                                     whole.size() * sizeof(float));
  EXPECT_EQ(whole, experts_);
}

TEST_F(DscRunExpertCheckpoint, LoadsOnOtherWorldAndExpertParallelSizes) {
  save(4, 2);
  for (auto [worldSize, p] :
       {std::pair{4, 2}, {2, 2}, {4, 4}, {1, 1}, {4, 1}, {2, 1}})
    for (int r = 0; r < worldSize; ++r)
      expectLoads(worldSize, p, r);
}

TEST_F(DscRunExpertCheckpoint, LoadsWhatZeroOrAnotherPartitionSaved) {
  // Saved by ZeRO (the experts partitioned over 2 ranks), loaded as expert
  // parallelism's partition, and saved by P = 4, loaded by P = 2.
  save(2, 1, CommGroup::World);
  for (int r = 0; r < 4; ++r)
    expectLoads(4, 2, r);
  fs::remove_all(root_);
  save(4, 4);
  EXPECT_EQ(metadata()["tensors"]["experts.w"]["pieces"].size(), 4u);
  for (int r = 0; r < 2; ++r)
    expectLoads(2, 2, r);
}

TEST_F(DscRunExpertCheckpoint, ExportsAndDescribesTheWholeTensor) {
  save(4, 2);
  Checkpoint checkpoint = Checkpoint::open(root_);
  std::string path = dir_.file("export.safetensors");
  exportWeights(checkpoint, path);
  SafeTensorsFile exported = SafeTensorsFile::open(path);
  EXPECT_EQ(exported.info("experts.w").shape, (std::vector<int64_t>{4, 3}));
  std::vector<float> whole(12);
  exported.read("experts.w", whole.data(), whole.size() * sizeof(float));
  EXPECT_EQ(whole, experts_);
  EXPECT_FALSE(exported.contains("experts.w.exp_avg"));

  std::string info = describeCheckpoint(checkpoint);
  EXPECT_THAT(info, HasSubstr("  experts.w  parameter F32 [4, 3]  partitioned "
                              "over the expert group (2 of 4 ranks) by 6, 2 "
                              "piece(s)\n"));
  EXPECT_THAT(info, HasSubstr("  parameter: 2 tensor(s), 20 element(s), 0 "
                              "partitioned, 1 over the expert group\n"));
  // The experts' partition says nothing of ZeRO's stage; the moment does.
  EXPECT_THAT(info, HasSubstr("zero stage: 1 or 2 (optimizer state "
                              "partitioned, no gradient state)"));
}

TEST_F(DscRunExpertCheckpoint, WritesExpertDataPiecesByOffset) {
  // ZeRO's partition of the experts over expert-data groups of 2 (W = 4,
  // P = 2): every rank writes its piece of its experts; rank r holds block
  // r % 2, so by offset the pieces are ranks 0, 2, 1, 3.
  save(4, 2, CommGroup::ExpertData);
  json meta = metadata();
  const json &experts = meta["tensors"]["experts.w"];
  EXPECT_EQ(experts["partition"], json({{"world_size", 4},
                                        {"group", "expert_data"},
                                        {"group_size", 2},
                                        {"shard_elements", 3}}));
  ASSERT_EQ(experts["pieces"].size(), 4u);
  const std::vector<std::string> shards = {"shard-0-of-4.safetensors",
                                           "shard-2-of-4.safetensors",
                                           "shard-1-of-4.safetensors",
                                           "shard-3-of-4.safetensors"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(experts["pieces"][i]["offset"], 3 * int64_t(i)) << i;
    EXPECT_EQ(experts["pieces"][i]["shard"], shards[i]) << i;
  }
  std::vector<float> whole(12);
  Checkpoint::open(root_).readTensor("experts.w", whole.data(),
                                     whole.size() * sizeof(float));
  EXPECT_EQ(whole, experts_);
  std::string info = describeCheckpoint(Checkpoint::open(root_));
  EXPECT_THAT(info, HasSubstr("  experts.w  parameter F32 [4, 3]  partitioned "
                              "over its expert group, then over the "
                              "expert_data group (2 of 4 ranks) by 3, 4 "
                              "piece(s)\n"));
  EXPECT_THAT(info, HasSubstr("  parameter: 2 tensor(s), 20 element(s), 0 "
                              "partitioned, 1 experts' over their expert-data "
                              "group\n"));
}

TEST_F(DscRunExpertCheckpoint, ReshardsExpertDataPartitions) {
  // Saved by 8 ranks over expert-data groups of 4 (shards of 2 of each
  // rank's 6 elements; the last index of each group holds padding only and
  // writes nothing), loaded as expert parallelism's partition, as ZeRO's of
  // other sizes, and back.
  save(8, 2, CommGroup::ExpertData);
  EXPECT_EQ(metadata()["tensors"]["experts.w"]["pieces"].size(), 6u);
  for (auto [worldSize, p] : {std::pair{4, 2}, {2, 1}, {4, 4}})
    for (int r = 0; r < worldSize; ++r)
      expectLoads(worldSize, p, r);
  for (auto [worldSize, p] : {std::pair{4, 2}, {8, 2}, {6, 2}, {2, 1}})
    for (int r = 0; r < worldSize; ++r)
      expectLoads(worldSize, p, r, CommGroup::ExpertData);
  fs::remove_all(root_);
  save(4, 2);
  for (int r = 0; r < 8; ++r)
    expectLoads(8, 2, r, CommGroup::ExpertData);
}

TEST_F(DscRunExpertCheckpoint, RefusesAnUnknownPartitionGroup) {
  save(4, 2);
  std::string path = root_ + "/step_3/metadata.json";
  json meta = metadata();
  meta["tensors"]["experts.w"]["partition"]["group"] = "pipeline";
  writeText(path, meta.dump());
  try {
    Checkpoint::open(root_);
    ADD_FAILURE() << "opened a checkpoint with an unknown partition group";
  } catch (const Error &error) {
    EXPECT_THAT(error.what(), HasSubstr("tensor 'experts.w': unknown "
                                        "partition group 'pipeline'"));
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Tensor-parallel slices
//===----------------------------------------------------------------------===//

constexpr int64_t kRowsShape[] = {2, 6};  // a row-parallel weight
constexpr int64_t kSliceShape[] = {2, 3}; // its slice at T = 2

/// Saves step 3 of a job of `info.worldSize` ranks into `root`, each rank
/// holding its part (stateSlice) of state 0, `whole`'s elements; returns
/// metadata.json.
json saveEveryRanksPart(const std::string &root, const ArtifactInfo &info,
                        const std::vector<float> &whole) {
  const StateDesc &state = info.states[0];
  CheckpointJob job{3, info.worldSize, "tiny.mlir", "cpu", 4, 4};
  beginCheckpoint(root, 3);
  std::vector<std::string> reports;
  for (int r = 0; r < info.worldSize; ++r) {
    std::vector<float> mine(size_t(numElements(state.tensor)), 0.0f);
    StateSlice slice = stateSlice(state, r, 1, info.tensorParallelSize);
    for (int64_t i = 0; i < slice.total(); ++i)
      mine[size_t(i)] = whole[size_t(slice.whole(i))];
    reports.push_back(writeCheckpointShard(root, job, info, {mine.data()}, r));
  }
  commitCheckpoint(root, job, info, reports);
  return json::parse(readText(root + "/step_3/metadata.json"));
}

TEST(DscRunTensorSliceCheckpoint, GathersSlicesOfEveryBlock) {
  ScratchDir dir;
  const std::string root = dir.file("ck");
  std::vector<float> whole(12);
  for (int i = 0; i < 12; ++i)
    whole[size_t(i)] = 0.5f + float(i);
  // W = 4, T = 2: ranks 0 and 1 (data index 0) write the two slices, each
  // the whole viewed as [2 blocks, 2, 3] at [:, r % 2, :].
  StateDesc sliced{{"proj.w", ElementType::F32, 2, kSliceShape},
                   StateRole::Parameter,
                   2,
                   kRowsShape,
                   int32_t(CommGroup::Tensor),
                   nullptr,
                   0.0,
                   0,
                   MemoryTier::Device,
                   2};
  ArtifactInfo info = infoWith(&sliced, 1);
  info.worldSize = 4;
  info.tensorParallelSize = 2;
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(checkpointWrites(sliced, 0, r, 4, 1, 2), r < 2) << r;
  json meta = saveEveryRanksPart(root, info, whole);
  const json &pieces = meta["tensors"]["proj.w"]["pieces"];
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[1]["offset"], 3);
  EXPECT_EQ(pieces[1]["blocks"], 2);
  EXPECT_EQ(pieces[1]["stride"], 6);
  EXPECT_EQ(meta["tensors"]["proj.w"]["partition"]["group"], "tensor");

  // Whole, as T = 1 loads it (and dsc-ckpt export reads it).
  Checkpoint checkpoint = Checkpoint::open(root);
  std::vector<float> all(12, -1);
  checkpoint.readTensor("proj.w", all.data(), all.size() * sizeof(float));
  EXPECT_EQ(all, whole);
  // Rank 3 of a job of 2 tensor groups of 2 takes slice 1 again.
  MemoryPool pool("state");
  std::vector<void *> loaded = checkpoint.loadStates(info, pool, 3);
  const float *data = static_cast<const float *>(loaded[0]);
  EXPECT_EQ(std::vector<float>(data, data + 6),
            (std::vector<float>{3.5f, 4.5f, 5.5f, 9.5f, 10.5f, 11.5f}));
}

constexpr int64_t kSliceShardShape[] = {2}; // ZeRO's shard of the slice, D = 4

/// proj.w's slice (kSliceShape at T = 2) partitioned by ZeRO over a data
/// group of `dataRanks`: shards of ceil(6 / D) elements of the slice's two
/// blocks of 3, which may start and end inside a block.
StateDesc sliceShard(const int64_t *shardShape) {
  return {{"proj.w", ElementType::F32, 1, shardShape},
          StateRole::Parameter,
          2,
          kRowsShape,
          int32_t(CommGroup::Data),
          nullptr,
          0.0,
          0,
          MemoryTier::Device,
          2};
}

TEST(DscRunTensorSliceCheckpoint, WritesEveryRanksShardOfItsSlice) {
  ScratchDir dir;
  const std::string root = dir.file("ck");
  std::vector<float> whole(12);
  for (int i = 0; i < 12; ++i)
    whole[size_t(i)] = 0.5f + float(i);
  // W = 8, T = 2, D = 4: each slice of 6 elements in shards of 2 (the last
  // one padding only): shard 1 holds the slice's elements 2 and 3, the
  // end of its first block and the start of its second.
  StateDesc shard = sliceShard(kSliceShardShape);
  ArtifactInfo info = infoWith(&shard, 1);
  info.worldSize = 8;
  info.tensorParallelSize = 2;
  for (int r = 0; r < 8; ++r)
    EXPECT_TRUE(checkpointWrites(shard, 0, r, 8, 1, 2)) << r;
  json meta = saveEveryRanksPart(root, info, whole);
  const json &pieces = meta["tensors"]["proj.w"]["pieces"];
  // Slice 0 (offset 0), then slice 1 (offset 3), each by first element.
  ASSERT_EQ(pieces.size(), 6u);
  EXPECT_EQ(pieces[1]["offset"], 0);
  EXPECT_EQ(pieces[1]["first"], 2);
  EXPECT_EQ(pieces[1]["block_elements"], 3);
  EXPECT_EQ(pieces[1]["blocks"], 2);
  EXPECT_EQ(pieces[1]["stride"], 6);
  EXPECT_EQ(pieces[3]["offset"], 3);
  EXPECT_EQ(pieces[3]["first"], 0);
  EXPECT_EQ(meta["tensors"]["proj.w"]["partition"]["group"], "data");

  // Whole, as T = 1 loads it (and dsc-ckpt export reads it).
  Checkpoint checkpoint = Checkpoint::open(root);
  std::vector<float> all(12, -1);
  checkpoint.readTensor("proj.w", all.data(), all.size() * sizeof(float));
  EXPECT_EQ(all, whole);
  // At W = 4, T = 2, D = 2 (shards of 3, one block each), rank 3 (tensor
  // index 1, data index 1) takes the second block of slice 1.
  constexpr int64_t shardOf3[] = {3};
  StateDesc halves = sliceShard(shardOf3);
  ArtifactInfo four = infoWith(&halves, 1);
  four.worldSize = 4;
  four.tensorParallelSize = 2;
  MemoryPool pool("state");
  std::vector<void *> loaded = checkpoint.loadStates(four, pool, 3);
  const float *data = static_cast<const float *>(loaded[0]);
  EXPECT_EQ(std::vector<float>(data, data + 3),
            (std::vector<float>{9.5f, 10.5f, 11.5f}));
}

TEST(DscRunTensorSliceCheckpoint, RefusesShardsOfASliceThatLeaveAGap) {
  ScratchDir dir;
  const std::string root = dir.file("ck");
  StateDesc shard = sliceShard(kSliceShardShape);
  ArtifactInfo info = infoWith(&shard, 1);
  info.worldSize = 8;
  info.tensorParallelSize = 2;
  json meta = saveEveryRanksPart(root, info, std::vector<float>(12, 1.0f));
  // Slice 0's second shard (its elements 2 and 3) made to start at 3.
  const std::string metaPath = root + "/step_3/metadata.json";
  meta["tensors"]["proj.w"]["pieces"][1]["first"] = 3;
  writeText(metaPath, meta.dump());
  try {
    Checkpoint::open(root);
    FAIL() << "a gap between the shards of a slice was accepted";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), HasSubstr("the pieces do not cover the tensor's 12 "
                                    "elements once, in order (a piece at "
                                    "element 0 of the slice's 3)"));
  }
}

TEST(DscRunTensorSliceCheckpoint, WritesEachTedExpertShardOnce) {
  // W = 8, P = 2, T = 2: ZeRO's shards of the experts over expert-data
  // groups of 2. Every rank holds its own shard of its experts' slice; a
  // bias that tensor parallelism does not split is alike on the tensor
  // group, so tensor index 0 writes it.
  constexpr int64_t whole[] = {4, 4};
  constexpr int64_t shard[] = {2};
  StateDesc slice{{"experts.w", ElementType::F32, 1, shard},
                  StateRole::Optimizer,
                  2,
                  whole,
                  int32_t(CommGroup::ExpertData),
                  nullptr,
                  0.0,
                  0,
                  MemoryTier::Device,
                  4};
  StateDesc bias = slice;
  bias.partitionBlocks = 0;
  for (int r = 0; r < 8; ++r) {
    EXPECT_TRUE(checkpointWrites(slice, 0, r, 8, 2, 2)) << r;
    EXPECT_EQ(checkpointWrites(bias, 0, r, 8, 2, 2), r % 2 == 0) << r;
  }
}
