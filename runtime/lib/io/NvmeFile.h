//===- NvmeFile.h - the NVMe tier's files and aligned buffers ---*- C++ -*-===//
//
// What NvmeStore needs of the file system, apart from the transfers: its
// rank's directory and locked state file, O_DIRECT probed (and given up for
// buffered I/O where the file system refuses it), extents reserved with
// fallocate, everything removed at the end; and page-aligned buffers,
// pinned where RLIMIT_MEMLOCK allows. Internal to lib/io.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_LIB_IO_NVMEFILE_H
#define DSC_RUNTIME_LIB_IO_NVMEFILE_H

#include "dsc/runtime/NvmeStore.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace dsc::rt::detail {

using Notice = std::function<void(const std::string &)>;

/// DIR/dsc-rank<R>/states, open for reading and writing, locked.
class NvmeFile {
public:
  /// Creates the directory (an existing one is reused) and the file (a
  /// stale one, which no live store locks, is truncated). Throws Error.
  NvmeFile(const std::string &path, int rank, NvmeIoMode mode,
           const Notice &notice);
  /// Closes and removes the file, then the directory if it is empty.
  ~NvmeFile();
  NvmeFile(const NvmeFile &) = delete;
  NvmeFile &operator=(const NvmeFile &) = delete;

  int fd() const { return fd_; }
  bool direct() const { return direct_; }
  const std::string &path() const { return path_; }

  /// Reserves bytes [begin, begin + bytes) of the file, which grows to
  /// their end: fallocate, or where the file system does not support it
  /// (EOPNOTSUPP) ftruncate, whose blocks are found at the first write.
  /// Throws Error "FILE: cannot reserve ...: <strerror>".
  void reserve(uint64_t begin, uint64_t bytes);

private:
  void remove() noexcept;

  std::string directory_, path_;
  int fd_ = -1;
  bool direct_ = false;
  bool locked_ = false;
};

/// `bytes` (a multiple of kDirectAlignment) of page-aligned memory,
/// mlock'ed where the limit allows. Throws Error when none is left.
class AlignedBuffer {
public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes);
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer &&other) noexcept;
  AlignedBuffer &operator=(AlignedBuffer &&other) noexcept;

  char *data() const { return data_; }
  size_t size() const { return bytes_; }
  bool pinned() const { return pinned_; }

private:
  char *data_ = nullptr;
  size_t bytes_ = 0;
  bool pinned_ = false;
};

/// "PATH: <what>: <strerror(error)>".
[[noreturn]] void throwSystemError(const std::string &path,
                                   const std::string &what, int error);

} // namespace dsc::rt::detail

#endif // DSC_RUNTIME_LIB_IO_NVMEFILE_H
