//===- SampleData.h - training samples from a safetensors file --*- C++ -*-===//
//
// Data for any model: a safetensors file whose tensors are named after the
// graph's inputs, each with the sample dimension first ([n, ...] for an
// input [micro batch, ...]). batch() cuts a rank's share of a step out of
// every tensor alike, by the layout every format shares (BatchLayout.h),
// so row i of every input comes from the same sample.
//
// The file is checked against what the model takes when it is opened, so
// that a mismatch is one Error "PATH: <problem>" naming the tensor before
// anything runs. Rows are read as they are needed (pread), as tokens are:
// each rank touches only its own samples.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_SAMPLEDATA_H
#define DSC_RUNTIME_SAMPLEDATA_H

#include "dsc/runtime/SafeTensors.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dsc::rt {

/// What one input takes from the file.
struct SampleSpec {
  std::string name;
  DType dtype;
  /// One sample's shape: the input's without its leading batch dimension.
  std::vector<int64_t> shape;
  /// > 0: an integer input's values must lie in [0, indexLimit) (they
  /// index an embedding or a classifier's classes).
  int64_t indexLimit = 0;
};

class SampleData {
public:
  /// Opens `path` (SafeTensorsFile::open's checks) and holds it to `specs`:
  /// a tensor for every spec, of its dtype and of shape [n, spec.shape...]
  /// with the same n > 0 for all, and no other tensor. Throws Error
  /// "PATH: <problem>" naming the tensor.
  static SampleData open(const std::string &path,
                         std::vector<SampleSpec> specs);

  /// n, the number of samples.
  int64_t size() const { return size_; }
  const std::string &path() const { return file_.path(); }

  /// Copies rank `rank`'s rows of batch `step` (0-based) of `globalBatch`
  /// samples among `worldSize` ranks (BatchShare) into `inputs[i]`, which
  /// holds globalBatch/worldSize samples of specs[i], row-major. Throws
  /// Error for a bad layout (BatchShare), "PATH: tensor 'NAME' sample S
  /// holds V at element E, outside the artifact's range [0, L)" for an
  /// index out of range, and checkFinite's error, naming the sample, for a
  /// NaN or infinity in a float input.
  void batch(int64_t step, int64_t globalBatch, int rank, int worldSize,
             const std::vector<void *> &inputs) const;

private:
  explicit SampleData(SafeTensorsFile file) : file_(std::move(file)) {}
  SafeTensorsFile file_;
  std::vector<SampleSpec> specs_;
  std::vector<size_t> sampleBytes_; // per spec
  int64_t size_ = 0;
};

} // namespace dsc::rt

#endif // DSC_RUNTIME_SAMPLEDATA_H
