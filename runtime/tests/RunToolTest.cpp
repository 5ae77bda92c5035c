//===- RunToolTest.cpp - the dsc-run binary under mpirun ------------------===//
//
// Runs build/bin/dsc-run on the test artifacts (Inputs/TinyArtifact.cpp)
// with 1 and 2 ranks and holds its output to losses computed independently
// (Inputs/TinyModel.h). Every run goes through timeout(1) and a short
// DSC_COLLECTIVE_TIMEOUT, so that no test can hang.
//
//===----------------------------------------------------------------------===//

#include "Inputs/TinyModel.h"
#include "RunProcess.h"
#include "ScratchDir.h"
#include "dsc/runtime/SafeTensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>

using dsc::rt::test::artifact;
using dsc::rt::test::occurrences;
using dsc::rt::test::readBytes;
using dsc::rt::test::Result;
using dsc::rt::test::runProcess;
using dsc::rt::test::ScratchDir;
using dsc::rt::test::split;
using dsc::rt::test::TinyModel;
using testing::HasSubstr;
using testing::Not;

namespace {

/// The losses of the step lines, in order, checking each line's form.
std::vector<double> stepLosses(const std::string &out) {
  static const std::regex line(
      R"(step=(\d+) loss=(\S+) samples/s=(\S+) tokens/s=(\S+) step_time_s=(\S+))"
      R"( avg_samples/s=(\S+) avg_tokens/s=(\S+)( lr=\S+)?( grad_norm=\S+)?)"
      R"(( loss_scale=\S+ skipped=\d+)? mem_gib=(\S+))"
      R"( time=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)");
  std::vector<double> losses;
  for (const std::string &text : split(out, '\n')) {
    if (text.rfind("step=", 0) != 0)
      continue;
    std::smatch match;
    EXPECT_TRUE(std::regex_match(text, match, line)) << text;
    if (match.empty())
      continue;
    EXPECT_EQ(std::stoll(match[1]), static_cast<long long>(losses.size() + 1));
    EXPECT_GT(std::stod(match[3]), 0) << text;
    EXPECT_GT(std::stod(match[4]), 0) << text;
    EXPECT_GT(std::stod(match[6]), 0) << text;  // avg_samples/s
    EXPECT_GT(std::stod(match[11]), 0) << text; // mem_gib
    losses.push_back(std::stod(match[2]));
  }
  return losses;
}

/// A scratch directory with the tiny model's weights and data, and the
/// command lines that run dsc-run on them.
class DscRunTool : public testing::Test {
protected:
  DscRunTool() : data_(dsc::rt::test::tinyTokens()) {
    model_.writeWeights(dir_.file("w.safetensors"));
    dsc::rt::test::writeTokens(dir_.file("d.bin"), data_);
  }

  /// mpirun -np `ranks` dsc-run ARGS...
  Result run(int ranks, const std::vector<std::string> &args,
             const std::string &collectiveTimeout = "30") {
    std::vector<std::string> argv = dsc::rt::test::mpirunCommand();
    argv.insert(argv.end(), {"-np", std::to_string(ranks), DSC_RUN_BINARY});
    argv.insert(argv.end(), args.begin(), args.end());
    return runProcess(dir_, argv,
                      {"DSC_COLLECTIVE_TIMEOUT=" + collectiveTimeout});
  }

  /// The usual arguments for `artifactPath`, batch 4, sequence 4.
  std::vector<std::string> args(const std::string &artifactPath,
                                int64_t steps = 3) {
    return {artifactPath,  "--weights", dir_.file("w.safetensors"),
            "--data",      dir_.file("d.bin"),
            "--batch",     "4",
            "--seq",       "4",
            "--steps",     std::to_string(steps)};
  }

  void expectLosses(const std::vector<double> &losses, int64_t steps) {
    ASSERT_EQ(losses.size(), static_cast<size_t>(steps));
    for (int64_t s = 0; s < steps; ++s) {
      double expected = model_.expectedLoss(data_, s, 4, 4);
      EXPECT_NEAR(losses[s], expected, 1e-5 * std::abs(expected) + 1e-7)
          << "step " << s + 1;
    }
  }

  /// Expects a failed run whose stderr says `message` exactly once.
  void expectError(const Result &result, const std::string &message,
                   int status = 1) {
    EXPECT_EQ(result.status, status) << result.err;
    EXPECT_THAT(result.err, HasSubstr(message));
    EXPECT_EQ(occurrences(result.err, message), 1u) << result.err;
    EXPECT_THAT(result.out, Not(HasSubstr("step=")));
  }

