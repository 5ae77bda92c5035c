//===- NvmeStoreTest.cpp - the NVMe tier's file engine --------------------===//
//
// Round trips through NvmeStore in both I/O modes (O_DIRECT and buffered)
// with sizes, offsets and buffers that are not aligned, many requests in
// flight at once, and the faults: missing, unwritable and full paths, a file
// truncated under the store, a request past its timeout, io_uring refused. Every store lives
// in a fresh scratch directory (on the machine's temporary file system,
// which must accept O_DIRECT for the Direct cases).
//
//===----------------------------------------------------------------------===//

#include "ErrorOf.h"
#include "ScratchDir.h"

#include "dsc/runtime/NvmeStore.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <cstddef>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <iterator>
#include <random>
#include <vector>

namespace dsc::rt {
namespace {

using test::errorOf;
using test::ScratchDir;
using ::testing::HasSubstr;

constexpr size_t kMiB = size_t(1) << 20;

NvmeOptions optionsFor(const ScratchDir &dir, NvmeIoMode mode) {
  NvmeOptions options;
  options.path = dir.path();
  options.mode = mode;
  options.queueDepth = 4;
  options.timeoutSeconds = 60;
  return options;
}

/// Bytes that differ at every offset of a state and between states.
std::vector<char> pattern(size_t bytes, unsigned seed) {
  std::vector<char> out(bytes);
  std::mt19937 random(seed);
  for (char &c : out)
    c = static_cast<char>(random());
  return out;
}

/// Runs `body` in a forked child (no threads are running in the test
/// process between tests) and returns what it returned, or how it died.
std::string inChild(const std::function<std::string()> &body) {
  int fds[2];
  if (::pipe(fds) != 0)
    return "pipe failed";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    try {
      out = body();
    } catch (const std::exception &error) {
      out = std::string("exception: ") + error.what();
    }
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof(buffer))) > 0;)
    out.append(buffer, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status))
    return "child ended by signal " + std::to_string(WTERMSIG(status));
  return out;
}

/// The I/O mode, and whether transfers go through io_uring (else pread and
/// pwrite, the fallback where io_uring is unavailable).
struct Engine {
  NvmeIoMode mode;
  bool ioUring;
};

class NvmeStoreModes : public ::testing::TestWithParam<Engine> {
protected:
  NvmeOptions options(const ScratchDir &dir) const {
    NvmeOptions options = optionsFor(dir, GetParam().mode);
    options.ioUring = GetParam().ioUring;
    return options;
  }
  bool direct() const { return GetParam().mode == NvmeIoMode::Direct; }
};

TEST_P(NvmeStoreModes, RoundTripOfWholeAlignedStates) {
  ScratchDir dir;
  NvmeStore store(options(dir));
  EXPECT_EQ(store.direct(), direct());
  EXPECT_EQ(store.ioUring(), GetParam().ioUring);
  // Page-aligned buffers whose sizes are whole pages: no bounce in either
  // mode. 3 MiB + 8 KiB crosses block boundaries.
  const size_t bytes = 3 * kMiB + 8192;
  std::vector<char> data = pattern(bytes, 1);
  void *out = std::aligned_alloc(kDirectAlignment, bytes);
  void *in = std::aligned_alloc(kDirectAlignment, bytes);
  std::memcpy(out, data.data(), bytes);
  store.addState(7, bytes);
  EXPECT_EQ(store.stateBytes(7), bytes);
  store.wait(store.write(7, 0, out, bytes));
  store.wait(store.read(7, 0, in, bytes));
  EXPECT_EQ(std::memcmp(in, data.data(), bytes), 0);
  NvmeStats stats = store.stats();
  EXPECT_EQ(stats.bytesWritten, bytes);
  EXPECT_EQ(stats.bytesRead, bytes);
  EXPECT_EQ(stats.writes, 1u);
  EXPECT_EQ(stats.reads, 1u);
  EXPECT_EQ(stats.bouncedBytes, 0u);
  std::free(out);
  std::free(in);
}

