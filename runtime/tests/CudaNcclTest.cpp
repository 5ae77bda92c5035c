//===- CudaNcclTest.cpp - NcclCommunicator, and how the CUDA libraries link
//===//
//
// Run under mpirun (any number of ranks, one GPU each where there are GPUs;
// ctest runs it with 1): its main() brackets the tests with MPI_Init and
// MPI_Finalize. Without a GPU, constructing the communicator must fail on
// every rank with a clear Error; with GPUs, every collective's values.
//
// The executable links dsc_runtime_cuda whole, as dsc-run will, so it needs
// every CUDA library the backend uses; LinksTheToolkitLibraries checks that
// it finds them in the toolkit through its own run path.

#include "dsc/runtime/NcclComm.h"

#include "dsc/runtime/CudaDevice.h"
#include "dsc/runtime/Error.h"

#include <cuda_runtime_api.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

using namespace dsc::rt;

namespace {

bool haveGpu() { return cuda::Device::count() > 0; }

/// Every rank's answer to haveGpu(), so that all ranks skip or run alike.
bool everyRankHasAGpu() {
  int mine = haveGpu() ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all != 0;
}

std::string realPath(const std::string &path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) ? std::string(resolved) : path;
}

std::string directoryOf(const std::string &path) {
  return path.substr(0, path.rfind('/'));
}

/// DT_NEEDED and DT_RUNPATH/DT_RPATH of an ELF64 file.
struct DynamicSection {
  std::vector<std::string> needed;
  std::string runPath;
};

DynamicSection readDynamicSection(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)),
                          std::istreambuf_iterator<char>());
  DynamicSection result;
  if (bytes.size() < sizeof(Elf64_Ehdr))
    return result;
  Elf64_Ehdr header;
  std::memcpy(&header, bytes.data(), sizeof header);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_shoff + std::size_t(header.e_shnum) * sizeof(Elf64_Shdr) >
          bytes.size())
    return result;
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  std::memcpy(sections.data(), bytes.data() + header.e_shoff,
              sections.size() * sizeof(Elf64_Shdr));
  for (const Elf64_Shdr &section : sections) {
    if (section.sh_type != SHT_DYNAMIC || section.sh_link >= sections.size())
      continue;
    const Elf64_Shdr &strings = sections[section.sh_link];
    for (std::size_t at = section.sh_offset;
         at + sizeof(Elf64_Dyn) <= section.sh_offset + section.sh_size;
         at += sizeof(Elf64_Dyn)) {
      Elf64_Dyn entry;
      std::memcpy(&entry, bytes.data() + at, sizeof entry);
      if (entry.d_tag != DT_NEEDED && entry.d_tag != DT_RUNPATH &&
          entry.d_tag != DT_RPATH)
        continue;
      std::string text(bytes.data() + strings.sh_offset + entry.d_un.d_val);
      if (entry.d_tag == DT_NEEDED)
        result.needed.push_back(text);
      else
        result.runPath += (result.runPath.empty() ? "" : ":") + text;
    }
  }
  return result;
}

/// The path each loaded library came from, by name prefix.
std::string loadedFrom(const std::string &prefix) {
  struct Search {
    std::string prefix, path;
  } search{prefix, ""};
  dl_iterate_phdr(
      [](dl_phdr_info *info, std::size_t, void *data) {
        auto *s = static_cast<Search *>(data);
        std::string name = info->dlpi_name ? info->dlpi_name : "";
        std::string base = name.substr(name.rfind('/') + 1);
        if (base.rfind(s->prefix, 0) == 0)
          s->path = name;
        return 0;
      },
      &search);
  return search.path;
}

/// rank-dependent small integers, exact in every dtype used below.
float input(int rank, std::size_t index) {
  return float(int(index % 5) - 2) * float(rank + 1) + float(index % 7);
}

