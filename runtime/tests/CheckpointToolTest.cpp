//===- CheckpointToolTest.cpp - dsc-run --save / --resume under mpirun ----===//
//
// A run of 2 + 2 steps through a checkpoint prints the same losses, to the
// last digit, as a run of 4 steps, on 1 and 2 ranks and when the world
// size changes across the checkpoint; --save-interval; a damaged
// checkpoint is refused with its message, printed once; and a save that
// fails on one rank leaves `latest` alone. Every run goes through
// timeout(1) and a short DSC_COLLECTIVE_TIMEOUT (RunProcess.h).
//
//===----------------------------------------------------------------------===//

#include "Inputs/TinyModel.h"
#include "RunProcess.h"
#include "ScratchDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>

using dsc::rt::test::artifact;
using dsc::rt::test::occurrences;
using dsc::rt::test::readBytes;
using dsc::rt::test::Result;
using dsc::rt::test::ScratchDir;
using dsc::rt::test::split;
using testing::HasSubstr;
using testing::Not;

namespace fs = std::filesystem;

namespace {

/// "step=N loss=X" of every step line, in order: the part of a step line
/// that must not change across a checkpoint (the rest is timing).
std::vector<std::string> lossLines(const std::string &out) {
  static const std::regex line(R"((step=\d+ loss=\S+) samples/s=.*)");
  std::vector<std::string> lines;
  for (const std::string &text : split(out, '\n')) {
    std::smatch match;
    if (std::regex_match(text, match, line))
      lines.push_back(match[1]);
  }
  return lines;
}

std::vector<std::string> slice(const std::vector<std::string> &lines,
                               size_t from, size_t to) {
  if (to > lines.size())
    return {"(only " + std::to_string(lines.size()) + " lines)"};
  return {lines.begin() + long(from), lines.begin() + long(to)};
}

/// The tiny model's artifact for a job of `ranks` ranks (global batch 4).
std::string tinyFor(int ranks) {
  return artifact(ranks == 1 ? "tiny_w1" : "tiny_w2");
}

class DscRunCheckpointTool : public testing::Test {
protected:
  DscRunCheckpointTool() {
    dsc::rt::test::TinyModel().writeWeights(dir_.file("w.safetensors"));
    dsc::rt::test::writeTokens(dir_.file("d.bin"), dsc::rt::test::tinyTokens());
  }

  /// dsc-run's arguments for `ranks` ranks and `steps` steps, then `extra`.
  std::vector<std::string> args(int ranks, int64_t steps,
                                const std::vector<std::string> &extra = {}) {
    std::vector<std::string> list = {tinyFor(ranks),
                                     "--data",
                                     dir_.file("d.bin"),
                                     "--batch",
                                     "4",
                                     "--seq",
                                     "4",
                                     "--steps",
                                     std::to_string(steps)};
    list.insert(list.end(), extra.begin(), extra.end());
    return list;
  }

  std::vector<std::string> weights() const {
    return {"--weights", dir_.file("w.safetensors")};
  }

  /// mpirun, then one application context per element of `contexts` (each
  /// one rank's dsc-run arguments when there are several: MPMD).
  Result mpirun(const std::vector<std::vector<std::string>> &contexts,
                int ranksEach) {
    std::vector<std::string> argv = dsc::rt::test::mpirunCommand();
    for (size_t i = 0; i < contexts.size(); ++i) {
      if (i)
        argv.push_back(":");
      argv.insert(argv.end(),
                  {"-np", std::to_string(ranksEach), DSC_RUN_BINARY});
      argv.insert(argv.end(), contexts[i].begin(), contexts[i].end());
    }
    return dsc::rt::test::runProcess(dir_, argv, {"DSC_COLLECTIVE_TIMEOUT=30"});
  }

  Result run(int ranks, const std::vector<std::string> &arguments) {
    return mpirun({arguments}, ranks);
  }

  /// The loss lines of a successful run.
  std::vector<std::string> losses(int ranks,
                                  const std::vector<std::string> &arguments) {
    Result result = run(ranks, arguments);
    EXPECT_EQ(result.status, 0) << result.err;
    return lossLines(result.out);
  }

  /// Expects a failed run whose stderr says `message` exactly once.
  void expectRefusal(const Result &result, const std::string &message) {
    EXPECT_EQ(result.status, 1) << result.err;
    EXPECT_THAT(result.err, HasSubstr(message));
    EXPECT_EQ(occurrences(result.err, message), 1u) << result.err;
    EXPECT_THAT(result.out, Not(HasSubstr("step=")));
  }