TEST_P(NvmeStoreModes, UnalignedWritesKeepTheBytesBesideThem) {
  ScratchDir dir;
  NvmeStore store(options(dir));
  // Two states, so that a write at the end of the first cannot touch the
  // second (each has extents of whole blocks).
  const size_t bytes = 2 * kMiB + 12345;
  std::vector<char> shadow = pattern(bytes, 2), other = pattern(777, 3);
  store.addState(0, bytes);
  store.addState(1, other.size());
  store.wait(store.write(0, 0, shadow.data(), bytes));
  store.wait(store.write(1, 0, other.data(), other.size()));

  // Ranges from buffers at odd addresses: inside one page, across a page,
  // across the first block boundary, a single byte, the last bytes.
  struct Range {
    size_t offset, bytes;
  };
  std::vector<Range> ranges = {{1, 10},         {4000, 200},
                               {kMiB - 3, 7},   {kMiB - 5000, 70000},
                               {123457, 1},     {bytes - 9, 9},
                               {2 * kMiB, 12345}};
  std::vector<char> source(bytes + 1);
  unsigned seed = 10;
  for (const Range &range : ranges) {
    std::vector<char> update = pattern(range.bytes, seed++);
    char *from = source.data() + 1; // never page-aligned
    std::memcpy(from, update.data(), range.bytes);
    store.wait(store.write(0, range.offset, from, range.bytes));
    std::memcpy(shadow.data() + range.offset, update.data(), range.bytes);
  }
  std::vector<char> back(bytes + 3);
  store.wait(store.read(0, 0, back.data() + 3, bytes));
  EXPECT_EQ(std::memcmp(back.data() + 3, shadow.data(), bytes), 0);
  for (const Range &range : ranges) {
    std::vector<char> part(range.bytes + 1);
    store.wait(store.read(0, range.offset, part.data() + 1, range.bytes));
    EXPECT_EQ(std::memcmp(part.data() + 1, shadow.data() + range.offset,
                          range.bytes),
              0)
        << "bytes [" << range.offset << ", " << range.offset + range.bytes
        << ")";
  }
  std::vector<char> otherBack(other.size());
  store.wait(store.read(1, 0, otherBack.data(), otherBack.size()));
  EXPECT_EQ(otherBack, other);
  if (store.direct())
    EXPECT_GT(store.stats().bouncedBytes, 0u);
  else
    EXPECT_EQ(store.stats().bouncedBytes, 0u);
}

TEST_P(NvmeStoreModes, SmallStatesShareBlocksLargeOnesStartAtOne) {
  ScratchDir dir;
  NvmeStore store(options(dir));
  // 100 states of a bias's size take a page each, not a block each; the
  // large state after them starts at the next block boundary.
  std::vector<std::vector<char>> small;
  for (unsigned i = 0; i < 100; ++i) {
    small.push_back(pattern(100 + i, 10 + i));
    store.addState(i, small.back().size());
  }
  EXPECT_EQ(std::filesystem::file_size(store.file()), 100 * kDirectAlignment);
  const size_t large = kMiB + 5;
  std::vector<char> big = pattern(large, 7);
  store.addState(100, large);
  EXPECT_EQ(std::filesystem::file_size(store.file()),
            kMiB + (large + kDirectAlignment - 1) / kDirectAlignment *
                       kDirectAlignment);
  // Writes in flight together to neighbouring states keep each other's
  // bytes (no two states share a page).
  std::vector<NvmeHandle> writes;
  for (unsigned i = 0; i < 100; ++i)
    writes.push_back(store.write(i, 0, small[i].data(), small[i].size()));
  writes.push_back(store.write(100, 0, big.data(), large));
  for (NvmeHandle handle : writes)
    store.wait(handle);
  for (unsigned i = 0; i < 100; ++i) {
    std::vector<char> back(small[i].size());
    store.wait(store.read(i, 0, back.data(), back.size()));
    EXPECT_EQ(back, small[i]) << "state " << i;
  }
  std::vector<char> back(large);
  store.wait(store.read(100, 0, back.data(), large));
  EXPECT_EQ(back, big);
}

