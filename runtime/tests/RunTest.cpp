//===- RunTest.cpp - dsc-run's pieces, in process -------------------------===//
//
// The command line, the checks of an artifact against the job, state
// loading, the StepContext and the metrics, without MPI: collectives go to
// a one-rank loopback communicator. The test artifacts (Inputs/) are loaded
// with dlopen, so this executable exports the runtime as dsc-run does.
// RunToolTest.cpp runs the dsc-run binary itself under mpirun.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/ArtifactLibrary.h"
#include "dsc/runtime/Comm.h"
#include "dsc/runtime/MemoryPool.h"
#include "dsc/runtime/NvmeStore.h"
#include "dsc/runtime/Run.h"
#include "dsc/runtime/SafeTensors.h"
#include "dsc/runtime/Stream.h"

#include "ErrorOf.h"
#include "Inputs/TinyModel.h"
#include "ScratchDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

using namespace dsc::rt;
using dsc::rt::test::ScratchDir;
using dsc::rt::test::TinyModel;
using testing::HasSubstr;

namespace {

std::string artifactPath(const std::string &name) {
  return std::string(DSC_TEST_ARTIFACT_DIR) + "/" + name + ".so";
}

using test::errorOf;

/// A communicator of one rank: every collective is the identity, but it is
/// numbered and counted like any other.
class LoopbackComm final : public Communicator {
public:
  LoopbackComm() : Communicator(60) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::unique_ptr<Communicator> split(int color, int) override {
    checkSplitColor(color);
    return std::make_unique<LoopbackComm>();
  }

private:
  void runAllReduce(const void *send, void *recv, std::size_t count,
                    CommDType dtype, ReduceOp) override {
    if (send != recv)
      std::memmove(recv, send, count * byteSize(dtype));
  }
  void runAllGather(const void *, void *, std::size_t, CommDType) override {}
  void runReduceScatter(const void *, void *, std::size_t, CommDType,
                        ReduceOp) override {}
  void runBroadcast(const void *, void *, std::size_t, CommDType,
                    int) override {}
  void runBarrier() override {}
  void runAllToAll(const void *, void *, std::size_t, CommDType) override {}
  [[noreturn]] void abortJob(int) override { std::abort(); }
};

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

std::vector<std::string> goodArgs() {
  return {"step.so", "--weights", "w.safetensors", "--data=d.bin",
          "--batch",  "8",         "--seq",         "16",
          "--steps",  "3"};
}

TEST(DscRunOptions, ParsesEveryOption) {
  std::vector<std::string> args = goodArgs();
  args.insert(args.end(), {"--eval", "--metrics", "m.csv", "--nvme-path",
                           "/mnt/nvme"});
  RunOptions options = parseRunOptions(args);
  EXPECT_EQ(options.nvmePath, "/mnt/nvme");
  EXPECT_EQ(options.artifact, "step.so");
  EXPECT_EQ(options.weights, "w.safetensors");
  EXPECT_EQ(options.data, "d.bin");
  EXPECT_EQ(options.batch, 8);
  EXPECT_EQ(options.seq, 16);
  EXPECT_EQ(options.steps, 3);
  EXPECT_TRUE(options.eval);
  EXPECT_EQ(options.metrics, "m.csv");
  EXPECT_EQ(options.seed, 1234); // the default
  EXPECT_FALSE(options.help);
  args.insert(args.end(), {"--seed", "0"});
  EXPECT_EQ(parseRunOptions(args).seed, 0);
  args.back() = "--seed=987654321987";
  args.erase(args.end() - 2);
  EXPECT_EQ(parseRunOptions(args).seed, 987654321987);
}

TEST(DscRunOptions, HelpWinsOverEverythingElse) {
  EXPECT_TRUE(parseRunOptions({"--bogus", "-h"}).help);
  EXPECT_TRUE(parseRunOptions({"--help"}).help);
}

TEST(DscRunOptions, RejectsBadCommandLines) {
  struct Case {
    std::vector<std::string> change; // appended to goodArgs()
    const char *message;
  };
  const Case cases[] = {
      {{"--bogus"}, "unknown option '--bogus'"},
      {{"-x"}, "unknown option '-x'"},
      {{"other.so"}, "more than one artifact given ('step.so' and 'other.so')"},
      {{"--steps", "0"}, "--steps needs a positive integer, got '0'"},
      {{"--batch", "-4"}, "--batch needs a positive integer, got '-4'"},
      {{"--seq", "12abc"}, "--seq needs a positive integer, got '12abc'"},
      {{"--steps", "99999999999999999999"}, "--steps needs a positive integer"},
      {{"--metrics="}, "--metrics needs a file name"},
      {{"--eval=1"}, "--eval takes no value"},
      {{"--save="}, "--save needs a directory"},
      {{"--resume", ""}, "--resume needs a directory"},
      {{"--save-interval", "2"}, "--save-interval needs --save DIR"},
      {{"--metrics"}, "--metrics needs a value"},
      {{"--seed", "-1"}, "--seed needs a positive integer, got '-1'"},
      {{"--seed", "x"}, "--seed needs a positive integer, got 'x'"},
      {{"--nvme-path="}, "--nvme-path needs a directory"},
  };
  for (const Case &c : cases) {
    std::vector<std::string> args = goodArgs();
    args.insert(args.end(), c.change.begin(), c.change.end());
    try {
      parseRunOptions(args);
      ADD_FAILURE() << "accepted " << c.change[0];
    } catch (const UsageError &error) {
      EXPECT_THAT(error.what(), HasSubstr(c.message));
    }
  }
}

TEST(DscRunOptions, RequiresEachOption) {
  const char *required[] = {"--weights", "--data", "--steps"};
  for (const char *option : required) {
    std::vector<std::string> args = goodArgs(), kept;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i] == option) {
        ++i; // and its value
        continue;
      }
      if (args[i].rfind(std::string(option) + "=", 0) == 0)
        continue;
      kept.push_back(args[i]);
    }
    EXPECT_THAT(errorOf([&] { parseRunOptions(kept); }),
                HasSubstr(std::string("missing required option ") + option));
  }
  EXPECT_EQ(errorOf([] { parseRunOptions({"--steps", "1"}); }),
            "no artifact given");
}

