//===- CheckpointCrashTest.cpp - a save killed at every point -------------===//
//
// A save must never leave ROOT/latest naming anything but a complete
// checkpoint. Each case forks a child that saves (every rank played in
// process, as CheckpointTest.cpp does) with DSC_TEST_CRASH_AT=K, so that
// it _exits at the K-th crash point (detail::crashPoint: before and after
// every rename, before each removal), for K = 1, 2, ... until a child
// saves to the end. After each, the parent opens `latest` and reads every
// tensor, checksums included: it must be the previous save or the new one,
// whole.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/Checkpoint.h"
#include "dsc/runtime/ArtifactLibrary.h"
#include "dsc/runtime/MemoryPool.h"
#include "dsc/runtime/Run.h"

#include "../lib/io/PosixFile.h"
#include "Inputs/TinyModel.h"
#include "ScratchDir.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <sys/wait.h>
#include <unistd.h>

using namespace dsc::rt;
using dsc::rt::test::readBytes;
using dsc::rt::test::ScratchDir;
using dsc::rt::test::TinyModel;

namespace fs = std::filesystem;

namespace {

constexpr int64_t kWteShape[] = {16, 8};
constexpr int64_t kHeadShape[] = {1, 8};
constexpr int64_t kBiasShape[] = {16};
const StateDesc kStates[] = {
    {{"wte.weight", ElementType::F32, 2, kWteShape}, StateRole::Parameter},
    {{"head.weight", ElementType::F32, 2, kHeadShape}, StateRole::Parameter},
    {{"bias", ElementType::F32, 1, kBiasShape}, StateRole::Buffer},
};

class CheckpointCrash : public testing::Test {
protected:
  CheckpointCrash() : root_(dir_.file("ck")) {
    info_.abiVersion = kArtifactAbiVersion;
    info_.target = "cpu";
    info_.model = "tiny.mlir";
    info_.worldSize = 1;
    info_.expertParallelSize = 1;
    info_.numStates = 3;
    info_.states = kStates;
    // The new save's values differ from the old one's in every state.
    for (std::vector<float> *values : {&next_.wte, &next_.head, &next_.bias})
      for (float &value : *values)
        value += 1.0f;
  }

  /// A save of step `step` by `worldSize` ranks of `model`'s values.
  void save(int64_t step, int worldSize, TinyModel &model) {
    std::vector<void *> states = {model.wte.data(), model.head.data(),
                                  model.bias.data()};
    CheckpointJob job{step, worldSize, "tiny.mlir", "cpu", 4, 4};
    beginCheckpoint(root_, step);
    std::vector<std::string> reports;
    for (int r = 0; r < worldSize; ++r)
      reports.push_back(writeCheckpointShard(root_, job, info_, states, r));
    commitCheckpoint(root_, job, info_, reports);
  }

  /// Runs save(step, 2, next_) in a child that crashes at crash point `k`.
  /// True when it crashed there, false when it saved to the end.
  bool saveCrashingAt(int64_t step, int k) {
    pid_t child = ::fork();
    if (child == 0) {
      ::setenv(detail::kCrashAtVariable, std::to_string(k).c_str(), 1);
      try {
        save(step, 2, next_);
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    int status = 0;
    EXPECT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status));
    int code = WEXITSTATUS(status);
    EXPECT_TRUE(code == 0 || code == detail::kCrashExitCode)
        << "the save failed instead of crashing (exit " << code << ")";
    return code == detail::kCrashExitCode;
  }

  /// The step and values of the checkpoint `latest` names, which must load
  /// whole: every tensor present and passing its checksum.
  std::pair<int64_t, bool> loadLatest() {
    Checkpoint checkpoint = Checkpoint::open(root_);
    MemoryPool pool("state");
    std::vector<void *> loaded = checkpoint.loadStates(info_, pool);
    auto holds = [&](const TinyModel &model) {
      return std::memcmp(loaded[0], model.wte.data(), 16 * 8 * 4) == 0 &&
             std::memcmp(loaded[1], model.head.data(), 8 * 4) == 0 &&
             std::memcmp(loaded[2], model.bias.data(), 16 * 4) == 0;
    };
    bool isNext = holds(next_);
    EXPECT_TRUE(isNext || holds(previous_)) << "a mix of two saves";
    return {checkpoint.job().step, isNext};
  }

  /// Crashes a save of step `step` at every point in turn, each time from a
  /// root that `prepare` sets up afresh, and checks what `latest` names:
  /// before the crash the previous save (step `previousStep`), after it
  /// the new one. Returns how many crash points a save passes.
  int crashEverywhere(int64_t step, int64_t previousStep,
                      const std::function<void()> &prepare) {
    int k = 1;
    for (; k < 100; ++k) {
      fs::remove_all(root_);
      prepare();
      bool crashed = saveCrashingAt(step, k);
      SCOPED_TRACE("crashed at point " + std::to_string(k));
      std::pair<int64_t, bool> latest;
      try {
        latest = loadLatest();
      } catch (const std::exception &error) {
        ADD_FAILURE() << "latest is not loadable: " << error.what();
        return k;
      }
      if (latest.second)
        EXPECT_EQ(latest.first, step);
      else
        EXPECT_EQ(latest.first, previousStep);
      if (!crashed) {
        EXPECT_TRUE(latest.second) << "a save that completed is not latest";
        break;
      }
    }
    return k - 1;
  }

  ScratchDir dir_;
  std::string root_;
  ArtifactInfo info_{};
  TinyModel previous_, next_;
};

TEST_F(CheckpointCrash, ANewStep) {
  int points = crashEverywhere(3, 2, [&] {
    save(1, 2, previous_);
    save(2, 2, previous_);
  });
  // Per shard two renames, metadata two, the directory two, latest two.
  EXPECT_GE(points, 10);
  EXPECT_EQ(readBytes(root_ + "/latest"), "step_3\n");
}

// A run resumed from step 1 saves step 2 again while `latest` names the
// earlier run's step 2: the old step 2 must stay until `latest` names the
// new one.
TEST_F(CheckpointCrash, AStepSavedAgainWhileLatestNamesIt) {
  int points = crashEverywhere(2, 2, [&] {
    save(1, 2, previous_);
    save(2, 2, previous_);
  });
  EXPECT_GE(points, 11); // and the removal of the old step 2
  EXPECT_EQ(readBytes(root_ + "/latest"), "step_2.1\n");
  EXPECT_FALSE(fs::exists(root_ + "/step_2"));
}

// The same when `latest` names another step: the superseded step 2 is
// removed last.
TEST_F(CheckpointCrash, AStepSavedAgainWhileLatestNamesAnother) {
  crashEverywhere(2, 1, [&] {
    save(2, 2, previous_);
    save(1, 2, previous_);
  });
  EXPECT_EQ(readBytes(root_ + "/latest"), "step_2.1\n");
  EXPECT_FALSE(fs::exists(root_ + "/step_2"));
}

} // namespace
