//===- PosixFile.h - checked POSIX file I/O for the io component -*- C++
//-*-===//
//
// An owned file descriptor whose every failure is an Error of the form
// "PATH: <problem>", so that the readers and writers above it only say what
// they check. Internal to lib/io; not part of the runtime's interface.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_LIB_IO_POSIXFILE_H
#define DSC_RUNTIME_LIB_IO_POSIXFILE_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace dsc::rt::detail {

class PosixFile {
public:
  /// Opens a regular file for reading; a directory or device is refused.
  static PosixFile openForReading(const std::string &path);
  /// Creates `path`, which must not exist yet, for writing (mode 0666 less
  /// the umask, as for any new file).
  static PosixFile createNew(const std::string &path);
  /// Opens an existing file for writing at its start, without creating or
  /// truncating it: a character device or FIFO an output names.
  static PosixFile openForWritingInPlace(const std::string &path);
  /// Opens a directory, for sync() after a rename into it.
  static PosixFile openDirectory(const std::string &path);

  PosixFile(PosixFile &&other) noexcept;
  PosixFile &operator=(PosixFile &&other) noexcept;
  PosixFile(const PosixFile &) = delete;
  PosixFile &operator=(const PosixFile &) = delete;
  ~PosixFile(); // closes without checking; call close() to check

  const std::string &path() const { return path_; }
  int fd() const { return fd_; }
  uint64_t size() const;

  /// Reads exactly `bytes` at `offset` (pread: safe from several threads);
  /// a file that ends early is an Error.
  void readAt(void *dst, size_t bytes, uint64_t offset) const;
  void writeAll(const void *src, size_t bytes);
  void sync();
  void close();

  /// "PATH: <what>: <strerror(errno)>".
  [[noreturn]] static void throwErrno(const std::string &path,
                                      const std::string &what);

private:
  PosixFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  /// ::open, retried on EINTR; failure is "PATH: <what>: <strerror>".
  static PosixFile openChecked(const std::string &path, int flags,
                               const char *what);
  std::string path_;
  int fd_ = -1;
};

/// Replaces `path` atomically with what `write` puts in a new file: a
/// temporary file beside it (unique per process and call), fsync, rename,
/// then a best-effort fsync of the directory so the rename is durable. On
/// failure the temporary file is removed and `path` is untouched.
void replaceFileAtomically(const std::string &path,
                           const std::function<void(PosixFile &)> &write);

/// Writes an output the user named (OutputFile.h): through
/// replaceFileAtomically for a regular file or a new path, in place for a
/// character device or FIFO; refuses anything else.
void writeOutputFile(const std::string &path,
                     const std::function<void(PosixFile &)> &write);

/// A point where a crash must leave the files consistent: a rename of
/// replaceFileAtomically, and each step of a checkpoint's commit. With the
/// environment variable DSC_TEST_CRASH_AT=K, the K-th point the process
/// reaches ends it at once (_exit(kCrashExitCode), no cleanup), as a kill
/// would; tests loop over K to interrupt a save at every point.
void crashPoint();
constexpr const char *kCrashAtVariable = "DSC_TEST_CRASH_AT";
constexpr int kCrashExitCode = 86;

} // namespace dsc::rt::detail

#endif // DSC_RUNTIME_LIB_IO_POSIXFILE_H
