//===- RunTargetTest.cpp - dsc-run's targets, in process ------------------===//
//
// Which targets dsc-run runs, the registry of RunTargets, the CPU target's
// buffers and pools, and collectives as tasks of the artifact's collectives
// stream. This executable is an artifact host without the
// CUDA target (dsc_run_cuda) and the CUDA backend, as a dsc-run built
// without CUDA support is, so a CUDA artifact must be refused here whatever
// the build.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/ArtifactLibrary.h"
#include "dsc/runtime/Comm.h"
#include "dsc/runtime/Float16.h"
#include "dsc/runtime/MemoryPool.h"
#include "dsc/runtime/NvmeStore.h"
#include "dsc/runtime/Run.h"
#include "dsc/runtime/SafeTensors.h"
#include "dsc/runtime/Stream.h"

#include "ErrorOf.h"
#include "ScratchDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <future>

using namespace dsc::rt;
using dsc::rt::test::ScratchDir;
using testing::HasSubstr;

namespace {

using test::errorOf;

/// One state w f32 [2, 3]; tokens and targets i64 [1, 4]; loss f32; one
/// rank; an arena of 300 bytes.
struct OneRankArtifact {
  int64_t stateShape[2] = {2, 3};
  int64_t inputShape[2] = {1, 4};
  StateDesc states[1] = {
      {{"w", ElementType::F32, 2, stateShape}, StateRole::Parameter}};
  TensorDesc inputs[2] = {{"tokens", ElementType::I64, 2, inputShape},
                          {"targets", ElementType::I64, 2, inputShape}};
  TensorDesc outputs[1] = {{"loss", ElementType::F32, 0, nullptr}};
  ArtifactInfo info{kArtifactAbiVersion, "cpu", "one.mlir", 1,
                    /*expertParallelSize=*/1, 300, 1, states, 2, inputs, 1,
                    outputs, 0, nullptr, /*gradAccumSteps=*/1,
                    /*hostArenaBytes=*/0, /*tensorParallelSize=*/1};
  RunOptions options;
  OneRankArtifact() {
    options.artifact = "one.so";
    options.batch = 1;
    options.seq = 4;
  }
};

TEST(DscRunTargets, CudaNeedsCudaSupport) {
  EXPECT_EQ(errorOf([] { checkArtifactTarget("cuda", "one.so", false); }),
            "one.so: artifact is for target 'cuda', but this dsc-run was "
            "built without CUDA support (configure the runtime with the CUDA "
            "toolkit and DSC_ENABLE_CUDA on; docs/cuda.md)");
  EXPECT_NO_THROW(checkArtifactTarget("cuda", "one.so", true));
  EXPECT_NO_THROW(checkArtifactTarget("cpu", "one.so", false));
  EXPECT_EQ(errorOf([] { checkArtifactTarget("tpu", "one.so", true); }),
            "one.so: artifact is for target 'tpu', which dsc-run does not "
            "know (it runs 'cpu' and 'cuda' artifacts)");
  EXPECT_THAT(errorOf([] { checkArtifactTarget("CUDA", "one.so", true); }),
              HasSubstr("target 'CUDA', which dsc-run does not know"));
}

TEST(DscRunTargets, ACudaArtifactIsRefusedWithoutTheCudaTarget) {
  // No dsc_run_cuda in this executable: no "cuda" RunTarget.
  EXPECT_TRUE(haveRunTarget("cpu"));
  EXPECT_FALSE(haveRunTarget("cuda"));
  OneRankArtifact fake;
  EXPECT_NO_THROW(planFeeds(fake.info, fake.options, 1));
  fake.info.target = "cuda";
  EXPECT_EQ(errorOf([&] { planFeeds(fake.info, fake.options, 1); }),
            "one.so: artifact is for target 'cuda', but this dsc-run was "
            "built without CUDA support (configure the runtime with the CUDA "
            "toolkit and DSC_ENABLE_CUDA on; docs/cuda.md)");
  EXPECT_EQ(errorOf([] { makeRunTarget("cuda"); }),
            "no RunTarget for artifacts of target 'cuda'");
}

TEST(DscRunTargets, ACudaArtifactThatCannotLoadIsRefusedAsCuda) {
  // A CUDA artifact calls dsc::rt::cuda::gemmF32, which this host does not
  // export: dlopen fails on it, and the message says why.
  std::string path =
      std::string(DSC_TEST_ARTIFACT_DIR) + "/cuda_target_stub.so";
  EXPECT_EQ(errorOf([&] { ArtifactLibrary::open(path); }),
            path + ": artifact is for target 'cuda', but this dsc-run was "
                   "built without CUDA support (configure the runtime with "
                   "the CUDA toolkit and DSC_ENABLE_CUDA on; docs/cuda.md)");
  // A CPU artifact with an undefined symbol keeps dlopen's message.
  std::string missing =
      std::string(DSC_TEST_ARTIFACT_DIR) + "/tiny_missing_symbol.so";
  EXPECT_THAT(errorOf([&] { ArtifactLibrary::open(missing); }),
              HasSubstr("undefined symbol"));
}

/// A target that only counts how often it was made.
int targetsMade = 0;
class CountingTarget final : public RunTarget {
public:
  void prepare(int) override {}
  void allocate(const ArtifactInfo &) override {}
  void loadStates(const ArtifactInfo &, const SafeTensorsFile &) override {}
  void loadStates(const ArtifactInfo &, const Checkpoint &) override {}
  void loadTeacherStates(const ArtifactInfo &,
                         const SafeTensorsFile &) override {}
  MemoryUse releaseTeacher(const ArtifactInfo &, size_t) override {
    return {};
  }
  RunStepContext &connect() override { throw Error("not here"); }
  void *hostInput(int32_t) override { return nullptr; }
  const void *hostOutput(int32_t) override { return nullptr; }
  std::vector<void *> hostStates(const ArtifactInfo &, int, int,
                                 MemoryPool &) override {
    return {};
  }
  const void *hostState(const ArtifactInfo &, int32_t, MemoryPool &) override {
    return nullptr;
  }
  MemoryUse memoryUse() const override { return {}; }
};

TEST(DscRunTargets, RegisteredTargetsAreMadeByName) {
  EXPECT_FALSE(haveRunTarget("counting"));
  registerRunTarget("counting", []() -> std::unique_ptr<RunTarget> {
    ++targetsMade;
    return std::make_unique<CountingTarget>();
  });
  EXPECT_TRUE(haveRunTarget("counting"));
  std::unique_ptr<RunTarget> made = makeRunTarget("counting");
  EXPECT_NE(dynamic_cast<CountingTarget *>(made.get()), nullptr);
  EXPECT_EQ(targetsMade, 1);
  // The CPU target is built in.
  EXPECT_NE(makeRunTarget("cpu"), nullptr);
}

TEST(DscRunTargets, TheCpuTargetKeepsHostPools) {
  ScratchDir dir;
  OneRankArtifact fake;
  const float w[6] = {1, 2, 3, 4, 5, 6};
  writeSafeTensors(dir.file("w.safetensors"),
                   {{"w", DType::F32, {2, 3}, w}});
  std::unique_ptr<RunTarget> target = makeRunTarget("cpu");
  target->prepare(0);
  target->allocate(fake.info);
  target->loadStates(fake.info,
                     SafeTensorsFile::open(dir.file("w.safetensors")));
  // The batch is cut where the artifact reads it; the loss read where it
  // writes it: host memory.
  auto *tokens = static_cast<int64_t *>(target->hostInput(0));
  auto *targets = static_cast<int64_t *>(target->hostInput(1));
  ASSERT_NE(tokens, nullptr);
  ASSERT_NE(targets, nullptr);
  EXPECT_NE(tokens, targets);
  EXPECT_NE(target->hostOutput(0), nullptr);
  EXPECT_THROW(target->hostInput(2), std::out_of_range);

  // Host pools, counted at 256 bytes a buffer: the arena (300 -> 512), the
  // state (24 -> 256), two inputs and an output (3 x 256).
  MemoryUse use = target->memoryUse();
  EXPECT_EQ(use.arena, 512u);
  EXPECT_EQ(use.state, 256u);
  EXPECT_EQ(use.io, 768u);
  EXPECT_EQ(use.where, "");
  EXPECT_EQ(use.pinnedHost, 0u);

  // A checkpoint shard reads the states where they are, no copy.
  MemoryPool scratch("checkpoint");
  std::vector<void *> states = target->hostStates(fake.info, 0, 1, scratch);
  ASSERT_EQ(states.size(), 1u);
  EXPECT_EQ(std::memcmp(states[0], w, sizeof w), 0);
  // So does --dump-states.
  EXPECT_EQ(target->hostState(fake.info, 0, scratch), states[0]);
  EXPECT_EQ(scratch.highWaterMark(), 0u);
}

// Both targets make the rank's NVMe store with makeNvmeStore: none without
// NVMe states, an Error without a path, else one with every NVMe state's
// extent (and only theirs) that reads back what it was given.
TEST(DscRunTargets, TheNvmeStoreHoldsTheNvmeStates) {
  OneRankArtifact a;
  ScratchDir dir;
  EXPECT_EQ(makeNvmeStore(a.info, dir.path(), 0), nullptr);
  a.states[0].tier = MemoryTier::Nvme;
  EXPECT_THAT(errorOf([&] { makeNvmeStore(a.info, "", 0); }),
              HasSubstr("the artifact keeps state on NVMe (ZeRO-Infinity): "
                        "give dsc-run --nvme-path DIR"));
  std::unique_ptr<NvmeStore> store = makeNvmeStore(a.info, dir.path(), 1);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->stateBytes(0), 6 * sizeof(float));
  std::vector<float> w = {1, 2, 3, 4, 5, 6}, back(6);
  store->wait(store->write(0, 0, w.data(), 6 * sizeof(float)));
  store->wait(store->read(0, 0, back.data(), 6 * sizeof(float)));
  EXPECT_EQ(back, w);
}

