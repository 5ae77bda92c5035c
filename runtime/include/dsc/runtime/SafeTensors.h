//===- SafeTensors.h - safetensors reader and writer -------------*- C++
//-*-===//
//
// Weights and checkpoints live in safetensors files keyed by fully-qualified
// PyTorch names, the names the IR's dsc.state ops carry. The format
// (https://huggingface.co/docs/safetensors): an 8-byte little-endian header
// length N, N bytes of JSON mapping each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
// byte after the header) plus an optional "__metadata__" of strings, then the
// raw little-endian row-major data.
//
// The reader validates the whole header when the file is opened, so that a
// corrupt or hostile file is one Error "PATH: <problem>" before any tensor is
// used. The writer produces the same bytes as python/dsc/safetensors.py.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_SAFETENSORS_H
#define DSC_RUNTIME_SAFETENSORS_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dsc::rt {

/// The safetensors element types the runtime reads and writes.
enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, U16, BOOL };

/// Bytes per element.
size_t dtypeSize(DType dtype);
/// The format's spelling ("F32", "BF16", ...).
const char *dtypeName(DType dtype);
/// Inverse of dtypeName; throws Error for any other string.
DType parseDType(const std::string &name);
/// The index of the first of `count` elements of `dtype` at `data` that is
/// NaN or infinite, or -1 when every one is finite (always for integers).
/// Loading refuses such weights: training from them cannot recover.
int64_t firstNonFinite(const void *data, DType dtype, size_t count);
/// Throws Error "WHERE: tensor 'NAME' holds <nan|inf|-inf> at element I
/// (of COUNT)" when firstNonFinite finds one.
void checkFinite(const void *data, DType dtype, size_t count,
                 const std::string &where, const std::string &name);

struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape; // empty for a 0-d tensor
  /// Position of the tensor's first byte in the file: 8 + N +
  /// data_offsets[0] (absolute, so that it can be passed to pread or mmap).
  size_t offset;
  size_t bytes; // numel() * dtypeSize(dtype)
  int64_t numel() const;
};

namespace detail {
class PosixFile;
}

class SafeTensorsFile {
public:
  /// Opens `path` and validates its header: JSON exactly filling its
  /// declared length (padding spaces allowed), dtypes, shapes, byte counts,
  /// and data_offsets that tile the data section exactly, as the format
  /// requires (no overlap, no hole, nothing after the last tensor). Throws
  /// Error "PATH: <problem>".
  static SafeTensorsFile open(const std::string &path);

  /// Throws Error naming the file and the tensor when there is no such
  /// tensor.
  const TensorInfo &info(const std::string &name) const;
  bool contains(const std::string &name) const;
  /// Tensor names, sorted.
  std::vector<std::string> names() const;
  /// "__metadata__", empty when the file has none.
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }
  /// Copies the tensor's bytes into `dst`; `dstBytes` must equal
  /// info(name).bytes. Safe to call from several threads at once.
  void read(const std::string &name, void *dst, size_t dstBytes) const;
  /// Copies `bytes` bytes of the tensor from byte `offset` of its data into
  /// `dst` (a rank's slice of a partitioned state); the range must lie in
  /// the tensor.
  void readRange(const std::string &name, size_t offset, void *dst,
                 size_t bytes) const;
  const std::string &path() const { return path_; }

private:
  SafeTensorsFile() = default;
  std::string path_;
  std::shared_ptr<const detail::PosixFile> file_; // open for read()
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// A tensor to write: `data` holds numel * dtypeSize(dtype) bytes, row-major,
/// little-endian.
struct TensorView {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void *data;
};

/// Writes `tensors` to `path` atomically: a temporary file in the same
/// directory, fsync, rename over `path`, fsync of the directory, so that a
/// crash leaves either the old file or the new one. A `path` that is a
/// character device or FIFO is written in place, never replaced; a symbolic
/// link is followed; a directory, block device or socket is refused
/// (OutputFile.h). Tensors go in sorted
/// name order and the header is padded with spaces to a multiple of 8 bytes,
/// as python/dsc/safetensors.py does: the two write identical bytes for the
/// same tensors and metadata. Throws Error "PATH: <problem>" for duplicate
/// or reserved names, negative dimensions, and I/O failures.
void writeSafeTensors(const std::string &path,
                      const std::vector<TensorView> &tensors,
                      const std::map<std::string, std::string> &metadata = {});

} // namespace dsc::rt

#endif // DSC_RUNTIME_SAFETENSORS_H
