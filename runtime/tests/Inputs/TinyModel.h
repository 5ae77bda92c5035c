//===- TinyModel.h - inputs and expected losses of TinyArtifact -*- C++ -*-===//
//
// The weights and token data the dsc-run tests feed TinyArtifact.cpp, and
// its loss computed independently: in double precision, with the batch
// layout written out from python/dsc/data.py's batch() rather than taken
// from TokenData, so that a wrong layout in dsc-run shows up as a wrong loss.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_TESTS_TINYMODEL_H
#define DSC_RUNTIME_TESTS_TINYMODEL_H

#include "dsc/runtime/SafeTensors.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace dsc::rt::test {

struct TinyModel {
  static constexpr int64_t kVocab = 16, kDim = 8;
  std::vector<float> wte, head, bias;

  TinyModel() : wte(kVocab * kDim), head(kDim), bias(kVocab) {
    for (int64_t v = 0; v < kVocab; ++v)
      for (int64_t d = 0; d < kDim; ++d)
        wte[v * kDim + d] = 0.25f * std::sin(0.7f * float(v) + 0.3f * float(d));
    for (int64_t d = 0; d < kDim; ++d)
      head[d] = std::cos(0.5f * float(d));
    for (int64_t v = 0; v < kVocab; ++v)
      bias[v] = 0.05f * float(v) - 0.2f;
  }

  /// The weights file: the three states and one tensor no state uses.
  void writeWeights(const std::string &path) const {
    static const float extra[3] = {1, 2, 3};
    writeSafeTensors(path, {{"wte.weight", DType::F32, {kVocab, kDim}, wte.data()},
                            {"head.weight", DType::F32, {1, kDim}, head.data()},
                            {"bias", DType::F32, {kVocab}, bias.data()},
                            {"unused.extra", DType::F32, {3}, extra}});
  }

  /// q(t) of TinyArtifact.cpp for one (token, target) pair.
  double q(int64_t token, int64_t target) const {
    double sum = 0;
    for (int64_t d = 0; d < kDim; ++d)
      sum += double(wte[token * kDim + d]) * double(head[d]);
    return sum + bias[target];
  }

  /// The loss of step `step` (0-based) over the global batch.
  double expectedLoss(const std::vector<uint16_t> &data, int64_t step,
                      int64_t batch, int64_t seq) const {
    int64_t nseq = (int64_t(data.size()) - 1) / seq;
    double sum = 0;
    for (int64_t j = 0; j < batch; ++j) {
      int64_t start = ((step * batch + j) % nseq) * seq;
      for (int64_t t = 0; t < seq; ++t)
        sum += q(data[start + t], data[start + t + 1]);
    }
    return sum / double(batch * seq);
  }
};

/// 41 token ids below the vocabulary: 10 sequences of 4, so that 3 steps of
/// batch 4 wrap around the data.
inline std::vector<uint16_t> tinyTokens() {
  std::vector<uint16_t> ids(41);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = static_cast<uint16_t>((i * 5 + i / 3) % TinyModel::kVocab);
  return ids;
}

/// Writes `ids` as a token file (flat little-endian uint16).
inline void writeTokens(const std::string &path,
                        const std::vector<uint16_t> &ids) {
  std::ofstream out(path, std::ios::binary);
  for (uint16_t id : ids) {
    char bytes[2] = {static_cast<char>(id & 0xff), static_cast<char>(id >> 8)};
    out.write(bytes, 2);
  }
}

} // namespace dsc::rt::test

#endif // DSC_RUNTIME_TESTS_TINYMODEL_H