TEST(DscRunTargets, StatesAreCheckedBeforeTheyAreRead) {
  ScratchDir dir;
  OneRankArtifact fake;
  const float w[8] = {};
  writeSafeTensors(dir.file("w.safetensors"),
                   {{"w", DType::F32, {2, 4}, w}});
  int reads = 0;
  EXPECT_EQ(
      errorOf([&] {
        forEachState(fake.info,
                     SafeTensorsFile::open(dir.file("w.safetensors")),
                     [&](int32_t, const std::string &, size_t, bool) { ++reads; });
      }),
      dir.file("w.safetensors") +
          ": tensor 'w' is F32 [2, 4], but the artifact expects F32 [2, 3]");
  EXPECT_EQ(reads, 0);
  writeSafeTensors(dir.file("w.safetensors"), {{"w", DType::F32, {2, 3}, w}});
  std::vector<std::string> names;
  std::vector<size_t> sizes;
  forEachState(fake.info, SafeTensorsFile::open(dir.file("w.safetensors")),
               [&](int32_t index, const std::string &name, size_t bytes,
                   bool present) {
                 EXPECT_TRUE(present);
                 EXPECT_EQ(index, static_cast<int32_t>(names.size()));
                 names.push_back(name);
                 sizes.push_back(bytes);
               });
  EXPECT_EQ(names, std::vector<std::string>{"w"});
  EXPECT_EQ(sizes, std::vector<size_t>{24});
}