TEST_P(NvmeStoreModes, ManyRequestsInFlightCompleteInAnyWaitOrder) {
  ScratchDir dir;
  NvmeOptions options = this->options(dir);
  options.queueDepth = 3;
  options.blockBytes = 64 * 1024; // many chunks per request
  NvmeStore store(options);
  constexpr int kStates = 24;
  std::vector<std::vector<char>> data, back;
  std::vector<NvmeHandle> handles;
  for (int s = 0; s < kStates; ++s) {
    size_t bytes = 100000 + 4096 * s + s;
    data.push_back(pattern(bytes, 100 + s));
    back.emplace_back(bytes);
    store.addState(s, bytes);
    handles.push_back(store.write(s, 0, data.back().data(), bytes));
  }
  for (int s = kStates - 1; s >= 0; --s)
    store.wait(handles[s]);
  handles.clear();
  // Reads of the same state may overlap each other.
  std::vector<char> twice(data[5].size());
  handles.push_back(store.read(5, 0, twice.data(), twice.size()));
  for (int s = 0; s < kStates; ++s)
    handles.push_back(store.read(s, 0, back[s].data(), back[s].size()));
  for (size_t i = 0; i < handles.size(); i += 2)
    store.wait(handles[i]);
  for (size_t i = 1; i < handles.size(); i += 2)
    store.wait(handles[i]);
  for (int s = 0; s < kStates; ++s)
    EXPECT_EQ(back[s], data[s]) << "state " << s;
  EXPECT_EQ(twice, data[5]);
  EXPECT_EQ(store.stats().reads, static_cast<uint64_t>(kStates + 1));
}

INSTANTIATE_TEST_SUITE_P(
    , NvmeStoreModes,
    ::testing::Values(Engine{NvmeIoMode::Direct, true},
                      Engine{NvmeIoMode::Buffered, true},
                      Engine{NvmeIoMode::Direct, false},
                      Engine{NvmeIoMode::Buffered, false}),
    [](const auto &info) {
      return std::string(info.param.mode == NvmeIoMode::Direct ? "Direct"
                                                               : "Buffered") +
             (info.param.ioUring ? "IoUring" : "PreadPwrite");
    });

TEST(NvmeStore, RefusesBadRequests) {
  ScratchDir dir;
  NvmeStore store(optionsFor(dir, NvmeIoMode::Auto));
  std::vector<char> buffer(8192);
  store.addState(1, 5000);
  EXPECT_THAT(errorOf([&] { store.addState(1, 10); }),
              HasSubstr("NVMe state 1 was already added"));
  EXPECT_THAT(errorOf([&] { store.read(2, 0, buffer.data(), 1); }),
              HasSubstr("read of state 2 bytes [0, 1): no NVMe state 2"));
  EXPECT_THAT(errorOf([&] { store.read(1, 4000, buffer.data(), 1001); }),
              HasSubstr("read of state 1 bytes [4000, 5001): past the "
                        "state's end (5000 bytes)"));
  EXPECT_THAT(errorOf([&] { store.stateBytes(9); }),
              HasSubstr("no NVMe state 9"));

  // A write, then anything touching its blocks before its wait.
  NvmeHandle write = store.write(1, 0, buffer.data(), 100);
  EXPECT_THAT(errorOf([&] { store.read(1, 50, buffer.data() + 200, 10); }),
              HasSubstr("read of state 1 bytes [50, 60) overlaps the write of "
                        "state 1 bytes [0, 100) not yet waited for"));
  store.wait(write);
  EXPECT_THAT(errorOf([&] { store.wait(write); }),
              HasSubstr("NVMe handle " + std::to_string(write.id) +
                        " is unknown or was already waited for"));
  // A zero-byte request is complete at once.
  NvmeHandle empty = store.read(1, 5000, nullptr, 0);
  EXPECT_TRUE(store.ready(empty));
  store.wait(empty);
}

