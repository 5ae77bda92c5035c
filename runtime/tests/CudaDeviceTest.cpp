//===- CudaDeviceTest.cpp - GPU presence, device selection, CUDA errors ---===//
//
// Runs with and without a GPU: the no-GPU checks skip where a GPU is
// present, the GPU checks skip where none is.

#include "dsc/runtime/CudaDevice.h"

#include "dsc/runtime/Error.h"

#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

using dsc::rt::EnvLookup;
using dsc::rt::Error;
using dsc::rt::cuda::Device;
using testing::AllOfArray;
using testing::HasSubstr;
using testing::Matcher;
using testing::Not;
using testing::StartsWith;
using testing::ThrowsMessage;

namespace {

EnvLookup fakeEnvironment(std::map<std::string, std::string> variables) {
  return [variables](const char *name) -> std::optional<std::string> {
    auto it = variables.find(name);
    if (it == variables.end())
      return std::nullopt;
    return it->second;
  };
}

} // namespace

TEST(CudaDevice, NoGpuIsAClearError) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();
  if (status == cudaSuccess && count > 0)
    GTEST_SKIP() << "a GPU is present; RequireDeviceFindsTheGpus covers it";
  std::vector<Matcher<std::string>> says = {
      StartsWith("the CUDA artifact needs a GPU, but cudaGetDeviceCount found "
                 "none on host "),
      Not(HasSubstr("\n"))}; // one line
  if (status != cudaSuccess) // CUDA's own name and description
    says.push_back(HasSubstr(std::string("(") + cudaGetErrorName(status) +
                             ": " + cudaGetErrorString(status) + ")"));
  int driver = -1;
  if (status == cudaErrorInsufficientDriver &&
      cudaDriverGetVersion(&driver) == cudaSuccess && driver == 0)
    says.push_back(HasSubstr(": no NVIDIA driver is installed (libcuda.so.1 "
                             "could not be loaded"));
  EXPECT_THAT([] { Device::requireDevice(); },
              ThrowsMessage<Error>(AllOfArray(says)));
  // select fails the same way, before choosing anything.
  EXPECT_THAT([] { Device::select(0); },
              ThrowsMessage<Error>(AllOfArray(says)));
  // The caller's name for itself.
  EXPECT_THAT([] { Device::requireDevice("gemm"); },
              ThrowsMessage<Error>(StartsWith("gemm needs a GPU, but ")));
}

TEST(CudaDevice, RequireDeviceFindsTheGpus) {
  int count = Device::count();
  if (count == 0)
    GTEST_SKIP() << "no GPU here; NoGpuIsAClearError covers it";
  EXPECT_EQ(Device::requireDevice(), count);
  auto env = fakeEnvironment({{"LOCAL_RANK", "1"}});
  int ordinal = Device::select(0, "test", env);
  EXPECT_EQ(ordinal, 1 % count);
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, ordinal);
}

TEST(CudaDevice, LocalRankVariablesInTheirOrder) {
  EXPECT_FALSE(Device::localRank(fakeEnvironment({})).has_value());
  auto all = fakeEnvironment({{"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                              {"SLURM_LOCALID", "2"},
                              {"LOCAL_RANK", "1"}});
  auto local = Device::localRank(all);
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(local->index, 3);
  EXPECT_EQ(local->variable, "OMPI_COMM_WORLD_LOCAL_RANK");
  local = Device::localRank(
      fakeEnvironment({{"SLURM_LOCALID", "2"}, {"LOCAL_RANK", "1"}}));
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(local->index, 2);
  EXPECT_EQ(local->variable, "SLURM_LOCALID");
  local = Device::localRank(fakeEnvironment({{"LOCAL_RANK", "0"}}));
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(local->index, 0);
  EXPECT_EQ(local->variable, "LOCAL_RANK");
}

TEST(CudaDevice, MalformedLocalRankIsAnError) {
  for (const char *value : {"", "-1", "x", "1x", " 1", "+1", "99999999999"}) {
    auto env = fakeEnvironment({{"SLURM_LOCALID", value}});
    EXPECT_THAT([&] { Device::localRank(env); },
                ThrowsMessage<Error>(std::string("SLURM_LOCALID='") + value +
                                     "' is not a non-negative integer"));
  }
}

TEST(CudaDevice, OrdinalIsTheLocalRankModuloTheDevices) {
  auto none = fakeEnvironment({});
  EXPECT_EQ(Device::chooseOrdinal(0, 4, none), 0);
  EXPECT_EQ(Device::chooseOrdinal(5, 4, none), 1); // no local rank: the rank
  auto local = fakeEnvironment({{"OMPI_COMM_WORLD_LOCAL_RANK", "2"}});
  EXPECT_EQ(Device::chooseOrdinal(9, 4, local), 2); // the local rank wins
  EXPECT_EQ(Device::chooseOrdinal(9, 2, local), 0);
  EXPECT_EQ(Device::chooseOrdinal(9, 1, local), 0); // one GPU per rank
  EXPECT_THROW(Device::chooseOrdinal(0, 0, none), Error);
  EXPECT_THROW(Device::chooseOrdinal(-1, 4, none), Error);
}

TEST(CudaDevice, CheckCudaNamesTheError) {
  EXPECT_NO_THROW(dsc::rt::cuda::checkCuda(cudaSuccess, "fine"));
  EXPECT_THAT(
      [] { dsc::rt::cuda::checkCuda(cudaErrorInvalidValue, "cudaMemcpy"); },
      ThrowsMessage<Error>(std::string("cudaMemcpy: cudaErrorInvalidValue: ") +
                           cudaGetErrorString(cudaErrorInvalidValue)));
}