  ScratchDir dir_;
  TinyModel model_;
  std::vector<uint16_t> data_;
};

TEST_F(DscRunTool, OneRankPrintsTheExpectedLosses) {
  Result result = run(1, args(artifact("tiny_w1")));
  ASSERT_EQ(result.status, 0) << result.err;
  expectLosses(stepLosses(result.out), 3);
  // The arena (576 bytes), the states (512 + 32 + 64) and the inputs and
  // output (128 + 128 + 4), each rounded to the pool's 256 bytes.
  EXPECT_THAT(result.out,
              HasSubstr("[rank 0] peak_memory_bytes=2560 "
                        "arena_high_water_bytes=768 state_bytes=1024 "
                        "io_bytes=768\n"));
  EXPECT_THAT(result.out,
              HasSubstr("[rank 0] collective=allReduce calls=6 bytes_sent=0\n"
                        "[rank 0] collective=total calls=6 bytes_sent=0\n"));
  EXPECT_THAT(result.err, HasSubstr("was compiled without a training step (dsc-compile --eval): every step is forward and loss only"));
}

TEST_F(DscRunTool, TwoRanksPrintTheGlobalLossOnce) {
  std::vector<std::string> evalArgs = args(artifact("tiny_w2"));
  evalArgs.push_back("--eval");
  Result result = run(2, evalArgs);
  ASSERT_EQ(result.status, 0) << result.err;
  // Each rank sees half of the batch; the artifact's allReduceSum makes the
  // loss global, equal to the one-rank run's. Only rank 0 prints it.
  expectLosses(stepLosses(result.out), 3);
  EXPECT_THAT(result.err, Not(HasSubstr("without --eval")));
  // Per step: allReduce of one f32 (2*(N-1)*4/N = 4 bytes) and one i64 (8).
  for (int rank = 0; rank < 2; ++rank) {
    std::string prefix = "[rank " + std::to_string(rank) + "] ";
    EXPECT_THAT(result.out,
                HasSubstr(prefix + "peak_memory_bytes=2304 "
                                   "arena_high_water_bytes=512 "
                                   "state_bytes=1024 io_bytes=768\n"));
    EXPECT_THAT(result.out, HasSubstr(prefix + "collective=allReduce calls=6 "
                                               "bytes_sent=36\n"));
  }
  // Rank 0 prints every summary, in rank order.
  EXPECT_LT(result.out.find("[rank 0]"), result.out.find("[rank 1]"));
}

TEST_F(DscRunTool, SamplesFeedInputsByNameAsTokensDo) {
  // The token file's sequences of 4 as a samples file: `tokens`, and the
  // next tokens under the name of the artifact's second input. The losses
  // are the token file's, on 1 and 2 ranks, with --batch and --seq taken
  // from the artifact.
  auto samples = [&](const std::string &second) {
    int64_t nseq = (int64_t(data_.size()) - 1) / 4;
    std::vector<int64_t> tokens, next;
    for (int64_t s = 0; s < nseq * 4; ++s) {
      tokens.push_back(data_[size_t(s)]);
      next.push_back(data_[size_t(s) + 1]);
    }
    std::string path = dir_.file(second + ".safetensors");
    dsc::rt::writeSafeTensors(
        path, {{"tokens", dsc::rt::DType::I64, {nseq, 4}, tokens.data()},
               {second, dsc::rt::DType::I64, {nseq, 4}, next.data()}});
    return path;
  };
  auto samplesArgs = [&](const std::string &artifactPath,
                         const std::string &data) {
    return std::vector<std::string>{artifactPath, "--weights",
                                    dir_.file("w.safetensors"), "--data",
                                    data, "--steps", "3"};
  };
  Result labels = run(1, samplesArgs(artifact("tiny_labels"),
                                     samples("labels")));
  ASSERT_EQ(labels.status, 0) << labels.err;
  expectLosses(stepLosses(labels.out), 3);
  EXPECT_THAT(labels.err, HasSubstr("global batch 4, sequence 4, 3 step(s)"));
  Result targets =
      run(2, samplesArgs(artifact("tiny_w2"), samples("targets")));
  ASSERT_EQ(targets.status, 0) << targets.err;
  expectLosses(stepLosses(targets.out), 3);
  // A tensor the artifact does not take is named, once.
  expectError(run(2, samplesArgs(artifact("tiny_w2"), samples("labels"))),
              "labels.safetensors: no tensor 'targets'; the artifact's input "
              "'targets' takes I64 [n, 4] (n samples first)");
}

TEST_F(DscRunTool, RoutesCollectivesToTheExpertGroups) {
  // 4 ranks, expert-parallel size 2: the artifact checks what its
  // all-to-all over the Expert group and its sum over the ExpertData group
  // deliver, beside the loss's sums over the World.
  Result result = run(4, args(artifact("tiny_ep2_w4")));
  ASSERT_EQ(result.status, 0) << result.err;
  expectLosses(stepLosses(result.out), 3);
  EXPECT_THAT(result.err, HasSubstr("on 4 rank(s) (expert-parallel size 2): "
                                    "global batch 4"));
  // Per group and kind: 3 steps of an allToAll of one i64 block per member
  // ((P-1) * 8 bytes) and an allReduce of one i64 over 2 ranks
  // (2 * (2-1) * 8 / 2); the World's figures as before.
  for (int rank = 0; rank < 4; ++rank) {
    std::string prefix = "[rank " + std::to_string(rank) + "] ";
    EXPECT_THAT(result.out,
                HasSubstr(prefix +
                          "collective=allReduce calls=6 "
                          "bytes_sent=54\n" +
                          prefix + "collective=total calls=6 bytes_sent=54\n" +
                          prefix +
                          "group=expert collective=allToAll calls=3 "
                          "bytes_sent=24\n" +
                          prefix +
                          "group=expert collective=total calls=3 "
                          "bytes_sent=24\n" +
                          prefix +
                          "group=expert_data collective=allReduce "
                          "calls=3 bytes_sent=24\n" +
                          prefix +
                          "group=expert_data collective=total "
                          "calls=3 bytes_sent=24\n"));
  }
}

TEST_F(DscRunTool, WritesTheMetricsCsv) {
  std::vector<std::string> metricArgs = args(artifact("tiny_w2"), 4);
  metricArgs.insert(metricArgs.end(), {"--metrics", dir_.file("m.csv")});
  Result result = run(2, metricArgs);
  ASSERT_EQ(result.status, 0) << result.err;
  std::vector<double> printed = stepLosses(result.out);
  expectLosses(printed, 4);
  std::vector<std::string> rows = split(readBytes(dir_.file("m.csv")), '\n');
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0], "step,loss,step_time_s,samples_per_s,tokens_per_s,lr,"
                     "grad_norm,loss_scale,memory_gib,time");
  for (size_t s = 1; s < rows.size(); ++s) {
    // Empty fields (no grad_norm, no loss_scale) count.
    std::vector<std::string> fields(1);
    for (char c : rows[s])
      if (c == ',')
        fields.emplace_back();
      else
        fields.back().push_back(c);
    ASSERT_EQ(fields.size(), 10u) << rows[s];
    // The tiny artifact outputs no lr, grad_norm or loss_scale: empty.
    EXPECT_EQ(fields[5] + fields[6] + fields[7], "") << rows[s];
    EXPECT_GT(std::stod(fields[8]), 0) << rows[s]; // memory_gib
    EXPECT_EQ(fields[9].size(), 19u) << rows[s];   // the time
    EXPECT_EQ(fields[0], std::to_string(s));
    EXPECT_EQ(std::stod(fields[1]), printed[s - 1]); // the same digits
    double seconds = std::stod(fields[2]);
    EXPECT_GT(seconds, 0);
    EXPECT_NEAR(std::stod(fields[3]), 4 / seconds, 1e-4 * (4 / seconds));
    EXPECT_NEAR(std::stod(fields[4]), 16 / seconds, 1e-4 * (16 / seconds));
  }
}