TEST(DscRunOptions, BatchAndSequenceDefaultToTheArtifacts) {
  RunOptions options = parseRunOptions(
      {"step.so", "--weights", "w.safetensors", "--data", "d.bin", "--steps",
       "3"});
  EXPECT_EQ(options.batch, 0); // planFeeds fills in the artifact's
  EXPECT_EQ(options.seq, 0);
}

//===----------------------------------------------------------------------===//
// The artifact against the job
//===----------------------------------------------------------------------===//

/// An ArtifactInfo to vary: tokens and targets i64 [2, 4] for 2 ranks.
struct FakeArtifact {
  int64_t inputShape[2] = {2, 4};
  int64_t weightShape[2] = {3, 5};
  int64_t shardShape[1] = {8}; // ceil(15 / 2), for partitioning `w`
  StateDesc states[1] = {
      {{"w", ElementType::F32, 2, weightShape}, StateRole::Parameter}};
  TensorDesc inputs[2] = {{"tokens", ElementType::I64, 2, inputShape},
                          {"targets", ElementType::I64, 2, inputShape}};
  TensorDesc outputs[1] = {{"loss", ElementType::F32, 0, nullptr}};
  ArtifactInfo info{kArtifactAbiVersion, "cpu", "fake.mlir", 2,
                    /*expertParallelSize=*/1, 1024, 1, states, 2, inputs, 1,
                    outputs, 0, nullptr, /*gradAccumSteps=*/1,
                    /*hostArenaBytes=*/0, /*tensorParallelSize=*/1};
  RunOptions options;
  /// Makes `w` a partitioned state over `group`: its shard [8] (15
  /// elements over 2 ranks).
  void partition(CommGroup group) {
    states[0].tensor.rank = 1;
    states[0].tensor.shape = shardShape;
    states[0].wholeRank = 2;
    states[0].wholeShape = weightShape;
    states[0].partitionGroup = static_cast<int32_t>(group);
  }
  FakeArtifact() {
    options.artifact = "fake.so";
    options.batch = 4;
    options.seq = 4;
  }
};

TEST(DscRunPlan, FeedsTokensAndTargets) {
  FakeArtifact fake;
  FeedPlan plan = planFeeds(fake.info, fake.options, 2);
  EXPECT_EQ(plan.tokensInput, 0);
  EXPECT_EQ(plan.targetsInput, 1);
  EXPECT_EQ(plan.lossOutput, 0);
  EXPECT_EQ(plan.microBatch, 2);
  EXPECT_EQ(plan.seqLen, 4);
}

TEST(DscRunPlan, TokenIdsMustFitTheSmallerIndexLimit) {
  FakeArtifact fake;
  EXPECT_EQ(planFeeds(fake.info, fake.options, 2).tokenLimit, 0);
  fake.inputs[0].indexLimit = 96; // the embedding's rows
  EXPECT_EQ(planFeeds(fake.info, fake.options, 2).tokenLimit, 96);
  fake.inputs[1].indexLimit = 50; // the classifier's classes
  EXPECT_EQ(planFeeds(fake.info, fake.options, 2).tokenLimit, 50);
}

TEST(DscRunPlan, FindsTheLearningRateOutput) {
  FakeArtifact fake;
  TensorDesc outputs[2] = {{"loss", ElementType::F32, 0, nullptr},
                           {"lr", ElementType::F32, 0, nullptr}};
  fake.info.numOutputs = 2;
  fake.info.outputs = outputs;
  EXPECT_EQ(planFeeds(fake.info, fake.options, 2).lrOutput, 1);
  int64_t two[1] = {2};
  outputs[1] = {"lr", ElementType::F32, 1, two};
  EXPECT_EQ(errorOf([&] { planFeeds(fake.info, fake.options, 2); }),
            "fake.so: artifact output 'lr' is f32 [2], expected one f32 or "
            "f64 element");
  fake.info.numOutputs = 1;
  EXPECT_EQ(planFeeds(fake.info, fake.options, 2).lrOutput, -1);
}

TEST(DscRunPlan, AcceptsTokensAlone) {
  FakeArtifact fake; // BERT's graph has no use for targets
  fake.info.numInputs = 1;
  FeedPlan plan = planFeeds(fake.info, fake.options, 2);
  EXPECT_EQ(plan.tokensInput, 0);
  EXPECT_EQ(plan.targetsInput, -1);
}

TEST(DscRunPlan, RejectsAJobTheArtifactDoesNotFit) {
  {
    FakeArtifact fake;
    EXPECT_EQ(errorOf([&] { planFeeds(fake.info, fake.options, 4); }),
              "fake.so: artifact was compiled for 2 rank(s), but the job has "
              "4 (mpirun -np 2)");
  }
  {
    FakeArtifact fake;
    fake.options.batch = 2;
    EXPECT_EQ(errorOf([&] { planFeeds(fake.info, fake.options, 2); }),
              "--batch 2 does not match the artifact: its micro batch 2 per "
              "rank times 2 data-parallel rank(s) is 4 samples per step "
              "(DeepSpeed's train_batch_size); leave --batch out to take it");
  }
  {
    FakeArtifact fake;
    fake.options.seq = 8;
    EXPECT_EQ(errorOf([&] { planFeeds(fake.info, fake.options, 2); }),
              "--seq 8 does not match the artifact's sequence length 4 "
              "(input 'tokens' is i64 [2, 4]); leave --seq out to take it");
  }
  {
    FakeArtifact fake;
    fake.inputs[1].name = "labels";
    EXPECT_THAT(errorOf([&] { planFeeds(fake.info, fake.options, 2); }),
                HasSubstr("input 'labels' (i64 [2, 4]) is not one a token "
                          "file can feed; a token file feeds inputs named "
                          "'tokens' and 'targets' (the next tokens): give "
                          "the data as a .safetensors file of samples"));
  }
  {
    FakeArtifact fake;
    fake.inputs[0].type = ElementType::I32;
    EXPECT_THAT(errorOf([&] { planFeeds(fake.info, fake.options, 2); }),
                HasSubstr("input 'tokens' is i32 [2, 4], expected i64"));
  }
  {
    FakeArtifact fake;
    int64_t other[2] = {2, 5};
    fake.inputs[1].shape = other;
    EXPECT_THAT(errorOf([&] { planFeeds(fake.info, fake.options, 2); }),
                HasSubstr("differ in shape"));
  }
  {
    FakeArtifact fake;
    fake.outputs[0].name = "logits";
    EXPECT_THAT(errorOf([&] { planFeeds(fake.info, fake.options, 2); }),
                HasSubstr("no output named 'loss'"));
  }
  {
    FakeArtifact fake;
    fake.outputs[0].type = ElementType::I64;
    EXPECT_THAT(errorOf([&] { planFeeds(fake.info, fake.options, 2); }),
                HasSubstr("output 'loss' is i64 []"));
  }
  {
    FakeArtifact fake;
    fake.info.target = "cuda";
    EXPECT_THAT(errorOf([&] { planFeeds(fake.info, fake.options, 2); }),
                HasSubstr("target 'cuda'"));
  }
  {
    FakeArtifact fake;
    fake.info.numInputs = 0;
    EXPECT_THAT(errorOf([&] { planFeeds(fake.info, fake.options, 2); }),
                HasSubstr("no input named 'tokens' or 'targets'"));
  }
}

