//===- NvmeFile.cpp - the NVMe tier's files and aligned buffers -----------===//

#include "NvmeFile.h"

#include "dsc/runtime/Error.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <utility>

namespace dsc::rt::detail {

void throwSystemError(const std::string &path, const std::string &what,
                      int error) {
  throw Error(path + ": " + what + ": " + std::strerror(error));
}

namespace {

int openRetrying(const std::string &path, int flags) {
  int fd;
  do
    fd = ::open(path.c_str(), flags | O_CLOEXEC, 0600);
  while (fd < 0 && errno == EINTR);
  return fd;
}

/// An existing directory, or Error "DIR: ...".
void checkDirectory(const std::string &path) {
  check(!path.empty(), "the NVMe path is empty");
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throwSystemError(path, "NVMe path", errno);
  check(S_ISDIR(st.st_mode), path + ": NVMe path is not a directory");
}

/// Writes and reads back one aligned block at offset 0 of `fd`. Returns 0,
/// or the errno of the first call that failed (EINVAL: O_DIRECT refused).
int probeTransfer(int fd) {
  AlignedBuffer out(kDirectAlignment), in(kDirectAlignment);
  for (size_t i = 0; i < kDirectAlignment; ++i)
    out.data()[i] = static_cast<char>(i * 7 + 1);
  ssize_t n;
  do
    n = ::pwrite(fd, out.data(), kDirectAlignment, 0);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return errno;
  do
    n = ::pread(fd, in.data(), kDirectAlignment, 0);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return errno;
  if (n != static_cast<ssize_t>(kDirectAlignment) ||
      std::memcmp(out.data(), in.data(), kDirectAlignment) != 0)
    return EIO;
  return 0;
}

/// Opens `path` (created if absent) for reading and writing, with O_DIRECT
/// unless `mode` is Buffered and as long as the file system accepts it;
/// sets `direct` and `reason` (why not direct). Throws Error for any
/// failure but a refused O_DIRECT in Auto mode.
int openProbed(const std::string &path, NvmeIoMode mode, int extraFlags,
               bool &direct, std::string &reason) {
  int flags = O_RDWR | O_CREAT | extraFlags;
  direct = mode != NvmeIoMode::Buffered;
  int fd = openRetrying(path, flags | (direct ? O_DIRECT : 0));
  if (fd < 0 && direct && errno == EINVAL) {
    reason = "the file system refuses O_DIRECT at open";
    direct = false;
    fd = openRetrying(path, flags);
  }
  if (fd < 0)
    throwSystemError(path, "cannot create", errno);
  if (mode == NvmeIoMode::Buffered)
    reason = "buffered I/O was asked for";
  return fd;
}

/// After openProbed: the aligned probe, and buffered I/O where it fails
/// with EINVAL (some file systems accept O_DIRECT at open, not in
/// transfers). Throws Error for other failures.
void probeDirect(int fd, const std::string &path, bool &direct,
                 std::string &reason) {
  int error = probeTransfer(fd);
  if (error == EINVAL && direct) {
    int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_DIRECT) != 0)
      throwSystemError(path, "cannot turn O_DIRECT off", errno);
    direct = false;
    reason = "the file system refuses O_DIRECT transfers";
    error = probeTransfer(fd);
  }
  if (error != 0)
    throwSystemError(path, "cannot write and read back a probe block", error);
}

} // namespace