TEST(NvmeStore, FilesAreLockedWhileInUseAndRemovedAtTheEnd) {
  ScratchDir dir;
  std::string rankDir = dir.file("dsc-rank3");
  NvmeOptions options = optionsFor(dir, NvmeIoMode::Auto);
  options.rank = 3;
  {
    // A stale file of a job that crashed is reused.
    std::filesystem::create_directory(rankDir);
    dir.write("dsc-rank3/states", "left by a crashed job");
    NvmeStore store(options);
    EXPECT_EQ(store.file(), rankDir + "/states");
    store.addState(0, 10);
    EXPECT_THAT(errorOf([&] { NvmeStore second(options); }),
                HasSubstr(rankDir + "/states: in use by another process"));
    // The refused store left the first one's file alone.
    EXPECT_TRUE(std::filesystem::exists(store.file()));
    std::vector<char> data = pattern(10, 4), back(10);
    store.wait(store.write(0, 0, data.data(), 10));
    store.wait(store.read(0, 0, back.data(), 10));
    EXPECT_EQ(back, data);
  }
  EXPECT_FALSE(std::filesystem::exists(rankDir));
}

TEST(NvmeStore, MissingOrUnwritablePathsAreErrors) {
  ScratchDir dir;
  NvmeOptions options = optionsFor(dir, NvmeIoMode::Auto);
  options.path = dir.file("absent");
  EXPECT_THAT(errorOf([&] { NvmeStore store(options); }),
              HasSubstr(dir.file("absent") +
                        ": NVMe path: No such file or directory"));
  EXPECT_THAT(errorOf([&] { checkNvmePath(options.path); }),
              HasSubstr("No such file or directory"));
  options.path = dir.write("file", "x");
  EXPECT_THAT(errorOf([&] { NvmeStore store(options); }),
              HasSubstr(dir.file("file") + ": NVMe path is not a directory"));

  // A directory this process cannot write: as root, which writes anywhere,
  // the child drops to the user nobody first.
  std::string readOnly = dir.file("read-only");
  ::chmod(dir.path().c_str(), 0755);
  ::mkdir(readOnly.c_str(), 0555);
  std::string message = inChild([&]() -> std::string {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0))
      return "cannot become nobody";
    NvmeOptions child = options;
    child.path = readOnly;
    std::string store = errorOf([&] { NvmeStore s(child); });
    std::string check = errorOf([&] { checkNvmePath(readOnly); });
    return store + "\n" + check;
  });
  EXPECT_THAT(message, HasSubstr(readOnly +
                                 "/dsc-rank0: cannot create: Permission denied"));
  EXPECT_THAT(message, HasSubstr(readOnly + "/.dsc-nvme-probe."));
}

TEST(NvmeStore, CheckNvmePathProbesAndLeavesNothing) {
  ScratchDir dir;
  NvmePathReport report = checkNvmePath(dir.path());
  // The scratch directory is on a file system with O_DIRECT (see above).
  EXPECT_TRUE(report.direct) << report.reason;
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(NvmeStore, AFullFileSystemIsAnErrorThatLosesNothing) {
  ScratchDir dir;
  // RLIMIT_FSIZE stands for a full disk: the reservation fails with EFBIG
  // (as dsc-run does, the child ignores SIGXFSZ, which would end it).
  std::string message = inChild([&]() -> std::string {
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{8 * kMiB, 8 * kMiB};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0)
      return "setrlimit failed";
    NvmeStore store(optionsFor(dir, NvmeIoMode::Auto));
    std::vector<char> data = pattern(3 * kMiB + 1, 5), back(data.size());
    store.addState(0, data.size());
    store.wait(store.write(0, 0, data.data(), data.size()));
    std::string error = errorOf([&] { store.addState(1, 16 * kMiB); });
    // What was written before is still there, and the store still works.
    store.wait(store.read(0, 0, back.data(), back.size()));
    store.addState(2, kMiB);
    return error + (back == data ? "\nintact" : "\nlost");
  });
  EXPECT_THAT(message, HasSubstr("dsc-rank0/states: cannot reserve 16777216 "
                                 "bytes at offset 4194304: File too large"));
  EXPECT_THAT(message, HasSubstr("\nintact"));
  EXPECT_FALSE(std::filesystem::exists(dir.file("dsc-rank0")));
}