TEST(DscRunPlan, TheDataFormatFollowsTheFileName) {
  EXPECT_EQ(dataFormatOf("d.bin"), DataFormat::Tokens);
  EXPECT_EQ(dataFormatOf("tokens"), DataFormat::Tokens);
  EXPECT_EQ(dataFormatOf("safetensors"), DataFormat::Tokens);
  EXPECT_EQ(dataFormatOf("dir/s.safetensors"), DataFormat::Samples);
}

TEST(DscRunPlan, BatchIsDeepSpeedsTrainBatchSize) {
  FakeArtifact fake;
  fake.options.batch = 0; // not given: the artifact's
  fake.options.seq = 0;
  FeedPlan plan = planFeeds(fake.info, fake.options, 2);
  EXPECT_EQ(plan.trainBatch, 4);
  EXPECT_EQ(plan.seqLen, 4);
  // Micro batch 2 on 2 ranks, 3 micro-batches per step: 12 samples a step.
  fake.info.gradAccumSteps = 3;
  EXPECT_EQ(planFeeds(fake.info, fake.options, 2).trainBatch, 12);
  fake.options.batch = 12;
  EXPECT_EQ(planFeeds(fake.info, fake.options, 2).trainBatch, 12);
  fake.options.batch = 4; // the micro-step's batch, not the step's
  EXPECT_EQ(errorOf([&] { planFeeds(fake.info, fake.options, 2); }),
            "--batch 4 does not match the artifact: its micro batch 2 per "
            "rank times 2 data-parallel rank(s) times 3 micro-batches per "
            "step (gradient accumulation) is 12 samples per step "
            "(DeepSpeed's train_batch_size); leave --batch out to take it");
}

TEST(DscRunPlan, SamplesFeedAnyInputsByName) {
  FakeArtifact fake;
  fake.options.data = "train.safetensors";
  fake.options.batch = 0;
  fake.options.seq = 0;
  int64_t image[4] = {2, 3, 8, 8}, labels[1] = {2}, ids[2] = {2, 6};
  TensorDesc inputs[3] = {{"pixel_values", ElementType::F32, 4, image},
                          {"labels", ElementType::I64, 1, labels, 10},
                          {"attention_mask", ElementType::I1, 2, ids}};
  fake.info.inputs = inputs;
  fake.info.numInputs = 2;
  FeedPlan plan = planFeeds(fake.info, fake.options, 2);
  EXPECT_EQ(plan.format, DataFormat::Samples);
  EXPECT_EQ(plan.microBatch, 2);
  EXPECT_EQ(plan.seqLen, 1); // no token ids
  EXPECT_EQ(plan.trainBatch, 4);
  EXPECT_EQ(plan.tokensInput, -1);
  fake.options.seq = 16;
  EXPECT_EQ(errorOf([&] { planFeeds(fake.info, fake.options, 2); }),
            "--seq 16 does not match the artifact's sequence length 1 (no "
            "input holds token ids); leave --seq out to take it");
  fake.options.seq = 0;
  // A mask is not token ids; integer ids of two dimensions are.
  fake.info.numInputs = 3;
  EXPECT_EQ(planFeeds(fake.info, fake.options, 2).seqLen, 1);
  inputs[2].type = ElementType::I64;
  EXPECT_EQ(planFeeds(fake.info, fake.options, 2).seqLen, 6);

  std::vector<SampleSpec> specs = sampleSpecs(fake.info);
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_EQ(specs[0].name, "pixel_values");
  EXPECT_EQ(specs[0].dtype, DType::F32);
  EXPECT_EQ(specs[0].shape, (std::vector<int64_t>{3, 8, 8}));
  EXPECT_EQ(specs[1].shape, std::vector<int64_t>{});
  EXPECT_EQ(specs[1].indexLimit, 10);
  EXPECT_EQ(specs[2].dtype, DType::I64);

  int64_t three[1] = {3};
  inputs[1].shape = three;
  EXPECT_EQ(errorOf([&] { planFeeds(fake.info, fake.options, 2); }),
            "fake.so: artifact inputs 'pixel_values' f32 [2, 3, 8, 8] and "
            "'labels' i64 [3] differ in their first (micro-batch) dimension");
  inputs[1].rank = 0;
  EXPECT_THAT(errorOf([&] { planFeeds(fake.info, fake.options, 2); }),
              HasSubstr("input 'labels' is i64 [], which has no micro-batch "
                        "dimension"));
  fake.info.numInputs = 0;
  EXPECT_EQ(errorOf([&] { planFeeds(fake.info, fake.options, 2); }),
            "fake.so: artifact has no inputs to feed");
}