/// Each state forEachState visits with `weights`, and whether it reads it
/// from that file.
std::vector<std::pair<std::string, bool>> presence(const ArtifactInfo &info,
                                                   const std::string &weights) {
  std::vector<std::pair<std::string, bool>> seen;
  forEachState(info, SafeTensorsFile::open(weights),
               [&](int32_t, const std::string &name, size_t, bool present) {
                 seen.push_back({name, present});
               });
  return seen;
}

TEST(DscRunTargets, OptimizerStateMissingFromWeightsStartsAtZero) {
  ScratchDir dir;
  OneRankArtifact fake;
  int64_t scalar[1] = {1};
  StateDesc states[2] = {
      fake.states[0],
      {{"w.exp_avg", ElementType::F32, 1, scalar}, StateRole::Optimizer}};
  fake.info.numStates = 2;
  fake.info.states = states;
  EXPECT_TRUE(artifactTrains(fake.info));
  const float w[6] = {};
  writeSafeTensors(dir.file("w.safetensors"), {{"w", DType::F32, {2, 3}, w}});
  EXPECT_EQ(presence(fake.info, dir.file("w.safetensors")),
            (std::vector<std::pair<std::string, bool>>{{"w", true},
                                                       {"w.exp_avg", false}}));
  // A parameter is never made up: its absence is the usual error.
  states[0].role = StateRole::Parameter;
  std::swap(states[0], states[1]);
  states[0].role = StateRole::Parameter;
  EXPECT_NE(errorOf([&] {
              forEachState(fake.info,
                           SafeTensorsFile::open(dir.file("w.safetensors")),
                           [](int32_t, const std::string &, size_t, bool) {});
            }).find("no tensor 'w.exp_avg'"),
            std::string::npos);
  EXPECT_FALSE(artifactTrains(OneRankArtifact().info));
}

