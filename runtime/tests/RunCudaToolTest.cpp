//===- RunCudaToolTest.cpp - dsc-run on CUDA artifacts, under mpirun ------===//
//
// Runs build/bin/dsc-run (built with the CUDA backend) on CUDA artifacts:
// Inputs/TinyCudaArtifact.cu, built with nvcc as dsc-compile builds
// artifacts (TinyArtifact.cpp's model, so TinyModel.h's losses hold), and
// Inputs/tiny_lm.mlir, compiled by dsc-compile --target=cuda when the test
// runs (skipped where the compiler was not built, as in a standalone build
// of the runtime).
//
// Without a GPU (this machine, CI) dsc-run must fail at start-up with one
// clear line and exit status 1, on 1 and 2 ranks. With a GPU, the losses
// must be right (TinyModel.h, or the CPU artifact of the same model), the
// summary must report device memory, and checkpoints must move between the
// targets; on 2 GPUs, over NCCL. Each case skips where it cannot run. Every
// process runs under timeout(1) with a short DSC_COLLECTIVE_TIMEOUT, and
// the ctest case has a TIMEOUT, so that no test can hang.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/CudaDevice.h"
#include "dsc/runtime/SafeTensors.h"

#include "Inputs/TinyModel.h"
#include "RunProcess.h"
#include "ScratchDir.h"

#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <sys/stat.h>

using dsc::rt::test::artifact;
using dsc::rt::test::occurrences;
using dsc::rt::test::Result;
using dsc::rt::test::runProcess;
using dsc::rt::test::ScratchDir;
using dsc::rt::test::split;
using dsc::rt::test::TinyModel;
using testing::HasSubstr;
using testing::Not;

namespace {

const char kNoGpu[] = "dsc-run: error: the CUDA artifact needs a GPU, but "
                      "cudaGetDeviceCount found none on host ";

int gpus() { return dsc::rt::cuda::Device::count(); }

bool isExecutable(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && (info.st_mode & S_IXUSR);
}

/// dsc-compile and the tools it runs, all in the top-level build's bin/.
bool compilerBuilt() {
  std::string compile = DSC_COMPILE_BINARY;
  std::string bin = compile.substr(0, compile.rfind('/') + 1);
  return isExecutable(compile) && isExecutable(bin + "dsc-opt") &&
         isExecutable(bin + "dsc-translate");
}

/// The losses of the step lines, in order.
std::vector<double> stepLosses(const std::string &out) {
  static const std::regex line(R"(step=(\d+) loss=(\S+) .*)");
  std::vector<double> losses;
  for (const std::string &text : split(out, '\n')) {
    std::smatch match;
    if (std::regex_match(text, match, line))
      losses.push_back(std::stod(match[2]));
  }
  return losses;
}

class DscRunCudaTool : public testing::Test {
protected:
  DscRunCudaTool() : data_(dsc::rt::test::tinyTokens()) {
    model_.writeWeights(dir_.file("w.safetensors"));
    dsc::rt::test::writeTokens(dir_.file("d.bin"), data_);
  }

  /// mpirun -np `ranks` dsc-run ARGS...
  Result run(int ranks, const std::vector<std::string> &args) {
    std::vector<std::string> argv = dsc::rt::test::mpirunCommand();
    argv.insert(argv.end(), {"-np", std::to_string(ranks), DSC_RUN_BINARY});
    argv.insert(argv.end(), args.begin(), args.end());
    return runProcess(dir_, argv, {"DSC_COLLECTIVE_TIMEOUT=20"});
  }

  /// The usual arguments: global batch `batch`, sequence 4.
  std::vector<std::string> args(const std::string &artifactPath, int steps = 3,
                                int batch = 4) {
    return {artifactPath, "--weights", dir_.file("w.safetensors"),
            "--data",     dir_.file("d.bin"),
            "--batch",    std::to_string(batch),
            "--seq",      "4",
            "--steps",    std::to_string(steps)};
  }

  /// Steps first .. first + n - 1 (1-based) of TinyModel at batch 4.
  void expectTinyLosses(const std::vector<double> &losses, int first = 1,
                        int n = 3) {
    ASSERT_EQ(losses.size(), static_cast<size_t>(n));
    for (int s = 0; s < n; ++s) {
      double expected = model_.expectedLoss(data_, first - 1 + s, 4, 4);
      EXPECT_NEAR(losses[size_t(s)], expected,
                  1e-5 * std::abs(expected) + 1e-6)
          << "step " << first + s;
    }
  }

  /// A failed run that printed `message` exactly once and ran no step.
  void expectOneError(const Result &result, const std::string &message) {
    EXPECT_EQ(result.status, 1) << result.err;
    EXPECT_EQ(occurrences(result.err, message), 1u) << result.err;
    EXPECT_EQ(occurrences(result.err, "dsc-run: error:"), 1u) << result.err;
    EXPECT_THAT(result.out, Not(HasSubstr("step=")));
  }