TEST(DscRunArtifactInfo, ValidationNamesTheProblem) {
  struct Case {
    void (*spoil)(FakeArtifact &);
    const char *message;
  };
  const Case cases[] = {
      {[](FakeArtifact &f) { f.info.abiVersion = 0; },
       "artifact ABI version 0, but this dsc-run reads version"},
      {[](FakeArtifact &f) { f.info.target = nullptr; }, "names no target"},
      {[](FakeArtifact &f) { f.info.worldSize = 0; }, "world size 0"},
      {[](FakeArtifact &f) { f.info.arenaBytes = -1; }, "negative arena"},
      {[](FakeArtifact &f) { f.info.states = nullptr; },
       "1 states but no state array"},
      {[](FakeArtifact &f) { f.states[0].tensor.name = ""; },
       "state 0 has no name"},
      {[](FakeArtifact &f) { f.weightShape[1] = -5; },
       "state 0 'w' has negative dimension -5"},
      {[](FakeArtifact &f) {
         f.weightShape[0] = int64_t(1) << 40;
         f.weightShape[1] = int64_t(1) << 40;
       },
       "has more bytes than int64 can count"},
      {[](FakeArtifact &f) { f.states[0].tensor.type = ElementType(42); },
       "unknown element type 42"},
      {[](FakeArtifact &f) { f.inputs[0].indexLimit = -1; },
       "input 0 'tokens' has negative index limit -1"},
      {[](FakeArtifact &f) { f.states[0].tensor.indexLimit = 3; },
       "state 0 'w' of f32 has an index limit; only integer tensors index"},
      {[](FakeArtifact &f) { f.states[0].role = StateRole(7); },
       "unknown role 7"},
      {[](FakeArtifact &f) { f.inputs[1].name = "tokens"; },
       "two inputs named 'tokens'"},
      {[](FakeArtifact &f) { f.outputs[0].rank = 99; }, "has rank 99"},
      {[](FakeArtifact &f) { f.inputs[0].shape = nullptr; }, "but no shape"},
      {[](FakeArtifact &f) { f.info.gradAccumSteps = 0; },
       "accumulates gradients over 0 micro-batches; at least 1 expected"},
      {[](FakeArtifact &f) { f.info.expertParallelSize = 0; },
       "fake.so: artifact expert-parallel size 0 does not divide its world "
       "size 2"},
      {[](FakeArtifact &f) { f.info.expertParallelSize = 3; },
       "fake.so: artifact expert-parallel size 3 does not divide its world "
       "size 2"},
      {[](FakeArtifact &f) { f.states[0].partitionGroup = 1; },
       "state 'w' is not partitioned but names partition group 1"},
      {[](FakeArtifact &f) {
         f.partition(CommGroup::Data);
         f.states[0].partitionGroup = 5;
       },
       "state 'w' is partitioned over group 5; only the world (0), the "
       "expert group (1), the expert-data group (2), the tensor group (3) "
       "and the data group (4) partition states"},
      {[](FakeArtifact &f) {
         // A slice of [3, 5] in 3 blocks over T = 2: 15 is no 3 x 2 slices.
         f.partition(CommGroup::Data);
         f.info.tensorParallelSize = 2;
         f.states[0].partitionBlocks = 3;
       },
       "state 'w' partitions a slice of [3, 5] in 3 block(s) over a tensor "
       "group of 2 rank(s), which does not tile it"},
      {[](FakeArtifact &f) {
         f.partition(CommGroup::ExpertData);
         f.info.expertParallelSize = 2;
       },
       "state 'w' partitions the experts of [3, 5] over expert groups of 2 "
       "rank(s), which must divide its leading dimension"},
      {[](FakeArtifact &f) {
         f.partition(CommGroup::ExpertData); // P = 1: D = 2, shards of 8
         f.shardShape[0] = 15;
       },
       "state 'w' is a shard of 15 elements, but its whole tensor [3, 5] over "
       "the expert_data group of 2 rank(s) needs shards of 8"},
      {[](FakeArtifact &f) {
         f.partition(CommGroup::World);
         f.shardShape[0] = 7;
       },
       "state 'w' is a shard of 7 elements, but its whole tensor [3, 5] over "
       "the world group of 2 rank(s) needs shards of 8"},
      {[](FakeArtifact &f) {
         f.partition(CommGroup::Expert); // P = 1: the whole
       },
       "over the expert group of 1 rank(s) needs shards of 15"},
  };
  {
    FakeArtifact fake;
    EXPECT_NO_THROW(validateArtifactInfo(fake.info, "fake.so"));
    // ZeRO's partition of w over 2 ranks, and expert parallelism's over 2
    // or 1 (a shard of the whole then).
    fake.partition(CommGroup::World);
    EXPECT_NO_THROW(validateArtifactInfo(fake.info, "fake.so"));
    fake.partition(CommGroup::Expert);
    fake.info.expertParallelSize = 2;
    EXPECT_NO_THROW(validateArtifactInfo(fake.info, "fake.so"));
    fake.info.expertParallelSize = 1;
    fake.shardShape[0] = 15;
    EXPECT_NO_THROW(validateArtifactInfo(fake.info, "fake.so"));
    // ZeRO's partition of the rank's experts over its expert-data group:
    // with P = 1 all of w over D = 2 ranks.
    fake.partition(CommGroup::ExpertData);
    fake.shardShape[0] = 8;
    EXPECT_NO_THROW(validateArtifactInfo(fake.info, "fake.so"));
    // ZeRO's partition over the data group (T = 1: D = 2) of the whole,
    // and of a (T = 1) slice in 3 blocks.
    fake.partition(CommGroup::Data);
    EXPECT_NO_THROW(validateArtifactInfo(fake.info, "fake.so"));
    fake.states[0].partitionBlocks = 3;
    EXPECT_NO_THROW(validateArtifactInfo(fake.info, "fake.so"));
  }
  for (const Case &c : cases) {
    FakeArtifact fake;
    c.spoil(fake);
    EXPECT_THAT(errorOf([&] { validateArtifactInfo(fake.info, "fake.so"); }),
                HasSubstr(c.message));
  }
}

//===----------------------------------------------------------------------===//
// State
//===----------------------------------------------------------------------===//