TEST(DscRunTargets, TeacherStatesComeFromTheTeachersFileUnderTheirOwnNames) {
  ScratchDir dir;
  OneRankArtifact fake;
  int64_t shape[1] = {3};
  StateDesc states[2] = {
      fake.states[0],
      {{"teacher.h.0.w", ElementType::BF16, 1, shape}, StateRole::Teacher}};
  fake.info.numStates = 2;
  fake.info.states = states;
  EXPECT_TRUE(hasTeacher(fake.info));
  EXPECT_FALSE(hasTeacher(OneRankArtifact().info));
  const float w[6] = {}, t[3] = {1.0f, 2.5f, -3.0f};
  writeSafeTensors(dir.file("w.safetensors"), {{"w", DType::F32, {2, 3}, w}});
  // The student's file need not hold the teacher: forEachState leaves it
  // for the teacher's file.
  EXPECT_EQ(presence(fake.info, dir.file("w.safetensors")),
            (std::vector<std::pair<std::string, bool>>{
                {"w", true}, {"teacher.h.0.w", false}}));
  // The teacher's file holds it as "h.0.w", in f32: rounded into bf16.
  writeSafeTensors(dir.file("t.safetensors"), {{"h.0.w", DType::F32, {3}, t}});
  SafeTensorsFile teacher = SafeTensorsFile::open(dir.file("t.safetensors"));
  std::vector<int32_t> read;
  forEachTeacherState(fake.info, teacher, [&](int32_t i, const StateDesc &own) {
    EXPECT_EQ(std::string(own.tensor.name), "h.0.w");
    uint16_t value[3];
    readState(own, teacher, 0, 1, value);
    EXPECT_EQ(bf16ToFloat(value[1]), 2.5f);
    read.push_back(i);
  });
  EXPECT_EQ(read, std::vector<int32_t>{1});
  // Missing or misshapen in the teacher's file: an error naming the file.
  writeSafeTensors(dir.file("t.safetensors"), {{"h.0.w", DType::F32, {2}, t}});
  EXPECT_EQ(errorOf([&] {
              forEachTeacherState(
                  fake.info, SafeTensorsFile::open(dir.file("t.safetensors")),
                  [](int32_t, const StateDesc &) {});
            }),
            dir.file("t.safetensors") +
                ": tensor 'h.0.w' is F32 [2], but the artifact expects BF16 [3]");
  writeSafeTensors(dir.file("t.safetensors"), {{"x", DType::F32, {3}, t}});
  EXPECT_THAT(errorOf([&] {
                forEachTeacherState(
                    fake.info, SafeTensorsFile::open(dir.file("t.safetensors")),
                    [](int32_t, const StateDesc &) {});
              }),
              HasSubstr("no tensor 'h.0.w'"));
}

