//===- PosixFile.cpp - checked POSIX file I/O for the io component --------===//

#include "PosixFile.h"

#include "dsc/runtime/Error.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstdio>

namespace dsc::rt::detail {

void PosixFile::throwErrno(const std::string &path, const std::string &what) {
  throw Error(path + ": " + what + ": " + std::strerror(errno));
}

PosixFile PosixFile::openChecked(const std::string &path, int flags,
                                 const char *what) {
  int fd;
  do
    fd = ::open(path.c_str(), flags | O_CLOEXEC, 0666);
  while (fd < 0 && errno == EINTR);
  if (fd < 0)
    throwErrno(path, what);
  return PosixFile(path, fd);
}

PosixFile PosixFile::openForReading(const std::string &path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer
  // that may never come (a job hung in start-up); the type is then checked
  // on the descriptor itself, so nothing can swap the file in between.
  PosixFile file = openChecked(path, O_RDONLY | O_NONBLOCK, "cannot open");
  struct stat st;
  if (::fstat(file.fd_, &st) != 0)
    throwErrno(path, "cannot stat");
  check(S_ISREG(st.st_mode), path + ": not a regular file");
  int flags = ::fcntl(file.fd_, F_GETFL);
  if (flags < 0 || ::fcntl(file.fd_, F_SETFL, flags & ~O_NONBLOCK) != 0)
    throwErrno(path, "cannot set blocking mode");
  return file;
}

PosixFile PosixFile::createNew(const std::string &path) {
  return openChecked(path, O_WRONLY | O_CREAT | O_EXCL, "cannot create");
}

PosixFile PosixFile::openForWritingInPlace(const std::string &path) {
  return openChecked(path, O_WRONLY, "cannot open for writing");
}

PosixFile PosixFile::openDirectory(const std::string &path) {
  return openChecked(path, O_RDONLY | O_DIRECTORY, "cannot open directory");
}

PosixFile::PosixFile(PosixFile &&other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_) {
  other.fd_ = -1;
}

PosixFile &PosixFile::operator=(PosixFile &&other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

PosixFile::~PosixFile() {
  if (fd_ >= 0)
    ::close(fd_);
}

uint64_t PosixFile::size() const {
  struct stat st;
  if (::fstat(fd_, &st) != 0)
    throwErrno(path_, "cannot stat");
  return static_cast<uint64_t>(st.st_size);
}

void PosixFile::readAt(void *dst, size_t bytes, uint64_t offset) const {
  auto *out = static_cast<char *>(dst);
  while (bytes > 0) {
    ssize_t n = ::pread(fd_, out, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      throwErrno(path_, "cannot read");
    check(n > 0, path_ + ": file ends early (truncated while in use?)");
    out += n;
    bytes -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

void PosixFile::writeAll(const void *src, size_t bytes) {
  const auto *in = static_cast<const char *>(src);
  while (bytes > 0) {
    ssize_t n = ::write(fd_, in, bytes);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      throwErrno(path_, "cannot write");
    in += n;
    bytes -= static_cast<size_t>(n);
  }
}

void PosixFile::sync() {
  if (::fsync(fd_) != 0)
    throwErrno(path_, "cannot fsync");
}

void PosixFile::close() {
  int fd = fd_;
  fd_ = -1;
  // No retry on EINTR: on Linux the descriptor is gone either way.
  if (::close(fd) != 0)
    throwErrno(path_, "cannot close");
}

void replaceFileAtomically(const std::string &path,
                           const std::function<void(PosixFile &)> &write) {
  // Unique per process and per call, so that threads and ranks writing
  // beside each other never share a temporary file.
  static std::atomic<unsigned> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(counter++);
  PosixFile file = PosixFile::createNew(tmp);
  try {
    write(file);
    file.sync();
    file.close();
    crashPoint();
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      PosixFile::throwErrno(path, "cannot rename " + tmp + " over it");
    crashPoint();
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  // Makes the rename itself durable. Best effort: some file systems refuse
  // fsync on a directory, and the data is already safe in the file.
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  try {
    PosixFile::openDirectory(dir).sync();
  } catch (const Error &) {
  }
}

void crashPoint() {
  static std::atomic<long> reached{0};
  const char *at = std::getenv(kCrashAtVariable);
  if (!at || !*at)
    return;
  char *end = nullptr;
  long target = std::strtol(at, &end, 10);
  if (*end == '\0' && ++reached == target)
    ::_exit(kCrashExitCode);
}

} // namespace dsc::rt::detail