TEST(DscRunLoadStates, ReadsEveryStateByName) {
  ScratchDir dir;
  TinyModel model;
  model.writeWeights(dir.file("w.safetensors"));
  auto artifact = ArtifactLibrary::open(artifactPath("tiny_w1"));
  MemoryPool pool("state");
  std::vector<void *> states = loadStates(
      artifact->info(), SafeTensorsFile::open(dir.file("w.safetensors")), pool);
  ASSERT_EQ(states.size(), 3u);
  EXPECT_EQ(std::memcmp(states[0], model.wte.data(), 16 * 8 * 4), 0);
  EXPECT_EQ(std::memcmp(states[1], model.head.data(), 8 * 4), 0);
  EXPECT_EQ(std::memcmp(states[2], model.bias.data(), 16 * 4), 0);
  // Each rounded to the pool's 256 bytes; "unused.extra" is not loaded.
  EXPECT_EQ(pool.highWaterMark(), 512u + 256u + 256u);
}

TEST(DscRunLoadStates, NamesTheTensorAndBothShapes) {
  FakeArtifact fake;
  ScratchDir dir;
  std::vector<float> data(3 * 6);
  std::vector<double> wide(3 * 5);
  MemoryPool pool("state");
  auto load = [&](const std::vector<TensorView> &tensors) {
    writeSafeTensors(dir.file("w.safetensors"), tensors);
    return errorOf([&] {
      loadStates(fake.info, SafeTensorsFile::open(dir.file("w.safetensors")),
                 pool);
    });
  };
  EXPECT_EQ(load({{"v", DType::F32, {3, 5}, data.data()}}),
            dir.file("w.safetensors") +
                ": no tensor 'w'; the artifact needs it as f32 [3, 5]");
  EXPECT_EQ(load({{"w", DType::F32, {3, 6}, data.data()}}),
            dir.file("w.safetensors") +
                ": tensor 'w' is F32 [3, 6], but the artifact expects F32 "
                "[3, 5]");
  EXPECT_EQ(load({{"w", DType::F64, {3, 5}, wide.data()}}),
            dir.file("w.safetensors") +
                ": tensor 'w' is F64 [3, 5], but the artifact expects F32 "
                "[3, 5]");
  EXPECT_EQ(load({{"w", DType::F32, {15}, data.data()}}),
            dir.file("w.safetensors") +
                ": tensor 'w' is F32 [15], but the artifact expects F32 [3, 5]");
}

//===----------------------------------------------------------------------===//
// Loading artifacts and running a step
//===----------------------------------------------------------------------===//

TEST(DscRunArtifactLibrary, LoadsTheTinyArtifact) {
  auto artifact = ArtifactLibrary::open(artifactPath("tiny_w2"));
  const ArtifactInfo &info = artifact->info();
  EXPECT_EQ(info.worldSize, 2);
  EXPECT_STREQ(info.target, "cpu");
  ASSERT_EQ(info.numStates, 3);
  EXPECT_STREQ(info.states[0].tensor.name, "wte.weight");
  EXPECT_EQ(describeType(info.states[0].tensor), "f32 [16, 8]");
  EXPECT_EQ(describeType(info.inputs[0]), "i64 [2, 4]");
  EXPECT_EQ(tensorBytes(info.inputs[0]), 64u);
  EXPECT_EQ(findTensor(info.outputs, info.numOutputs, "loss"), 0);
  EXPECT_EQ(findTensor(info.outputs, info.numOutputs, "nope"), -1);
}

TEST(DscRunArtifactLibrary, RefusesWhatIsNoArtifact) {
  ScratchDir dir;
  EXPECT_THAT(errorOf([&] { ArtifactLibrary::open(dir.file("none.so")); }),
              HasSubstr("none.so: cannot open artifact: No such file"));
  EXPECT_THAT(errorOf([&] { ArtifactLibrary::open(dir.path()); }),
              HasSubstr("artifact is not a regular file"));
  std::string text = dir.write("text.so", "not an ELF file\n");
  EXPECT_THAT(errorOf([&] { ArtifactLibrary::open(text); }),
              HasSubstr("text.so: cannot load artifact: "));
  EXPECT_THAT(
      errorOf([&] { ArtifactLibrary::open(artifactPath("not_an_artifact")); }),
      HasSubstr("not a dsc artifact: it does not export dsc_artifact_info"));
  EXPECT_THAT(errorOf([&] { ArtifactLibrary::open(artifactPath("tiny_abi99")); }),
              HasSubstr("artifact ABI version 99, but this dsc-run reads "
                        "version " +
                        std::to_string(kArtifactAbiVersion)));
  std::string missing =
      errorOf([&] { ArtifactLibrary::open(artifactPath("tiny_missing_symbol")); });
  EXPECT_THAT(missing, HasSubstr("undefined symbol"));
  EXPECT_THAT(missing, HasSubstr("dsc::rt::functionNotInTheRuntime(int)"));
}

TEST(DscRunArtifactLibrary, StepComputesTheExpectedLoss) {
  ScratchDir dir;
  TinyModel model;
  model.writeWeights(dir.file("w.safetensors"));
  std::vector<uint16_t> data = dsc::rt::test::tinyTokens();
  auto artifact = ArtifactLibrary::open(artifactPath("tiny_w1"));
  const ArtifactInfo &info = artifact->info();
  MemoryPool pool("all");
  std::vector<void *> states =
      loadStates(info, SafeTensorsFile::open(dir.file("w.safetensors")), pool);
  std::vector<int64_t> tokens(16), targets(16);
  for (int64_t j = 0; j < 4; ++j) // step 0: sequences 0..3
    for (int64_t t = 0; t < 4; ++t) {
      tokens[j * 4 + t] = data[j * 4 + t];
      targets[j * 4 + t] = data[j * 4 + t + 1];
    }
  float loss = 0;
  LoopbackComm comm;
  ASSERT_EQ(info.numStreams, 1);
  CpuStream stream(info.streams[0].name);
  RunStepContext context(states, {tokens.data(), targets.data()}, {&loss},
                         pool.allocate(size_t(info.arenaBytes)), comm,
                         {&stream}, 0);
  context.beginStep(1);
  artifact->step(context);
  EXPECT_NEAR(loss, model.expectedLoss(data, 0, 4, 4), 1e-5);
  EXPECT_EQ(context.collectivesThisStep(), 2);
  EXPECT_EQ(comm.stats()[CollectiveKind::AllReduce].calls, 2u);

  // The step key: seed, step, first sample, training.
  context.setSeed(99);
  context.beginStep(7, 12);
  const int64_t *key = context.stepKey();
  EXPECT_EQ(std::vector<int64_t>(key, key + 4), (std::vector<int64_t>{99, 7, 12, 1}));
  context.setTraining(false);
  key = context.stepKey();
  EXPECT_EQ(key[3], 0);
  context.setTraining(true);

  // Gradient accumulation: whether the call ends its optimizer step
  // (every call does unless told otherwise).
  EXPECT_TRUE(context.endsOptimizerStep());
  context.beginStep(7, 0, /*endsOptimizerStep=*/false);
  EXPECT_FALSE(context.endsOptimizerStep());
  context.beginStep(7, 4);
  EXPECT_TRUE(context.endsOptimizerStep());

  // An Error thrown by generated code (through the runtime's check)
  // reaches the caller with its message.
  tokens[3] = 20;
  context.beginStep(2);
  EXPECT_THAT(errorOf([&] { artifact->step(context); }),
              HasSubstr("TinyArtifact: token id 20"));
}

