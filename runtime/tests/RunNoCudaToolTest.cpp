//===- RunNoCudaToolTest.cpp - dsc-run without CUDA refuses CUDA artifacts ===//
//
// Built only when the runtime is built without the CUDA backend
// (-DDSC_ENABLE_CUDA=OFF, or no toolkit): dsc-run, under mpirun with 1 and
// 2 ranks, refuses an artifact for target "cuda" (Inputs/CudaTargetStub.cpp)
// with one line and exit status 1. Every run is under timeout(1).
//
//===----------------------------------------------------------------------===//

#include "Inputs/TinyModel.h"
#include "RunProcess.h"
#include "ScratchDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using dsc::rt::test::artifact;
using dsc::rt::test::occurrences;
using dsc::rt::test::Result;
using dsc::rt::test::runProcess;
using dsc::rt::test::ScratchDir;
using testing::HasSubstr;
using testing::Not;

namespace {

TEST(DscRunWithoutCuda, RefusesCudaArtifacts) {
  ScratchDir dir;
  dsc::rt::test::TinyModel().writeWeights(dir.file("w.safetensors"));
  dsc::rt::test::writeTokens(dir.file("d.bin"), dsc::rt::test::tinyTokens());
  const std::string message =
      "dsc-run: error: " + artifact("cuda_target_stub") +
      ": artifact is for target 'cuda', but this dsc-run was built without "
      "CUDA support";
  for (int ranks : {1, 2}) {
    std::vector<std::string> argv = dsc::rt::test::mpirunCommand();
    argv.insert(argv.end(),
                {"-np", std::to_string(ranks), DSC_RUN_BINARY,
                 artifact("cuda_target_stub"), "--weights",
                 dir.file("w.safetensors"), "--data", dir.file("d.bin"),
                 "--batch", "4", "--seq", "4", "--steps", "1"});
    Result result = runProcess(dir, argv, {"DSC_COLLECTIVE_TIMEOUT=20"});
    EXPECT_EQ(result.status, 1) << ranks << " rank(s): " << result.err;
    EXPECT_EQ(occurrences(result.err, message), 1u) << result.err;
    EXPECT_EQ(occurrences(result.err, "dsc-run: error:"), 1u) << result.err;
    EXPECT_THAT(result.err, Not(HasSubstr("a step ran")));
    EXPECT_THAT(result.out, Not(HasSubstr("step=")));
  }
}

} // namespace