  /// dsc-compile Inputs/tiny_lm.mlir for `target` and `worldSize` ranks into
  /// the scratch directory; "" when it fails (a test failure) or when there
  /// is no compiler (compilerMissing_ says so: a standalone build of the
  /// runtime has none).
  /// `flags` are dsc-compile's further options, `tag` names the artifact
  /// among those of the same target and world size.
  std::string compileTinyLm(const std::string &target, int worldSize,
                            const std::vector<std::string> &flags = {},
                            const std::string &tag = "") {
    if (!compilerBuilt()) {
      compilerMissing_ = true;
      return "";
    }
    std::string out = dir_.file("tiny_lm_" + target + "_w" +
                                std::to_string(worldSize) + tag + ".so");
    std::vector<std::string> argv = {
        DSC_COMPILE_BINARY, std::string(DSC_TEST_INPUTS_DIR) + "/tiny_lm.mlir",
        "--target=" + target, "--world-size=" + std::to_string(worldSize),
        "-o", out};
    argv.insert(argv.end(), flags.begin(), flags.end());
    if (target == "cuda" && gpus() > 0) {
      cudaDeviceProp properties{};
      if (cudaGetDeviceProperties(&properties, 0) == cudaSuccess)
        argv.push_back("--cuda-arch=sm_" + std::to_string(properties.major) +
                       std::to_string(properties.minor));
    }
    Result compiled = runProcess(dir_, argv, {}, 180);
    EXPECT_EQ(compiled.status, 0) << compiled.err;
    return compiled.status == 0 ? out : "";
  }

  /// The weights of tiny_lm.mlir: wte [16, 8], head [16, 8] and its bias.
  void writeTinyLmWeights() {
    std::vector<float> wte(16 * 8), head(16 * 8), bias(16);
    for (size_t i = 0; i < wte.size(); ++i) {
      wte[i] = 0.5f * std::sin(0.37f * float(i));
      head[i] = 0.5f * std::cos(0.23f * float(i));
    }
    for (size_t i = 0; i < bias.size(); ++i)
      bias[i] = 0.1f * float(i) - 0.8f;
    using dsc::rt::DType;
    dsc::rt::writeSafeTensors(
        dir_.file("w.safetensors"),
        {{"wte.weight", DType::F32, {16, 8}, wte.data()},
         {"head.weight", DType::F32, {16, 8}, head.data()},
         {"head.bias", DType::F32, {16}, bias.data()}});
  }