  ScratchDir dir_;
};

TEST_F(DscRunCheckpointTool, ResumingContinuesBitIdentically) {
  for (int ranks : {1, 2}) {
    SCOPED_TRACE(std::to_string(ranks) + " rank(s)");
    std::string ck = dir_.file("ck" + std::to_string(ranks));
    std::vector<std::string> whole = losses(ranks, args(ranks, 4, weights()));
    ASSERT_EQ(whole.size(), 4u);

    std::vector<std::string> saveArgs = args(ranks, 2, weights());
    saveArgs.insert(saveArgs.end(), {"--save", ck});
    Result first = run(ranks, saveArgs);
    ASSERT_EQ(first.status, 0) << first.err;
    EXPECT_EQ(lossLines(first.out), slice(whole, 0, 2));
    EXPECT_THAT(first.err,
                HasSubstr("dsc-run: saved checkpoint " + ck + "/step_2 (" +
                          std::to_string(ranks) + " shard(s), "));
    EXPECT_EQ(readBytes(ck + "/latest"), "step_2\n");

    // No --weights: the state is the checkpoint's. Steps 3 and 4 see data
    // batches 2 and 3, as in the whole run.
    Result second = run(ranks, args(ranks, 2, {"--resume", ck}));
    ASSERT_EQ(second.status, 0) << second.err;
    EXPECT_EQ(lossLines(second.out), slice(whole, 2, 4));
    EXPECT_THAT(second.err,
                HasSubstr("dsc-run: resuming from " + ck +
                          "/step_2 (saved by " + std::to_string(ranks) +
                          " rank(s)): steps 3 to 4\n"));
  }
}

TEST_F(DscRunCheckpointTool,
       ResumingOnAnotherWorldSizeContinuesBitIdentically) {
  // The losses of a job depend on its world size in the last bits (the sum
  // over ranks is ordered differently), so a resumed job is held to a whole
  // run of its own size: the checkpoint must change nothing.
  for (auto [saver, resumer] : {std::pair{2, 1}, std::pair{1, 2}}) {
    SCOPED_TRACE("saved by " + std::to_string(saver) + ", resumed by " +
                 std::to_string(resumer));
    std::string ck = dir_.file("ck" + std::to_string(saver));
    std::vector<std::string> whole =
        losses(resumer, args(resumer, 4, weights()));
    std::vector<std::string> saveArgs = args(saver, 2, weights());
    saveArgs.insert(saveArgs.end(), {"--save", ck});
    ASSERT_EQ(run(saver, saveArgs).status, 0);
    EXPECT_TRUE(fs::exists(ck + "/step_2/shard-" + std::to_string(saver - 1) +
                           "-of-" + std::to_string(saver) + ".safetensors"));
    EXPECT_EQ(losses(resumer, args(resumer, 2, {"--resume", ck})),
              slice(whole, 2, 4));
  }
}

TEST_F(DscRunCheckpointTool, SavesEveryIntervalAndAtTheEnd) {
  std::string ck = dir_.file("ck");
  std::vector<std::string> whole = losses(2, args(2, 5, weights()));
  std::vector<std::string> saveArgs = args(2, 5, weights());
  saveArgs.insert(saveArgs.end(), {"--save", ck, "--save-interval", "2",
                                   "--metrics", dir_.file("m.csv")});
  Result result = run(2, saveArgs);
  ASSERT_EQ(result.status, 0) << result.err;
  for (const char *step : {"step_2", "step_4", "step_5"})
    EXPECT_TRUE(fs::exists(ck + "/" + step + "/metadata.json")) << step;
  EXPECT_FALSE(fs::exists(ck + "/step_1"));
  EXPECT_EQ(readBytes(ck + "/latest"), "step_5\n");

  // A step directory of its own, not latest; the CSV continues the steps.
  std::vector<std::string> resumeArgs =
      args(2, 1, {"--resume", ck + "/step_4", "--metrics", dir_.file("r.csv")});
  resumeArgs.insert(resumeArgs.end(),
                    {"--weights", dir_.file("w.safetensors")});
  Result resumed = run(2, resumeArgs);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_EQ(lossLines(resumed.out), slice(whole, 4, 5));
  EXPECT_THAT(resumed.err, HasSubstr("--weights is ignored, the state is the "
                                     "checkpoint's"));
  std::vector<std::string> rows = split(readBytes(dir_.file("r.csv")), '\n');
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].substr(0, 2), "5,");
}