TEST(NvmeStore, AFileTruncatedUnderTheStoreIsAnError) {
  ScratchDir dir;
  NvmeStore store(optionsFor(dir, NvmeIoMode::Direct));
  std::vector<char> data = pattern(5 * kMiB, 6);
  store.addState(0, data.size());
  store.wait(store.write(0, 0, data.data(), data.size()));
  ASSERT_EQ(::truncate(store.file().c_str(), 4096), 0);
  std::string error =
      errorOf([&] { store.wait(store.read(0, 0, data.data(), data.size())); });
  EXPECT_THAT(error, HasSubstr(store.file() + ": the file ends early"));
  EXPECT_THAT(error, HasSubstr("read of state 0 bytes [0, 5242880)"));
}

TEST(NvmeStore, ARequestPastItsTimeoutIsAnError) {
  ScratchDir dir;
  NvmeOptions options = optionsFor(dir, NvmeIoMode::Direct);
  // 128 MiB cannot be read in a millisecond (128 GB/s).
  options.timeoutSeconds = 0.001;
  std::string error;
  // Declared before the store: it must outlive the request in flight.
  std::vector<char> big(128 * kMiB);
  {
    NvmeStore store(options);
    store.addState(0, 128 * kMiB);
    NvmeHandle read = store.read(0, 0, big.data(), big.size());
    error = errorOf([&] { store.wait(read); });
    // The store closes with the request in flight: cancelled, no hang.
  }
  EXPECT_THAT(error, HasSubstr("read of state 0 bytes [0, 134217728) is not "
                               "complete after 0.001 s (the NVMe timeout)"));
}

TEST(NvmeStore, FallsBackToPreadAndPwriteWithoutIoUring) {
  ScratchDir dir;
  // As a container's default seccomp profile does: io_uring_setup fails
  // with EPERM.
  std::string message = inChild([&]() -> std::string {
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0)
      return "cannot install the seccomp filter";
    NvmeOptions options = optionsFor(dir, NvmeIoMode::Auto);
    std::string notices;
    options.notice = [&](const std::string &text) { notices += text + "\n"; };
    NvmeStore store(options);
    std::vector<char> data = pattern(kMiB + 3, 7), back(data.size());
    store.addState(0, data.size());
    store.wait(store.write(0, 0, data.data(), data.size()));
    store.wait(store.read(0, 0, back.data(), back.size()));
    return notices + (store.ioUring() ? "io_uring" : "pread") +
           (back == data ? " intact" : " lost");
  });
  EXPECT_THAT(message, HasSubstr("io_uring is unavailable (Operation not "
                                 "permitted; kernel.io_uring_disabled, or a "
                                 "seccomp filter?): transfers run one at a "
                                 "time with pread and pwrite\n"));
  EXPECT_THAT(message, HasSubstr("pread intact"));
}

TEST(NvmeStore, RefusesOptionsOutOfRange) {
  ScratchDir dir;
  NvmeOptions options = optionsFor(dir, NvmeIoMode::Auto);
  options.blockBytes = 3000;
  EXPECT_THAT(errorOf([&] { NvmeStore store(options); }),
              HasSubstr("block size 3000 is not a power of two"));
  options = optionsFor(dir, NvmeIoMode::Auto);
  options.queueDepth = 0;
  EXPECT_THAT(errorOf([&] { NvmeStore store(options); }),
              HasSubstr("queue depth 0 is outside [1, 1024]"));
}

} // namespace
} // namespace dsc::rt