  ScratchDir dir_;
  TinyModel model_;
  std::vector<uint16_t> data_;
  bool compilerMissing_ = false;
};

/// Skips when dsc-compile is not built; fails when it failed on `path`.
#define SKIP_WITHOUT_COMPILER(path)                                            \
  do {                                                                         \
    if (compilerMissing_)                                                      \
      GTEST_SKIP() << DSC_COMPILE_BINARY << " is not built (a standalone "     \
                   << "build of the runtime)";                                 \
    ASSERT_FALSE(path.empty());                                                \
  } while (0)

//===----------------------------------------------------------------------===//
// Without a GPU
//===----------------------------------------------------------------------===//

TEST_F(DscRunCudaTool, WithoutAGpuOneRankFailsAtStartUp) {
  if (gpus() > 0)
    GTEST_SKIP() << "this machine has a GPU";
  // The GPU is chosen before anything is read: a weights file that does
  // not exist is not reached.
  std::vector<std::string> missing = args(artifact("tiny_cuda_w1"));
  missing[2] = dir_.file("missing.safetensors");
  Result result = run(1, missing);
  expectOneError(result, kNoGpu);
  EXPECT_THAT(result.err, Not(HasSubstr("missing.safetensors")));
  // No NCCL communicator was set up either: its own message would name it.
  EXPECT_THAT(result.err, Not(HasSubstr("NcclCommunicator")));
}

TEST_F(DscRunCudaTool, WithoutAGpuEveryRankFailsAndOneLineSaysSo) {
  if (gpus() > 0)
    GTEST_SKIP() << "this machine has a GPU";
  Result result = run(2, args(artifact("tiny_cuda_w2")));
  // Both ranks failed alike: one plain line, no "rank 1:" prefix.
  expectOneError(result, kNoGpu);
  EXPECT_THAT(result.err, Not(HasSubstr("rank 1")));
}

TEST_F(DscRunCudaTool, WithoutAGpuACompiledArtifactFailsAtStartUp) {
  if (gpus() > 0)
    GTEST_SKIP() << "this machine has a GPU";
  std::string w1 = compileTinyLm("cuda", 1);
  SKIP_WITHOUT_COMPILER(w1);
  std::string w2 = compileTinyLm("cuda", 2);
  ASSERT_FALSE(w2.empty());
  writeTinyLmWeights();
  expectOneError(run(1, args(w1, 3, 2)), kNoGpu);
  expectOneError(run(2, args(w2, 3, 4)), kNoGpu);
}

//===----------------------------------------------------------------------===//
// With GPUs
//===----------------------------------------------------------------------===//

TEST_F(DscRunCudaTool, OneGpuComputesTheLosses) {
  if (gpus() < 1)
    GTEST_SKIP() << "no GPU";
  Result result = run(1, args(artifact("tiny_cuda_w1")));
  ASSERT_EQ(result.status, 0) << result.err;
  expectTinyLosses(stepLosses(result.out));
  // Device pools: the arena (1920 -> 2048 bytes, with the device copies of
  // the inputs) and the states (512 + 32 + 64, each rounded to 256); pinned
  // host memory: the inputs and the output (128 + 128 + 4, each rounded to
  // 256) and, while loading, the largest state (512).
  EXPECT_THAT(result.out, HasSubstr("[rank 0] peak_memory_bytes=3072 "
                                    "arena_high_water_bytes=2048 "
                                    "state_bytes=1024 io_bytes=0 "
                                    "memory=device pinned_host_bytes=1280\n"));
  EXPECT_THAT(result.out, HasSubstr("[rank 0] collective=allReduce calls=6 "
                                    "bytes_sent=0\n"));
}

TEST_F(DscRunCudaTool, TwoGpusSumOverNccl) {
  if (gpus() < 2)
    GTEST_SKIP() << "fewer than 2 GPUs";
  Result result = run(2, args(artifact("tiny_cuda_w2")));
  ASSERT_EQ(result.status, 0) << result.err;
  // Each rank sees half of the batch; the allReduceSums make the loss global.
  expectTinyLosses(stepLosses(result.out));
  for (int rank = 0; rank < 2; ++rank) {
    std::string prefix = "[rank " + std::to_string(rank) + "] ";
    EXPECT_THAT(result.out, HasSubstr(prefix + "peak_memory_bytes=2816 "
                                               "arena_high_water_bytes=1792 "
                                               "state_bytes=1024 io_bytes=0 "
                                               "memory=device"));
    EXPECT_THAT(result.out, HasSubstr(prefix + "collective=allReduce calls=6 "
                                               "bytes_sent=36\n"));
  }
}

TEST_F(DscRunCudaTool, CheckpointsMoveBetweenTheTargets) {
  if (gpus() < 1)
    GTEST_SKIP() << "no GPU";
  // 2 steps on `saver` saved into `root`, then step 3 on `resumer`.
  auto saveThenResume = [&](const std::string &saver,
                            const std::string &resumer,
                            const std::string &root) {
    std::vector<std::string> save = args(artifact(saver), 2);
    save.insert(save.end(), {"--save", dir_.file(root)});
    Result saved = run(1, save);
    ASSERT_EQ(saved.status, 0) << saved.err;
    std::vector<std::string> resume = args(artifact(resumer), 1);
    resume.insert(resume.end(), {"--resume", dir_.file(root)});
    Result resumed = run(1, resume);
    ASSERT_EQ(resumed.status, 0) << resumed.err;
    expectTinyLosses(stepLosses(resumed.out), 3, 1);
  };
  // The state saved from device memory resumes on the CPU, and a CPU
  // checkpoint loads into device memory.
  saveThenResume("tiny_cuda_w1", "tiny_w1", "from_gpu");
  saveThenResume("tiny_w1", "tiny_cuda_w1", "from_cpu");
}

TEST_F(DscRunCudaTool, ACompiledArtifactMatchesTheCpuTarget) {
  if (gpus() < 1)
    GTEST_SKIP() << "no GPU";
  std::string cuda = compileTinyLm("cuda", 1);
  SKIP_WITHOUT_COMPILER(cuda);
  std::string cpu = compileTinyLm("cpu", 1);
  ASSERT_FALSE(cpu.empty());
  writeTinyLmWeights();
  auto compare = [&](int ranks, const std::string &cpuArtifact,
                     const std::string &cudaArtifact, int batch) {
    Result onCpu = run(ranks, args(cpuArtifact, 3, batch));
    Result onGpu = run(ranks, args(cudaArtifact, 3, batch));
    ASSERT_EQ(onCpu.status, 0) << onCpu.err;
    ASSERT_EQ(onGpu.status, 0) << onGpu.err;
    std::vector<double> expected = stepLosses(onCpu.out);
    std::vector<double> losses = stepLosses(onGpu.out);
    ASSERT_EQ(expected.size(), 3u);
    ASSERT_EQ(losses.size(), 3u);
    for (size_t s = 0; s < 3; ++s)
      EXPECT_NEAR(losses[s], expected[s], 1e-5 * std::abs(expected[s]) + 1e-6)
          << ranks << " rank(s), step " << s + 1;
    EXPECT_THAT(onGpu.out, HasSubstr("memory=device"));
  };
  compare(1, cpu, cuda, 2);
  if (gpus() < 2)
    return;
  std::string cuda2 = compileTinyLm("cuda", 2);
  std::string cpu2 = compileTinyLm("cpu", 2);
  ASSERT_FALSE(cuda2.empty());
  ASSERT_FALSE(cpu2.empty());
  compare(2, cpu2, cuda2, 4);
}

/// ZeRO-Offload and ZeRO-Infinity on a GPU (tiny_lm, ZeRO stage 3, one
/// rank, 4 steps of AdamW): the step's update runs on the host CPU, on
/// pinned host states, between copies on the copy streams.
///  - With the optimizer on the host (cpu) or on NVMe, and with the
///    parameters' partitions on the host too, the host update is the same
///    CPU kernel on the same bits: the losses (printed to round-trip a
///    float) are identical.
///  - Against the device's own update (no offload) they agree within fp32
///    rounding only: nvcc contracts the CUDA AdamW's multiply-adds into
///    FMAs, the host compiler does not, so each step's parameters may
///    differ in their last bit (rtol 1e-5, the project's fp32 tolerance,
///    bounds what four steps of that do to the loss).
///  - dsc-run counts the copies both ways and the NVMe reads and writes.
TEST_F(DscRunCudaTool, OffloadOnAGpuMatchesTheDeviceUpdate) {
  if (gpus() < 1)
    GTEST_SKIP() << "no GPU";
  const std::vector<std::string> stage3 = {"--zero-stage=3",
                                           "--zero-persistence-threshold=0"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), stage3.begin(), stage3.end());
    return extra;
  };
  std::string none = compileTinyLm("cuda", 1, stage3, "_none");
  SKIP_WITHOUT_COMPILER(none);
  std::string cpu = compileTinyLm("cuda", 1, with({"--offload-optimizer=cpu"}), "_cpu");
  std::string nvme = compileTinyLm(
      "cuda", 1, with({"--offload-optimizer=nvme", "--offload-param=cpu"}),
      "_nvme");
  std::string param = compileTinyLm(
      "cuda", 1, with({"--offload-optimizer=cpu", "--offload-param=cpu"}),
      "_param");
  ASSERT_FALSE(cpu.empty());
  ASSERT_FALSE(nvme.empty());
  ASSERT_FALSE(param.empty());
  writeTinyLmWeights();
  std::string nvmeDir = dir_.file("nvme");
  ASSERT_EQ(::mkdir(nvmeDir.c_str(), 0700), 0);
  auto losses = [&](const std::string &artifact, Result &result,
                    bool onNvme = false) {
    std::vector<std::string> argv = args(artifact, 4, 2);
    if (onNvme)
      argv.insert(argv.end(), {"--nvme-path", nvmeDir});
    result = run(1, argv);
    EXPECT_EQ(result.status, 0) << result.err;
    return split(result.out, '\n');
  };
  auto lossText = [](const std::vector<std::string> &lines) {
    std::vector<std::string> out;
    for (const std::string &line : lines) {
      size_t at = line.find(" loss=");
      if (line.rfind("step=", 0) == 0 && at != std::string::npos)
        out.push_back(line.substr(at, line.find(' ', at + 1) - at));
    }
    return out;
  };
  Result onDevice, onHost, onNvme, withParams;
  std::vector<std::string> device = lossText(losses(none, onDevice));
  std::vector<std::string> host = lossText(losses(cpu, onHost));
  std::vector<std::string> disk = lossText(losses(nvme, onNvme, true));
  std::vector<std::string> params = lossText(losses(param, withParams));
  ASSERT_EQ(host.size(), 4u) << onHost.out;
  EXPECT_EQ(disk, host);
  EXPECT_EQ(params, host);
  std::vector<double> expected = stepLosses(onDevice.out);
  std::vector<double> got = stepLosses(onHost.out);
  ASSERT_EQ(expected.size(), got.size());
  for (size_t s = 0; s < got.size(); ++s)
    EXPECT_NEAR(got[s], expected[s], 1e-5 * std::abs(expected[s]) + 1e-6)
        << "step " << s + 1;
  EXPECT_THAT(onHost.out, HasSubstr("transfer=d2h calls="));
  EXPECT_THAT(onHost.out, HasSubstr("transfer=h2d calls="));
  EXPECT_THAT(onNvme.out, HasSubstr("nvme=read calls="));
  EXPECT_THAT(onNvme.out, HasSubstr("nvme=write calls="));
}

} // namespace