TEST_F(DscRunCheckpointTool, RefusesDamagedCheckpointsWithOneMessage) {
  std::string ck = dir_.file("ck");
  std::vector<std::string> saveArgs = args(2, 2, weights());
  saveArgs.insert(saveArgs.end(), {"--save", ck});
  ASSERT_EQ(run(2, saveArgs).status, 0);

  struct Case {
    const char *what;
    std::function<void(const std::string &)> damage; // given the step dir
    std::string message;
  };
  const Case cases[] = {
      {"truncated shard",
       [](const std::string &dir) {
         std::string path = dir + "/shard-1-of-2.safetensors";
         fs::resize_file(path, fs::file_size(path) - 4);
       },
       "shard shard-1-of-2.safetensors is 188 bytes, but metadata.json says "
       "192 (truncated or overwritten)"},
      {"flipped byte",
       [](const std::string &dir) {
         std::string path = dir + "/shard-1-of-2.safetensors";
         std::string bytes = readBytes(path);
         bytes.back() = static_cast<char>(bytes.back() ^ 0x40);
         std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
       },
       "tensor 'head.weight' in shard-1-of-2.safetensors fails its checksum"},
      {"deleted shard",
       [](const std::string &dir) {
         fs::remove(dir + "/shard-0-of-2.safetensors");
       },
       "shard shard-0-of-2.safetensors is missing"},
      {"deleted metadata",
       [](const std::string &dir) { fs::remove(dir + "/metadata.json"); },
       "no metadata.json, so the save did not complete"},
      {"edited shape",
       [](const std::string &dir) {
         std::string path = dir + "/metadata.json";
         auto metadata = nlohmann::json::parse(readBytes(path));
         metadata["tensors"]["head.weight"]["shape"] = {2, 4};
         std::ofstream(path, std::ios::binary | std::ios::trunc)
             << metadata.dump(2);
       },
       "shard shard-1-of-2.safetensors holds tensor 'head.weight' as F32 "
       "[1, 8], but metadata.json says F32 [2, 4] of 32 bytes"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    std::string copy = dir_.file(std::string("damaged-") + c.what);
    fs::copy(ck, copy, fs::copy_options::recursive);
    c.damage(copy + "/step_2");
    // Both ranks find it; rank 0 prints it once, with the step directory.
    expectRefusal(run(2, args(2, 1, {"--resume", copy})),
                  "dsc-run: error: checkpoint " + copy +
                      "/step_2: " + c.message);
  }
}

TEST_F(DscRunCheckpointTool, ASaveThatFailsOnOneRankLeavesLatestAlone) {
  std::string ck = dir_.file("ck"), other = dir_.file("elsewhere");
  std::vector<std::string> saveArgs = args(2, 2, weights());
  saveArgs.insert(saveArgs.end(), {"--save", ck});
  ASSERT_EQ(run(2, saveArgs).status, 0);

  // Rank 1's --save names a directory rank 0 does not write to, as a node
  // without the shared file system would see it: rank 1 cannot put its
  // shard beside rank 0's, so nobody commits step 4.
  Result result = mpirun({args(2, 2, {"--resume", ck, "--save", ck}),
                          args(2, 2, {"--resume", ck, "--save", other})},
                         1);
  EXPECT_EQ(result.status, 1) << result.err;
  std::string message = "dsc-run: error: rank 1: checkpoint step_4 not "
                        "saved, latest unchanged: " +
                        other +
                        "/step_4.saving: this rank does not see the directory "
                        "rank 0 created for the save";
  EXPECT_THAT(result.err, HasSubstr(message));
  EXPECT_EQ(occurrences(result.err, "error:"), 1u) << result.err;
  EXPECT_EQ(lossLines(result.out).size(), 2u); // the steps ran
  EXPECT_EQ(readBytes(ck + "/latest"), "step_2\n");
  EXPECT_FALSE(fs::exists(ck + "/step_4"));
  EXPECT_FALSE(fs::exists(ck + "/step_4.saving"));
  EXPECT_FALSE(fs::exists(other + "/latest"));
}

TEST_F(DscRunCheckpointTool, RefusesAResumeWithoutACheckpoint) {
  fs::create_directory(dir_.file("empty"));
  expectRefusal(run(1, args(1, 1, {"--resume", dir_.file("empty")})),
                "dsc-run: error: " + dir_.file("empty") +
                    ": no checkpoint here: no 'latest' file, and it is no "
                    "step_<N> directory");
}

} // namespace