/// A one-rank communicator that logs each allReduce it runs (" max" after
/// a maximum's count).
class LoggingComm final : public Communicator {
public:
  explicit LoggingComm(std::vector<std::string> &log)
      : Communicator(60), log_(log) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::unique_ptr<Communicator> split(int color, int) override {
    checkSplitColor(color);
    return std::make_unique<LoggingComm>(log_);
  }

private:
  void runAllReduce(const void *, void *, std::size_t count, CommDType,
                    ReduceOp op) override {
    log_.push_back("allReduce " + std::to_string(count) +
                   (op == ReduceOp::Max ? " max" : ""));
  }
  void runAllGather(const void *, void *, std::size_t, CommDType) override {}
  void runReduceScatter(const void *, void *, std::size_t, CommDType,
                        ReduceOp) override {}
  void runBroadcast(const void *, void *, std::size_t, CommDType,
                    int) override {}
  void runBarrier() override {}
  void runAllToAll(const void *, void *, std::size_t, CommDType) override {}
  [[noreturn]] void abortJob(int) override { std::abort(); }
  std::vector<std::string> &log_;
};

// allReduceMax (a vocabulary-parallel loss's largest logit) is the
// communicator's all-reduce with ReduceOp::Max, numbered and counted as the
// step's other all-reduces.
TEST(DscRunTargets, AllReduceMaxReducesWithMax) {
  std::vector<std::string> log;
  LoggingComm comm(log);
  CpuStream compute("compute", CpuStream::Mode::Inline),
      commStream("comm", CpuStream::Mode::Inline);
  RunStepContext context({}, {}, {}, nullptr, comm, {&compute, &commStream}, 1);
  float values[3] = {1, 2, 3};
  context.beginStep(1);
  context.allReduceMax(values, 3, ElementType::F32, 0, commStream,
                       CommGroup::World);
  context.allReduceSum(values, 1, ElementType::F32, 1, commStream,
                       CommGroup::World);
  commStream.synchronize();
  EXPECT_EQ(context.collectivesThisStep(), 2);
  EXPECT_EQ(log, (std::vector<std::string>{"allReduce 3 max", "allReduce 1"}));
}

TEST(DscRunTargets, CollectivesAreTasksOfTheCollectivesStream) {
  std::vector<std::string> log;
  LoggingComm comm(log);
  CpuStream compute("compute", CpuStream::Mode::Inline), commStream("comm");
  RunStepContext context({}, {}, {}, nullptr, comm, {&compute, &commStream}, 1);
  EXPECT_EQ(&context.stream(1), &commStream);
  // A task ahead of the collectives holds them back: they are enqueued on
  // the stream's worker thread, not run by the caller.
  std::promise<void> go;
  std::shared_future<void> started = go.get_future().share();
  commStream.enqueue([started] { started.wait(); }, "gate");
  float values[2] = {1, 2};
  context.beginStep(3);
  context.allReduceSum(values, 2, ElementType::F32, 0, commStream,
                       CommGroup::World);
  context.allReduceSum(values, 1, ElementType::F32, 1, commStream,
                       CommGroup::World);
  EXPECT_EQ(context.collectivesThisStep(), 2);
  EXPECT_TRUE(log.empty());
  go.set_value();
  commStream.synchronize();
  EXPECT_EQ(log, (std::vector<std::string>{"allReduce 2", "allReduce 1"}));
  // Another stream than the collectives stream, or a type the communicator
  // cannot sum, is refused when issued, naming the step and the collective.
  EXPECT_EQ(errorOf([&] {
              context.allReduceSum(values, 1, ElementType::F32, 2, compute,
                                   CommGroup::World);
            }),
            "step 3, collective 2 (allReduceSum of 1 f32): it was issued on "
            "stream 'compute', but the artifact's collectives stream is "
            "'comm'");
  uint8_t flag = 0;
  EXPECT_THAT(errorOf([&] {
                context.allReduceSum(&flag, 1, ElementType::I1, 3, commStream,
                                     CommGroup::World);
              }),
              HasSubstr("cannot sum i1"));
  commStream.synchronize();
  EXPECT_EQ(log.size(), 2u);
  EXPECT_EQ(&context.communicator(), &comm);
  // Without a collectives stream, no collective at all.
  RunStepContext none({}, {}, {}, nullptr, comm, {&compute}, -1);
  none.beginStep(1);
  EXPECT_THAT(errorOf([&] {
                none.allReduceSum(values, 1, ElementType::F32, 0, compute,
                                  CommGroup::World);
              }),
              HasSubstr("the artifact's collectives stream is none"));
}

} // namespace
