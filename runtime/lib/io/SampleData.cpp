//===- SampleData.cpp - training samples from a safetensors file ----------===//

#include "dsc/runtime/SampleData.h"

#include "TensorShape.h"
#include "dsc/runtime/BatchLayout.h"
#include "dsc/runtime/Error.h"

#include <algorithm>
#include <cstring>

namespace dsc::rt {

namespace {

/// "I64 [n, 16]": what a spec takes, samples first.
std::string describeSpec(const SampleSpec &spec) {
  std::string text = std::string(dtypeName(spec.dtype)) + " [n";
  for (int64_t dim : spec.shape)
    text += ", " + std::to_string(dim);
  return text + "]";
}

std::string joinNames(const std::vector<SampleSpec> &specs) {
  std::string text;
  for (const SampleSpec &spec : specs)
    text += (text.empty() ? "" : ", ") + spec.name;
  return text;
}

/// Element `i` of an integer tensor's bytes, little-endian as stored.
int64_t integerAt(const unsigned char *data, DType dtype, size_t i) {
  if (dtype == DType::I64) {
    int64_t value;
    std::memcpy(&value, data + 8 * i, 8);
    return value;
  }
  int32_t value;
  std::memcpy(&value, data + 4 * i, 4);
  return value;
}

} // namespace

SampleData SampleData::open(const std::string &path,
                            std::vector<SampleSpec> specs) {
  SampleData data(SafeTensorsFile::open(path));
  check(!specs.empty(), path + ": the artifact takes no inputs to feed");
  const std::string *first = nullptr;
  for (const SampleSpec &spec : specs) {
    check(data.file_.contains(spec.name),
          path + ": no tensor '" + spec.name + "'; the artifact's input '" +
              spec.name + "' takes " + describeSpec(spec) +
              " (n samples first)");
    const TensorInfo &tensor = data.file_.info(spec.name);
    bool fits = tensor.dtype == spec.dtype &&
                tensor.shape.size() == spec.shape.size() + 1 &&
                std::equal(spec.shape.begin(), spec.shape.end(),
                           tensor.shape.begin() + 1);
    check(fits, path + ": tensor '" + spec.name + "' is " +
                    dtypeName(tensor.dtype) + " " +
                    detail::formatShape(tensor.shape) +
                    ", but the artifact's input '" + spec.name + "' takes " +
                    describeSpec(spec) + " (n samples first)");
    int64_t n = tensor.shape[0];
    check(n > 0, path + ": tensor '" + spec.name +
                     "' holds no samples (its first dimension is 0)");
    if (!first) {
      first = &spec.name;
      data.size_ = n;
    }
    check(n == data.size_, path + ": tensor '" + spec.name + "' holds " +
                               std::to_string(n) + " samples, but '" +
                               *first + "' holds " +
                               std::to_string(data.size_));
    data.sampleBytes_.push_back(tensor.bytes / static_cast<size_t>(n));
  }
  for (const std::string &name : data.file_.names()) {
    bool known = false;
    for (const SampleSpec &spec : specs)
      known = known || spec.name == name;
    check(known, path + ": tensor '" + name +
                     "' is not an input of the artifact (its inputs: " +
                     joinNames(specs) + ")");
  }
  data.specs_ = std::move(specs);
  return data;
}

void SampleData::batch(int64_t step, int64_t globalBatch, int rank,
                       int worldSize, const std::vector<void *> &inputs) const {
  const std::string &file = path();
  BatchShare share(file + ": batch", step, globalBatch, rank, worldSize);
  check(inputs.size() == specs_.size(),
        file + ": batch: " + std::to_string(inputs.size()) +
            " buffers for " + std::to_string(specs_.size()) + " inputs");
  for (uint64_t row = 0; row < share.rows(); ++row) {
    uint64_t sample = share.sample(row, static_cast<uint64_t>(size_));
    for (size_t i = 0; i < specs_.size(); ++i) {
      const SampleSpec &spec = specs_[i];
      size_t bytes = sampleBytes_[i];
      auto *dst = static_cast<unsigned char *>(inputs[i]) + row * bytes;
      file_.readRange(spec.name, sample * bytes, dst, bytes);
      size_t count = bytes / dtypeSize(spec.dtype);
      // Each element is checked as it is cut, as tokens are: a rank reads
      // only its share of a file that may be large.
      std::string where = file + ": sample " + std::to_string(sample) +
                          ": tensor '" + spec.name + "' holds ";
      if (int64_t bad = firstNonFinite(dst, spec.dtype, count); bad >= 0)
        throw Error(where + "a NaN or an infinity at element " +
                    std::to_string(bad) + "; data must be finite");
      if (spec.dtype == DType::BOOL)
        for (size_t e = 0; e < count; ++e)
          if (dst[e] > 1)
            throw Error(where + std::to_string(dst[e]) + " at element " +
                        std::to_string(e) +
                        ", which is not a boolean (0 or 1)");
      bool integer = spec.dtype == DType::I64 || spec.dtype == DType::I32;
      if (integer && spec.indexLimit > 0)
        for (size_t e = 0; e < count; ++e)
          if (int64_t value = integerAt(dst, spec.dtype, e);
              value < 0 || value >= spec.indexLimit)
            throw Error(where + std::to_string(value) + " at element " +
                        std::to_string(e) +
                        ", outside the artifact's range [0, " +
                        std::to_string(spec.indexLimit) + ")");
    }
  }
}

} // namespace dsc::rt