TEST_F(DscRunTool, RejectsAWorldSizeTheArtifactWasNotCompiledFor) {
  // Every rank finds the same problem; it is printed once.
  expectError(run(1, args(artifact("tiny_w2"))),
              "artifact was compiled for 2 rank(s), but the job has 1 "
              "(mpirun -np 2)");
  expectError(run(2, args(artifact("tiny_w1"))),
              "artifact was compiled for 1 rank(s), but the job has 2 "
              "(mpirun -np 1)");
}

TEST_F(DscRunTool, RejectsABatchOrSequenceTheArtifactWasNotCompiledFor) {
  std::vector<std::string> bad = args(artifact("tiny_w2"));
  bad[6] = "6"; // --batch
  expectError(run(2, bad), "dsc-run: error: --batch 6 does not match the "
                           "artifact: its micro batch 2 per rank times 2 "
                           "data-parallel rank(s) is 4");
  bad = args(artifact("tiny_w1"));
  bad[8] = "8"; // --seq
  expectError(run(1, bad), "--seq 8 does not match the artifact's sequence "
                           "length 4 (input 'tokens' is i64 [4, 4])");
}

TEST_F(DscRunTool, RejectsWeightsThatDoNotMatch) {
  std::vector<float> wide(16 * 9), bias(16);
  std::vector<double> bias64(16);
  const std::vector<float> &wte = model_.wte, &head = model_.head;
  std::string path = dir_.file("w.safetensors");
  using dsc::rt::DType;

  dsc::rt::writeSafeTensors(path, {{"wte.weight", DType::F32, {16, 8}, wte.data()},
                                   {"head.weight", DType::F32, {1, 8}, head.data()}});
  expectError(run(1, args(artifact("tiny_w1"))),
              path + ": no tensor 'bias'; the artifact needs it as f32 [16]");

  dsc::rt::writeSafeTensors(path, {{"wte.weight", DType::F32, {16, 9}, wide.data()},
                                   {"head.weight", DType::F32, {1, 8}, head.data()},
                                   {"bias", DType::F32, {16}, bias.data()}});
  expectError(run(2, args(artifact("tiny_w2"))),
              path + ": tensor 'wte.weight' is F32 [16, 9], but the artifact "
                     "expects F32 [16, 8]");

  dsc::rt::writeSafeTensors(path, {{"wte.weight", DType::F32, {16, 8}, wte.data()},
                                   {"head.weight", DType::F32, {1, 8}, head.data()},
                                   {"bias", DType::F64, {16}, bias64.data()}});
  expectError(run(1, args(artifact("tiny_w1"))),
              path + ": tensor 'bias' is F64 [16], but the artifact expects "
                     "F32 [16]");
}