NvmeFile::NvmeFile(const std::string &path, int rank, NvmeIoMode mode,
                   const Notice &notice) {
  checkDirectory(path);
  directory_ = path + "/dsc-rank" + std::to_string(rank);
  if (::mkdir(directory_.c_str(), 0700) != 0 && errno != EEXIST)
    throwSystemError(directory_, "cannot create", errno);
  path_ = directory_ + "/states";
  std::string reason;
  try {
    fd_ = openProbed(path_, mode, 0, direct_, reason);
    // Another live job on the same directory would overwrite our states;
    // a crashed one left a file nobody locks, reused (truncated) here.
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0)
      throwSystemError(path_,
                       errno == EWOULDBLOCK
                           ? "in use by another process (its NVMe path is "
                             "this one; give each job its own)"
                           : "cannot lock",
                       errno);
    locked_ = true;
    if (::ftruncate(fd_, 0) != 0)
      throwSystemError(path_, "cannot truncate", errno);
    probeDirect(fd_, path_, direct_, reason);
    if (!direct_ && mode == NvmeIoMode::Direct)
      throw Error(path_ + ": O_DIRECT was asked for, but " + reason);
    if (::ftruncate(fd_, 0) != 0)
      throwSystemError(path_, "cannot truncate", errno);
  } catch (...) {
    remove();
    throw;
  }
  if (!direct_ && mode == NvmeIoMode::Auto && notice)
    notice(directory_ + ": " + reason + " (tmpfs?); using buffered I/O");
}

void NvmeFile::remove() noexcept {
  if (fd_ >= 0) {
    // The file is ours only once locked; unlinked before the close drops
    // the lock, so that no other store reuses it in between.
    if (locked_)
      ::unlink(path_.c_str());
    ::close(fd_);
    fd_ = -1;
  }
  if (!directory_.empty())
    ::rmdir(directory_.c_str()); // fails, harmlessly, if something else is there
  directory_.clear();
}

NvmeFile::~NvmeFile() { remove(); }

void NvmeFile::reserve(uint64_t begin, uint64_t bytes) {
  if (bytes == 0)
    return;
  int rc;
  do
    rc = ::fallocate(fd_, 0, static_cast<off_t>(begin),
                     static_cast<off_t>(bytes));
  while (rc != 0 && errno == EINTR);
  if (rc != 0 && errno == EOPNOTSUPP)
    rc = ::ftruncate(fd_, static_cast<off_t>(begin + bytes));
  if (rc != 0)
    throwSystemError(path_,
                     "cannot reserve " + std::to_string(bytes) +
                         " bytes at offset " + std::to_string(begin),
                     errno);
}

} // namespace dsc::rt::detail

namespace dsc::rt {

using namespace detail;

NvmePathReport checkNvmePath(const std::string &path) {
  checkDirectory(path);
  static std::atomic<unsigned> counter{0};
  std::string probe = path + "/.dsc-nvme-probe." + std::to_string(::getpid()) +
                      "." + std::to_string(counter++);
  NvmePathReport report;
  int fd = -1;
  try {
    fd = openProbed(probe, NvmeIoMode::Auto, O_EXCL, report.direct,
                    report.reason);
    probeDirect(fd, probe, report.direct, report.reason);
  } catch (...) {
    if (fd >= 0) {
      ::close(fd);
      ::unlink(probe.c_str());
    }
    throw;
  }
  ::close(fd);
  if (::unlink(probe.c_str()) != 0)
    throwSystemError(probe, "cannot remove the probe file", errno);
  return report;
}

} // namespace dsc::rt

namespace dsc::rt::detail {

AlignedBuffer::AlignedBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0)
    return;
  void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw Error("cannot map " + std::to_string(bytes) +
                " bytes of I/O buffers: " + std::strerror(errno));
  data_ = static_cast<char *>(p);
  pinned_ = ::mlock(data_, bytes) == 0;
}

AlignedBuffer::~AlignedBuffer() {
  if (data_)
    ::munmap(data_, bytes_); // unlocks too
}

AlignedBuffer::AlignedBuffer(AlignedBuffer &&other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      pinned_(std::exchange(other.pinned_, false)) {}

AlignedBuffer &AlignedBuffer::operator=(AlignedBuffer &&other) noexcept {
  if (this != &other) {
    if (data_)
      ::munmap(data_, bytes_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    pinned_ = std::exchange(other.pinned_, false);
  }
  return *this;
}

} // namespace dsc::rt::detail