std::vector<float> toHost(const void *device, std::size_t count) {
  std::vector<float> host(count);
  EXPECT_EQ(cudaMemcpy(host.data(), device, count * sizeof(float),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  return host;
}

void toDevice(void *device, const std::vector<float> &host) {
  ASSERT_EQ(cudaMemcpy(device, host.data(), host.size() * sizeof(float),
                       cudaMemcpyHostToDevice),
            cudaSuccess);
}

} // namespace

TEST(CudaNccl, WithoutAGpuConstructionIsAClearError) {
  if (everyRankHasAGpu())
    GTEST_SKIP() << "GPUs are present; CollectivesOnTheGpu covers them";
  bool mine = haveGpu();
  try {
    NcclCommunicator comm;
    FAIL() << "an NCCL communicator without a GPU";
  } catch (const Error &e) {
    std::string message = e.what();
    if (!mine)
      EXPECT_EQ(message.rfind("the NCCL communicator needs a GPU, but "
                              "cudaGetDeviceCount found none on host ",
                              0),
                0u)
          << message;
    else // a rank with a GPU hears about the others
      EXPECT_EQ(message.rfind("NcclCommunicator: rank", 0), 0u) << message;
  }
  // The failed set-up left MPI usable: the ranks still agree.
  int one = 1, sum = 0;
  ASSERT_EQ(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
            MPI_SUCCESS);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_EQ(sum, size);
}

TEST(CudaNccl, CollectivesOnTheGpu) {
  if (!everyRankHasAGpu())
    GTEST_SKIP() << "not every rank has a GPU";
  NcclCommunicator comm(MPI_COMM_WORLD, nullptr, 60.0);
  const int n = comm.size(), r = comm.rank();
  const std::size_t count = 37, total = count * std::size_t(n);
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, comm.device());
  void *send = nullptr, *recv = nullptr;
  ASSERT_EQ(cudaMalloc(&send, total * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&recv, total * sizeof(float)), cudaSuccess);
  std::vector<float> mine(total);
  for (std::size_t i = 0; i < total; ++i)
    mine[i] = input(r, i);

  // allReduce, out of place and in place.
  for (bool inPlace : {false, true}) {
    toDevice(send, mine);
    comm.allReduce(send, inPlace ? send : recv, count, CommDType::F32,
                   ReduceOp::Sum);
    auto got = toHost(inPlace ? send : recv, count);
    for (std::size_t i = 0; i < count; ++i) {
      float want = 0;
      for (int p = 0; p < n; ++p)
        want += input(p, i);
      ASSERT_EQ(got[i], want) << "allReduce inPlace=" << inPlace << " " << i;
    }
  }
  // allReduce max.
  toDevice(send, mine);
  comm.allReduce(send, recv, count, CommDType::F32, ReduceOp::Max);
  auto maxima = toHost(recv, count);
  for (std::size_t i = 0; i < count; ++i) {
    float want = input(0, i);
    for (int p = 1; p < n; ++p)
      want = std::max(want, input(p, i));
    ASSERT_EQ(maxima[i], want) << i;
  }
  // allGather, in place (own block of recv) and out of place.
  toDevice(send, mine);
  comm.allGather(send, recv, count, CommDType::F32);
  auto gathered = toHost(recv, total);
  for (int p = 0; p < n; ++p)
    for (std::size_t i = 0; i < count; ++i)
      ASSERT_EQ(gathered[std::size_t(p) * count + i], input(p, i));
  toDevice(recv, mine);
  void *own =
      static_cast<char *>(recv) + std::size_t(r) * count * sizeof(float);
  ASSERT_EQ(
      cudaMemcpy(own, send, count * sizeof(float), cudaMemcpyDeviceToDevice),
      cudaSuccess);
  comm.allGather(own, recv, count, CommDType::F32);
  EXPECT_EQ(toHost(recv, total), gathered);
  // reduceScatter, out of place and Comm.h's in place (result in front).
  for (bool inPlace : {false, true}) {
    toDevice(send, mine);
    comm.reduceScatter(send, inPlace ? send : recv, count, CommDType::F32);
    auto got = toHost(inPlace ? send : recv, count);
    for (std::size_t i = 0; i < count; ++i) {
      float want = 0;
      for (int p = 0; p < n; ++p)
        want += input(p, std::size_t(r) * count + i);
      ASSERT_EQ(got[i], want)
          << "reduceScatter inPlace=" << inPlace << " " << i;
    }
  }
  // broadcast from the last rank; others pass no send buffer.
  const int root = n - 1;
  toDevice(send, mine);
  comm.broadcast(r == root ? send : nullptr, recv, count, CommDType::F32, root);
  auto broadcast = toHost(recv, count);
  for (std::size_t i = 0; i < count; ++i)
    ASSERT_EQ(broadcast[i], input(root, i));
  // allToAll in place (copied aside).
  toDevice(send, mine);
  comm.allToAll(send, send, count, CommDType::F32);
  auto exchanged = toHost(send, total);
  for (int p = 0; p < n; ++p)
    for (std::size_t i = 0; i < count; ++i)
      ASSERT_EQ(exchanged[std::size_t(p) * count + i],
                input(p, std::size_t(r) * count + i));
  comm.barrier();
  // Numbered and counted by the base class, as for MPI.
  EXPECT_EQ(comm.lastSequenceNumber(), 10u);
  EXPECT_EQ(comm.stats()[CollectiveKind::AllReduce].calls, 3u);
  EXPECT_EQ(comm.stats()[CollectiveKind::Barrier].calls, 1u);
  cudaFree(send);
  cudaFree(recv);
}