TEST_F(DscRunTool, RejectsMissingFiles) {
  std::vector<std::string> bad = args(artifact("tiny_w1"));
  bad[2] = dir_.file("missing.safetensors");
  expectError(run(1, bad), dir_.file("missing.safetensors") + ": ");
  bad = args(artifact("tiny_w2"));
  bad[4] = dir_.file("missing.bin");
  expectError(run(2, bad), dir_.file("missing.bin") + ": ");
  expectError(run(1, args(dir_.file("missing.so"))),
              dir_.file("missing.so") + ": cannot open artifact: No such file "
                                        "or directory");
}

TEST_F(DscRunTool, ChecksTheNvmePathAtStart) {
  std::vector<std::string> withPath = args(artifact("tiny_w2"), 1);
  withPath.insert(withPath.end(), {"--nvme-path", dir_.path()});
  Result result = run(2, withPath);
  EXPECT_EQ(result.status, 0) << result.err;
  // The scratch directory's file system takes O_DIRECT (NvmeStoreTest).
  EXPECT_EQ(occurrences(result.err, "dsc-run: NVMe path " + dir_.path() +
                                        ": O_DIRECT supported"),
            1u)
      << result.err;
  withPath.back() = dir_.file("absent");
  expectError(run(2, withPath),
              "dsc-run: error: " + dir_.file("absent") +
                  ": NVMe path: No such file or directory");
}

TEST_F(DscRunTool, RejectsDataWithoutAWholeSequence) {
  // Found during setup (one batch is cut before any step), not mid-run.
  dsc::rt::test::writeTokens(dir_.file("d.bin"), {1, 2, 3, 4});
  expectError(run(2, args(artifact("tiny_w2"))),
              dir_.file("d.bin") + ": batch: 4 tokens hold no sequence of "
                                   "length 4");
}

TEST_F(DscRunTool, NamesTheRankWhenOnlySomeRanksFail) {
  // Only rank 0 writes the metrics file.
  std::vector<std::string> bad = args(artifact("tiny_w2"));
  bad.insert(bad.end(), {"--metrics", dir_.file("no/such/dir/m.csv")});
  expectError(run(2, bad), "dsc-run: error: rank 0: " +
                               dir_.file("no/such/dir/m.csv") +
                               ": cannot write metrics: No such file or "
                               "directory");
}

