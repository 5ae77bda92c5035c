//===- NvmeStore.h - per-rank state files with asynchronous I/O -*- C++ -*-===//
//
// The NVMe tier of ZeRO-Infinity (docs/nvme.md): states that live on disk
// rather than in memory, each addressed by a stable id and a byte range,
// read and written asynchronously. A request returns a handle at once and
// wait(handle) blocks until it is complete, so that the compiler can place
// "read ahead" and "wait" as separate ops, with compute in between.
//
// Layout: every state of a rank lives in one file, DIR/dsc-rank<R>/states,
// in an extent of its own that starts at a multiple of the block size
// (1 MiB by default, DeepSpeed's aio block_size). The file is locked while
// a store uses it (a second job on the same directory is refused; one that
// crashed left a stale file, which is reused) and removed, with its
// directory, when the store is destroyed.
//
// I/O: io_uring (liburing) with O_DIRECT, one I/O thread per store that
// keeps up to `queueDepth` requests of at most one block in flight, each
// block-aligned in the file (where io_uring is unavailable: pread and
// pwrite on that thread, one at a time, with a notice). A caller's buffer whose address, offset or
// size is not aligned to kDirectAlignment goes through page-aligned bounce
// buffers (pinned with mlock where RLIMIT_MEMLOCK allows); an aligned one
// is read or written in place. Where the file system refuses O_DIRECT
// (EINVAL at open, or on a first aligned probe), the store says so once
// through `notice` and uses buffered I/O, which also NvmeIoMode::Buffered
// selects.
//
// Errors are dsc::rt::Error with the path and errno's text, never an abort:
// a missing or unwritable directory and a state that does not fit
// (fallocate: ENOSPC, or EFBIG under RLIMIT_FSIZE) at addState; a failed or
// short transfer at wait(), for that request only (others and the states
// already written are unaffected); a request not complete after
// `timeoutSeconds` at wait(). Requests not yet waited for may not overlap
// unless all of them read (submission throws Error, whether or not the
// first is complete, so that a schedule that forgets a wait fails every
// time): the device completes requests in no particular order.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_NVMESTORE_H
#define DSC_RUNTIME_NVMESTORE_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace dsc::rt {

/// O_DIRECT transfers start and end at multiples of this many bytes of the
/// file and of memory: the page size, which every block size of a Linux
/// block device divides.
constexpr size_t kDirectAlignment = 4096;

enum class NvmeIoMode {
  /// O_DIRECT, buffered where the file system refuses it (with a notice).
  Auto,
  /// O_DIRECT or an Error.
  Direct,
  /// Through the page cache (tests of the fallback; file systems without
  /// O_DIRECT).
  Buffered,
};

struct NvmeOptions {
  /// The directory the rank's files go under (DeepSpeed's nvme_path). It
  /// must exist and be writable.
  std::string path;
  int rank = 0;
  NvmeIoMode mode = NvmeIoMode::Auto;
  /// Transfers in flight at once (DeepSpeed's aio queue_depth, 8).
  unsigned queueDepth = 8;
  /// The largest transfer, and the alignment of the extent of every state
  /// of at least this size (smaller states are packed at page boundaries,
  /// kDirectAlignment): a power of two, a multiple of kDirectAlignment
  /// (DeepSpeed's aio block_size, 1 MiB).
  size_t blockBytes = size_t(1) << 20;
  /// wait() throws Error when its request is not complete after this many
  /// seconds (a device that stopped answering); 0: waits without limit.
  double timeoutSeconds = 300;
  /// false: no io_uring; the I/O thread makes each transfer a pread or
  /// pwrite, one at a time, as where io_uring is unavailable (a seccomp
  /// filter, kernel.io_uring_disabled), which the store then says once
  /// through `notice`. A stuck transfer then also holds up the store's
  /// destruction.
  bool ioUring = true;
  /// Receives one-time notices (O_DIRECT refused, bounce buffers not
  /// pinned); empty: printed on stderr as "dsc-run: nvme: ...".
  std::function<void(const std::string &)> notice;
};

/// Counters since the store was created.
struct NvmeStats {
  uint64_t bytesRead = 0, bytesWritten = 0; // requested by callers
  uint64_t reads = 0, writes = 0;           // requests completed
  uint64_t bouncedBytes = 0; // bytes that went through bounce buffers
};

/// A request in flight; value 0 is no request.
struct NvmeHandle {
  uint64_t id = 0;
};

class NvmeStore {
public:
  using StateId = uint32_t;

  /// Creates DIR/dsc-rank<R>/ and its state file, probes O_DIRECT, starts
  /// the I/O thread. Throws Error (options out of range, a missing or
  /// unwritable directory, a directory another live store holds, O_DIRECT
  /// refused in Direct mode).
  explicit NvmeStore(NvmeOptions options);
  /// Waits for the requests in flight (each at most timeoutSeconds, then
  /// cancels them), stops the I/O thread, removes the file and the rank's
  /// directory. Never throws.
  ~NvmeStore();
  NvmeStore(const NvmeStore &) = delete;
  NvmeStore &operator=(const NvmeStore &) = delete;

  /// Reserves an extent of `bytes` bytes for state `id` (fallocate), zero
  /// until written. Throws Error when the id is taken or the space cannot
  /// be reserved; the states added before are unaffected.
  void addState(StateId id, uint64_t bytes);
  /// The size given to addState; throws Error for an unknown id.
  uint64_t stateBytes(StateId id) const;

  /// Starts reading bytes [offset, offset + bytes) of state `id` into
  /// `dst`, or writing them from `src`; the buffer must stay valid (and,
  /// for a write, unchanged) until wait() returns. Throws Error for an
  /// unknown id, a range past the state's end, or an overlap with a
  /// request not yet waited for that is not a read beside a read (with
  /// O_DIRECT, in the same kDirectAlignment blocks of the file).
  NvmeHandle read(StateId id, uint64_t offset, void *dst, size_t bytes);
  NvmeHandle write(StateId id, uint64_t offset, const void *src, size_t bytes);

  /// Blocks until `handle`'s request is complete. Throws Error when it
  /// failed ("FILE: cannot write state 3 bytes [0, 4096): <strerror>"),
  /// when it is not complete after timeoutSeconds (the request stays in
  /// flight; wait may be called again), or for a handle that is unknown or
  /// was already waited for.
  void wait(NvmeHandle handle);
  /// Whether wait(handle) would return (or throw) without blocking.
  bool ready(NvmeHandle handle) const;

  /// Whether the store uses O_DIRECT (false: buffered).
  bool direct() const;
  /// Whether transfers go through io_uring (false: pread and pwrite).
  bool ioUring() const;
  /// The state file, DIR/dsc-rank<R>/states.
  const std::string &file() const;
  NvmeStats stats() const;

  class Engine;

private:
  std::unique_ptr<Engine> engine_;
};

/// What checkNvmePath found.
struct NvmePathReport {
  bool direct = false;
  /// Why O_DIRECT is not used ("" when it is).
  std::string reason;
};

/// Checks a --nvme-path at start-up, before any state goes there: an
/// existing directory where this process can create, write, read back
/// (O_DIRECT where the file system allows) and remove a probe file. Throws
/// Error "DIR: <problem>" otherwise.
NvmePathReport checkNvmePath(const std::string &path);

} // namespace dsc::rt

#endif // DSC_RUNTIME_NVMESTORE_H