TEST(DscRunStepContext, SequenceNumbersMustGrowWithinAStep) {
  LoopbackComm comm;
  float value = 1;
  CpuStream s("comm", CpuStream::Mode::Inline);
  RunStepContext context({}, {}, {}, nullptr, comm, {&s}, 0);
  context.beginStep(7);
  context.allReduceSum(&value, 1, ElementType::F32, 1, s, CommGroup::World);
  context.allReduceSum(&value, 1, ElementType::F32, 3, s, CommGroup::World);
  EXPECT_EQ(errorOf([&] {
              context.allReduceSum(&value, 1, ElementType::F32, 3, s,
                                   CommGroup::World);
            }),
            "step 7, collective 3 (allReduceSum of 1 f32): sequence numbers "
            "must grow within a step; the previous collective of this step "
            "was 3");
  context.beginStep(8); // numbering starts over
  EXPECT_NO_THROW(context.allReduceSum(&value, 1, ElementType::F32, 1, s,
                                       CommGroup::World));
  EXPECT_EQ(comm.stats()[CollectiveKind::AllReduce].calls, 3u);
}

// ZeRO-Infinity's reads and writes: tasks of the stream, in its order, on
// the run's store (state ids are the artifact's state indices), counted;
// a wrong size or a run without a store is an Error at the call.
TEST(DscRunStepContext, NvmeReadsAndWritesRunOnTheStream) {
  ScratchDir dir;
  NvmeOptions options;
  options.path = dir.path();
  options.notice = [](const std::string &) {};
  NvmeStore store(options);
  store.addState(1, 64);
  LoopbackComm comm;
  CpuStream s("nvme", CpuStream::Mode::Threaded);
  RunStepContext context({nullptr, nullptr}, {}, {}, nullptr, comm, {&s});
  EXPECT_THAT(errorOf([&] {
                float x[16];
                context.nvmeRead(1, x, sizeof x, s);
              }),
              HasSubstr("the run has no NVMe store"));
  context.setNvmeStore(&store);
  std::vector<float> out(16), in(16);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = float(i) + 0.5f;
  context.nvmeWrite(1, out.data(), 64, s);
  context.nvmeRead(1, in.data(), 64, s); // after the write: the stream's order
  s.synchronize();
  EXPECT_EQ(in, out);
  EXPECT_EQ(context.nvmeReads().calls, 1);
  EXPECT_EQ(context.nvmeWrites().bytes, 64);
  EXPECT_THAT(errorOf([&] { context.nvmeRead(1, in.data(), 32, s); }),
              HasSubstr("transfers 32 bytes of NVMe state 1, which is not the "
                        "state's size"));
  EXPECT_THAT(errorOf([&] { context.nvmeRead(0, in.data(), 64, s); }),
              HasSubstr("state 0"));
  EXPECT_EQ(context.nvmeReads().calls, 1);
}

TEST(DscRunStepContext, RefusesTypesTheCommunicatorCannotSum) {
  LoopbackComm comm;
  uint8_t flag = 0;
  CpuStream s("comm", CpuStream::Mode::Inline);
  RunStepContext context({}, {}, {}, nullptr, comm, {&s}, 0);
  context.beginStep(1);
  EXPECT_EQ(errorOf([&] {
              context.allReduceSum(&flag, 1, ElementType::I1, 1, s,
                                   CommGroup::World);
            }),
            "step 1, collective 1 (allReduceSum of 1 i1): the communicator "
            "cannot sum i1 elements");
  uint16_t half = 0; // f16 sums (mixed precision)
  EXPECT_NO_THROW(
      context.allReduceSum(&half, 1, ElementType::F16, 2, s, CommGroup::World));
  EXPECT_THAT(errorOf([&] { context.state(0); }),
              HasSubstr("artifact asked for state 0 of 0"));
  double d = 2;
  EXPECT_NO_THROW(
      context.allReduceSum(&d, 1, ElementType::F64, 3, s, CommGroup::World));
  EXPECT_EQ(d, 2);
}

TEST(DscRunStepContext, CollectivesNameTheirGroup) {
  LoopbackComm comm; // one rank: every group is the job
  CpuStream s("comm", CpuStream::Mode::Inline);
  RunStepContext context({}, {}, {}, nullptr, comm, {&s}, 0);
  context.beginStep(2);
  float values[2] = {1, 2};
  // One sequence over the step, whatever the group.
  context.allToAll(values, 2, ElementType::F32, 1, s, CommGroup::Expert);
  context.allReduceSum(values, 2, ElementType::F32, 2, s,
                       CommGroup::ExpertData);
  EXPECT_EQ(errorOf([&] {
              context.allGather(values, values, 1, ElementType::F32, 2, s,
                                CommGroup::World);
            }),
            "step 2, collective 2 (allGather of 1 f32): sequence numbers "
            "must grow within a step; the previous collective of this step "
            "was 2");
  EXPECT_EQ(errorOf([&] {
              context.allToAll(values, 1, ElementType::F32, 4, s,
                               static_cast<CommGroup>(7));
            }),
            "step 2, collective 4 (allToAll of 1 f32 over group 7): no such "
            "communicator group (0: world, 1: expert, 2: expert_data, 3: "
            "tensor, 4: data, 5: pipeline)");
  EXPECT_EQ(errorOf([&] {
              context.allToAll(values, 1, ElementType::I1, 5, s,
                               CommGroup::Expert);
            }),
            "step 2, collective 5 (allToAll of 1 i1 over the expert group): "
            "the communicator cannot move i1 elements");
  // Counted per group; on one rank every group's communicator is the job's.
  EXPECT_EQ(
      context.groupStats(CommGroup::Expert)[CollectiveKind::AllToAll].calls,
      1u);
  EXPECT_EQ(context.groupStats(CommGroup::ExpertData).total().calls, 1u);
  EXPECT_EQ(context.groupStats(CommGroup::World).total().calls, 0u);
  EXPECT_EQ(comm.stats().total().calls, 2u);
  EXPECT_EQ(context.groupSize(CommGroup::Expert), 1);
  EXPECT_EQ(context.groupRank(CommGroup::ExpertData), 0);
}