TEST_F(DscRunTool, RejectsWhatIsNoUsableArtifact) {
  std::string text = dir_.write("text.so", "#!/bin/sh\n");
  expectError(run(1, args(text)), text + ": cannot load artifact: ");
  expectError(run(1, args(artifact("not_an_artifact"))),
              "not a dsc artifact: it does not export dsc_artifact_info");
  expectError(run(1, args(artifact("tiny_abi99"))),
              "artifact ABI version 99, but this dsc-run reads version");
  expectError(run(1, args(artifact("tiny_missing_symbol"))),
              "dsc::rt::functionNotInTheRuntime(int)");
  expectError(run(2, args(artifact("tiny_ep3_w2"))),
              "tiny_ep3_w2.so: artifact expert-parallel size 3 does not "
              "divide its world size 2");
  expectError(run(1, args(artifact("tiny_labels"))),
              "artifact input 'labels' (i64 [4, 4]) is not one a token file "
              "can feed; a token file feeds inputs named 'tokens' and "
              "'targets' (the next tokens): give the data as a .safetensors "
              "file of samples named after the inputs (docs/running.md)");
}

TEST_F(DscRunTool, RejectsBadCommandLinesWithStatus2) {
  std::vector<std::string> interval = args(artifact("tiny_w2"));
  interval.insert(interval.end(), {"--save-interval", "2"});
  expectError(run(2, interval), "--save-interval needs --save DIR", 2);
  std::vector<std::string> noSteps = args(artifact("tiny_w1"));
  noSteps.resize(noSteps.size() - 2);
  expectError(run(2, noSteps), "missing required option --steps", 2);
}

TEST_F(DscRunTool, AnErrorInAStepEndsEveryRank) {
  // Token 20 is past the vocabulary: the artifact's check throws on rank 1
  // (the second half of step 1's batch) while rank 0 waits in allReduceSum;
  // dsc-run prints rank 1's message and aborts the job instead of hanging.
  std::vector<uint16_t> bad = data_;
  bad[10] = 20;
  dsc::rt::test::writeTokens(dir_.file("d.bin"), bad);
  Result result = run(2, args(artifact("tiny_w2")));
  EXPECT_NE(result.status, 0);
  EXPECT_THAT(result.err, HasSubstr("dsc-run: rank 1: error: TinyArtifact: "
                                    "token id 0 or 20 is not below the "
                                    "vocabulary 16"));
  EXPECT_THAT(result.out, Not(HasSubstr("step=1 ")));
}

TEST_F(DscRunTool, TheWatchdogEndsAJobWithAStalledRank) {
  // tiny_stall's rank 1 sleeps for 600 s instead of joining step 2's first
  // collective; with a 2-second collective timeout rank 0 reports it and
  // ends the job.
  Result result = run(2, args(artifact("tiny_stall")), "2");
  EXPECT_NE(result.status, 0);
  EXPECT_THAT(result.err, HasSubstr("did not complete within 2 s"));
  EXPECT_THAT(result.out, HasSubstr("step=1 "));
  EXPECT_THAT(result.out, Not(HasSubstr("step=2 ")));
}

TEST_F(DscRunTool, HelpNeedsNoMpi) {
  Result result = runProcess(dir_, {DSC_RUN_BINARY, "--help"});
  EXPECT_EQ(result.status, 0);
  EXPECT_THAT(result.out, HasSubstr("usage: mpirun -np N dsc-run ARTIFACT"));
}

TEST_F(DscRunTool, ArtifactsBuiltWithTheDocumentedFlagsRun) {
  // What dsc-compile does: c++ $(cat artifact-flags.txt) step.cpp -o step.so
  std::string flags = readBytes(DSC_ARTIFACT_FLAGS_FILE);
  ASSERT_FALSE(flags.empty()) << DSC_ARTIFACT_FLAGS_FILE;
  std::vector<std::string> compile = {"c++"};
  for (const std::string &flag : split(flags.substr(0, flags.find('\n')), ' '))
    compile.push_back(flag);
  std::string library = dir_.file("step.so");
  compile.insert(compile.end(),
                 {DSC_TEST_INPUTS_DIR "/TinyArtifact.cpp", "-o", library});
  Result built = runProcess(dir_, compile, {}, 300);
  ASSERT_EQ(built.status, 0) << built.err;
  Result result = run(1, args(library));
  ASSERT_EQ(result.status, 0) << result.err;
  expectLosses(stepLosses(result.out), 3);
}

} // namespace