TEST(CudaNccl, SplitCommunicatorsRunOverTheirGroup) {
  if (!everyRankHasAGpu())
    GTEST_SKIP() << "not every rank has a GPU";
  NcclCommunicator world(MPI_COMM_WORLD, nullptr, 60.0);
  const int n = world.size(), r = world.rank();
  // Ranks of the same parity, ordered by rank (one group on one rank).
  std::unique_ptr<Communicator> part = world.split(r % 2, r);
  EXPECT_EQ(part->size(), (n - r % 2 + 1) / 2);
  EXPECT_EQ(part->rank(), r / 2);
  EXPECT_EQ(part->jobRank(), r);
  auto &nccl = static_cast<NcclCommunicator &>(*part);
  EXPECT_EQ(nccl.device(), world.device());
  EXPECT_EQ(nccl.stream(), world.stream());
  void *buffer = nullptr;
  ASSERT_EQ(cudaMalloc(&buffer, sizeof(float)), cudaSuccess);
  const float mine = float(r + 1);
  ASSERT_EQ(cudaMemcpy(buffer, &mine, sizeof mine, cudaMemcpyHostToDevice),
            cudaSuccess);
  part->allReduce(buffer, buffer, 1, CommDType::F32, ReduceOp::Sum);
  float sum = 0;
  ASSERT_EQ(cudaMemcpy(&sum, buffer, sizeof sum, cudaMemcpyDeviceToHost),
            cudaSuccess);
  float want = 0;
  for (int p = r % 2; p < n; p += 2)
    want += float(p + 1);
  EXPECT_EQ(sum, want);
  // Its own numbering and counters; the parent's are untouched.
  EXPECT_EQ(part->lastSequenceNumber(), 1u);
  EXPECT_EQ(world.lastSequenceNumber(), 0u);
  part.reset(); // before the parent, whose stream it shares
  cudaFree(buffer);
}

TEST(CudaNccl, LinksTheToolkitLibraries) {
  // DSC_CUDA_LIBRARY_DIRS: the run path CMake was asked to set.
  const std::string expected = DSC_CUDA_LIBRARY_DIRS;
  DynamicSection dynamic = readDynamicSection(realPath("/proc/self/exe"));
  EXPECT_NE(dynamic.runPath.find(expected), std::string::npos)
      << "run path '" << dynamic.runPath << "'";
  for (const char *library : {"libcudart.so", "libcublasLt.so", "libnccl.so"}) {
    bool needed = false;
    for (const std::string &name : dynamic.needed)
      needed = needed || name.rfind(library, 0) == 0;
    EXPECT_TRUE(needed) << library << " is not DT_NEEDED";
    std::string path = loadedFrom(library);
    ASSERT_FALSE(path.empty()) << library << " is not loaded";
    bool fromToolkit = false;
    std::string directories = expected + ":";
    for (std::size_t start = 0, end;
         (end = directories.find(':', start)) != std::string::npos;
         start = end + 1)
      fromToolkit =
          fromToolkit || realPath(directoryOf(path)) ==
                             realPath(directories.substr(start, end - start));
    EXPECT_TRUE(fromToolkit)
        << library << " loaded from " << path << ", not from " << expected;
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) // one report, from rank 0
    delete ::testing::UnitTest::GetInstance()->listeners().Release(
        ::testing::UnitTest::GetInstance()
            ->listeners()
            .default_result_printer());
  int failed = RUN_ALL_TESTS();
  int anyFailed = 0;
  MPI_Allreduce(&failed, &anyFailed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return anyFailed;
}