//===----------------------------------------------------------------------===//
// Log line and metrics
//===----------------------------------------------------------------------===//

TEST(DscRunMetrics, StepLineStartsWithStepAndLoss) {
  StepRecord record =
      makeStepRecord(3, 2.7725887f, ElementType::F32, 0.5, 8, 16);
  EXPECT_EQ(record.samplesPerSecond, 16);
  EXPECT_EQ(record.tokensPerSecond, 256);
  EXPECT_EQ(formatStepLine(record),
            "step=3 loss=2.77258873 samples/s=16 tokens/s=256 step_time_s=0.5");
}

TEST(DscRunMetrics, StepLineEndsWithTheLearningRate) {
  StepRecord record =
      makeStepRecord(3, 2.7725887f, ElementType::F32, 0.5, 8, 16);
  record.lr = 0.00025f;
  EXPECT_EQ(formatStepLine(record),
            "step=3 loss=2.77258873 samples/s=16 tokens/s=256 step_time_s=0.5 "
            "lr=0.000250000012");
  record.lossScale = 32768;
  record.skipped = 2;
  EXPECT_THAT(formatStepLine(record),
              testing::EndsWith(" lr=0.000250000012 loss_scale=32768 skipped=2"));
}

TEST(DscRunMetrics, StepLineCarriesNormMemoryAveragesAndTime) {
  StepRecord record =
      makeStepRecord(3, 2.7725887f, ElementType::F32, 0.5, 8, 16);
  EXPECT_EQ(record.samples, 24); // 3 steps of 8
  record.lr = 0.5;
  record.gradNorm = 1.25;
  record.memoryBytes = size_t(3) << 29; // 1.5 GiB
  record.averageSamplesPerSecond = 15;
  record.averageTokensPerSecond = 240;
  record.timestamp = "2025-01-31T12:34:56";
  EXPECT_EQ(formatStepLine(record),
            "step=3 loss=2.77258873 samples/s=16 tokens/s=256 step_time_s=0.5 "
            "avg_samples/s=15 avg_tokens/s=240 lr=0.5 grad_norm=1.25 "
            "mem_gib=1.5 time=2025-01-31T12:34:56");
}

TEST(DscRunMetrics, TimestampIsLocalIsoTime) {
  std::string stamp = localTimestamp();
  ASSERT_EQ(stamp.size(), 19u) << stamp;
  EXPECT_EQ(stamp[4], '-');
  EXPECT_EQ(stamp[10], 'T');
  EXPECT_EQ(stamp[13], ':');
}

TEST(DscRunMetrics, StepLogPrintsEveryNthAndTheEnds) {
  StepLog log(4, 3, 13, nullptr, nullptr);
  std::vector<int64_t> printed;
  for (int64_t step = 3; step <= 13; ++step)
    if (log.prints(step))
      printed.push_back(step);
  EXPECT_EQ(printed, (std::vector<int64_t>{3, 4, 8, 12, 13}));
  StepLog every(0, 1, 3, nullptr, nullptr); // 0: every step
  EXPECT_TRUE(every.prints(2));
}

TEST(DscRunMetrics, StepLogAveragesLeaveTheFirstStepOut) {
  StepLog log(100, 1, 3, nullptr, nullptr);
  StepRecord first = makeStepRecord(1, 1, ElementType::F32, 4, 8, 2);
  log.add(first); // printed: the first step
  EXPECT_EQ(first.averageSamplesPerSecond, 2); // alone: it counts
  StepRecord second = makeStepRecord(2, 1, ElementType::F32, 1, 8, 2);
  log.add(second);
  EXPECT_EQ(second.averageSamplesPerSecond, 8);
  EXPECT_EQ(second.averageTokensPerSecond, 16);
  StepRecord third = makeStepRecord(3, 1, ElementType::F32, 3, 8, 2);
  log.add(third);
  EXPECT_EQ(third.averageSamplesPerSecond, 4); // 16 samples in 4 s
  EXPECT_FALSE(third.timestamp.empty());
}

TEST(DscRunMetrics, ArtifactRunSettingsFillWhatTheFlagsLeaveOut) {
  RunOptions options;
  applyArtifactRunSettings(options, "steps_per_print=10\ncsv_monitor=logs/job\n",
                           "a.so");
  EXPECT_EQ(options.stepsPerPrint, 10);
  EXPECT_EQ(options.csvMonitor, "logs/job");
  RunOptions flags;
  flags.stepsPerPrint = 3;
  flags.csvMonitor = "mine";
  applyArtifactRunSettings(flags, "steps_per_print=10\ncsv_monitor=logs/job\n",
                           "a.so");
  EXPECT_EQ(flags.stepsPerPrint, 3);
  EXPECT_EQ(flags.csvMonitor, "mine");
  // The config's nvme_path, unless --nvme-path overrides it.
  applyArtifactRunSettings(options, "nvme_path=/mnt/nvme0\n", "a.so");
  EXPECT_EQ(options.nvmePath, "/mnt/nvme0");
  flags.nvmePath = "/local/nvme";
  applyArtifactRunSettings(flags, "nvme_path=/mnt/nvme0\n", "a.so");
  EXPECT_EQ(flags.nvmePath, "/local/nvme");
  EXPECT_THAT(errorOf([&] { applyArtifactRunSettings(options, "colour=red", "a.so"); }),
              HasSubstr("a.so: unknown compiled-in run setting 'colour=red'"));
  EXPECT_THAT(errorOf([&] {
                applyArtifactRunSettings(options, "steps_per_print=0", "a.so");
              }),
              HasSubstr("a.so: compiled-in steps_per_print needs a positive "
                        "integer, got '0'"));
}

TEST(DscRunMetrics, CsvMonitorWritesDeepSpeedsLayout) {
  ScratchDir dir;
  std::string where = dir.file("out/job");
  CsvMonitor monitor(where); // creates the directories
  StepRecord record = makeStepRecord(1, 0.25, ElementType::F32, 2, 8, 4);
  record.lr = 0.5;
  monitor.append(record);
  record = makeStepRecord(2, 0.125, ElementType::F32, 2, 8, 4);
  record.lr = 0.25;
  monitor.append(record);
  EXPECT_EQ(dsc::rt::test::readBytes(where + "/Train_Samples_train_loss.csv"),
            "step,train_loss\n8,0.25\n16,0.125\n");
  EXPECT_EQ(dsc::rt::test::readBytes(where + "/Train_Samples_lr.csv"),
            "step,lr\n8,0.5\n16,0.25\n");
  EXPECT_THAT(errorOf([&] { CsvMonitor(dir.file("out/job/Train_Samples_lr.csv")); }),
              HasSubstr("cannot create the csv_monitor directory"));
}

TEST(DscRunMetrics, CsvMonitorWritesTheDataSchedulesFields) {
  ScratchDir dir;
  CsvMonitor monitor(dir.path());
  StepRecord record = makeStepRecord(1, 0.25, ElementType::F32, 2, 4, 16);
  record.seqlen = 16;
  record.ltdKept = 8;
  record.layerTokens = 96;
  monitor.append(record);
  record = makeStepRecord(2, 0.125, ElementType::F32, 2, 4, 16);
  record.seqlen = 16;
  record.ltdKept = 16;
  record.layerTokens = 224;
  monitor.append(record);
  EXPECT_EQ(dsc::rt::test::readBytes(dir.file("Train_Samples_seqlen.csv")),
            "step,seqlen\n4,16\n8,16\n");
  EXPECT_EQ(dsc::rt::test::readBytes(dir.file("Train_Samples_ltd_kept.csv")),
            "step,ltd_kept\n4,8\n8,16\n");
  EXPECT_EQ(dsc::rt::test::readBytes(dir.file("Train_Samples_layer_tokens.csv")),
            "step,layer_tokens\n4,96\n8,224\n");
  // Without data schedules there are no such files.
  ScratchDir plain;
  CsvMonitor(plain.path()).append(makeStepRecord(1, 0.5, ElementType::F32, 2, 4, 16));
  EXPECT_FALSE(std::filesystem::exists(plain.file("Train_Samples_seqlen.csv")));
  EXPECT_FALSE(std::filesystem::exists(plain.file("Train_Samples_ltd_kept.csv")));
}

TEST(DscRunMetrics, LossRoundTrips) {
  const float values[] = {2.7725887f, 1e-7f, 12345.678f, 0.1f};
  for (float value : values)
    EXPECT_EQ(std::strtof(formatLoss(value, ElementType::F32).c_str(), nullptr),
              value);
  double wide = 0.1 + 0.2;
  EXPECT_EQ(std::strtod(formatLoss(wide, ElementType::F64).c_str(), nullptr),
            wide);
}

TEST(DscRunMetrics, CsvIsReadableAfterEveryRow) {
  ScratchDir dir;
  std::string path = dir.file("m.csv");
  MetricsCsv csv(path);
  const std::string header = "step,loss,step_time_s,samples_per_s,"
                             "tokens_per_s,lr,grad_norm,loss_scale,"
                             "memory_gib,time\n";
  EXPECT_EQ(dsc::rt::test::readBytes(path), header);
  csv.append(makeStepRecord(1, 0.25, ElementType::F32, 2, 8, 4));
  EXPECT_EQ(dsc::rt::test::readBytes(path), header + "1,0.25,2,4,16,,,,,\n");
  StepRecord full = makeStepRecord(2, 0.5, ElementType::F32, 2, 8, 4);
  full.lr = 0.001;
  full.gradNorm = 2.5;
  full.lossScale = 1024;
  full.memoryBytes = size_t(1) << 30;
  full.timestamp = "2025-01-31T12:34:56";
  csv.append(full);
  EXPECT_EQ(dsc::rt::test::readBytes(path),
            header + "1,0.25,2,4,16,,,,,\n"
                     "2,0.5,2,4,16,0.001,2.5,1024,1,2025-01-31T12:34:56\n");
  csv.close();
  EXPECT_THAT(errorOf([&] { MetricsCsv(dir.file("no/such/dir.csv")); }),
              HasSubstr("cannot write metrics"));
}

TEST(DscRunMetrics, ExpertsAddDroppedRoutesAndCountsPerLayer) {
  ScratchDir dir;
  std::string path = dir.file("m.csv");
  MetricsCsv csv(path, /*dataColumns=*/false, {"h.0.mlp", "h.2.mlp"});
  const std::string header = "step,loss,step_time_s,samples_per_s,"
                             "tokens_per_s,lr,grad_norm,loss_scale,"
                             "memory_gib,time,moe_dropped,"
                             "exp_counts:h.0.mlp,exp_counts:h.2.mlp\n";
  EXPECT_EQ(dsc::rt::test::readBytes(path), header);
  StepRecord record = makeStepRecord(1, 0.25, ElementType::F32, 2, 8, 4);
  record.moeDropped = 5;
  record.expCounts = {{3, 0, 9, 4}, {16, 0}};
  csv.append(record);
  EXPECT_EQ(dsc::rt::test::readBytes(path),
            header + "1,0.25,2,4,16,,,,,,5,3 0 9 4,16 0\n");
  EXPECT_THAT(formatStepLine(record), testing::EndsWith(" moe_dropped=5"));
}

} // namespace
