//===- SampleDataTest.cpp - samples files and the shared batch layout -----===//
//
// A samples file is cut by the same layout as a token file (BatchShare):
// a file holding a token file's sequences gives the same batches, and
// test/export/Inputs/check_batch_layout.py holds python/dsc/data.py's
// sample_rows() to the layout.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/BatchLayout.h"
#include "dsc/runtime/SampleData.h"
#include "dsc/runtime/TokenData.h"

#include "ErrorOf.h"
#include "ScratchDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <vector>

using namespace dsc::rt;
using dsc::rt::test::errorOf;
using dsc::rt::test::ScratchDir;
using ::testing::HasSubstr;

namespace {

/// A classifier's data: features F32 [n, 3] holding 10*s + e for sample s
/// and element e, labels I64 [n] holding s % 3.
struct Classifier {
  int64_t n;
  std::vector<float> features;
  std::vector<int64_t> labels;
  explicit Classifier(int64_t n) : n(n) {
    for (int64_t s = 0; s < n; ++s) {
      for (int e = 0; e < 3; ++e)
        features.push_back(float(10 * s + e));
      labels.push_back(s % 3);
    }
  }
  std::string write(const ScratchDir &dir, const std::string &name) const {
    std::string path = dir.file(name);
    writeSafeTensors(path, {{"features", DType::F32, {n, 3}, features.data()},
                            {"labels", DType::I64, {n}, labels.data()}});
    return path;
  }
  static std::vector<SampleSpec> specs() {
    return {{"features", DType::F32, {3}}, {"labels", DType::I64, {}, 3}};
  }
};

struct Rows {
  std::vector<float> features;
  std::vector<int64_t> labels;
};

Rows batchOf(const SampleData &data, int64_t step, int64_t B, int rank = 0,
             int world = 1) {
  Rows rows{std::vector<float>(size_t(B / world) * 3),
            std::vector<int64_t>(size_t(B / world))};
  data.batch(step, B, rank, world, {rows.features.data(), rows.labels.data()});
  return rows;
}

} // namespace

TEST(BatchShare, RanksTakeConsecutiveRowsThatWrap) {
  // Step 2, B = 4, 2 ranks, 10 samples: j = 0..3 are samples 8, 9, 0, 1.
  BatchShare rank0("w", 2, 4, 0, 2), rank1("w", 2, 4, 1, 2);
  EXPECT_EQ(rank0.rows(), 2u);
  EXPECT_EQ(rank0.sample(0, 10), 8u);
  EXPECT_EQ(rank0.sample(1, 10), 9u);
  EXPECT_EQ(rank1.sample(0, 10), 0u);
  EXPECT_EQ(rank1.sample(1, 10), 1u);
  // step * B beyond 64 bits: (2^62 * 4) % 12 == 2^64 % 12 == 4.
  EXPECT_EQ(BatchShare("w", int64_t(1) << 62, 4, 0, 1).sample(0, 12), 4u);
}

TEST(BatchShare, RefusesABadLayout) {
  EXPECT_EQ(errorOf([] { BatchShare("w", 0, 3, 0, 2); }),
            "w: batch 3 does not divide among 2 ranks");
  EXPECT_EQ(errorOf([] { BatchShare("w", -1, 4, 0, 2); }), "w: step -1 < 0");
  EXPECT_EQ(errorOf([] { BatchShare("w", 0, 4, 2, 2); }),
            "w: rank 2 out of range for 2 ranks");
  EXPECT_EQ(errorOf([] { BatchShare("w", 0, 0, 0, 1); }),
            "w: batch 0 and 1 ranks must both be positive");
}

TEST(SampleData, CutsEveryInputByTheSameSamples) {
  ScratchDir dir;
  SampleData data =
      SampleData::open(Classifier(10).write(dir, "s.safetensors"),
                       Classifier::specs());
  EXPECT_EQ(data.size(), 10);
  for (int64_t step = 0; step < 6; ++step) {
    Rows whole = batchOf(data, step, 4);
    for (int64_t j = 0; j < 4; ++j) {
      int64_t s = (step * 4 + j) % 10;
      EXPECT_EQ(whole.labels[j], s % 3) << "step " << step;
      for (int e = 0; e < 3; ++e)
        EXPECT_EQ(whole.features[j * 3 + e], float(10 * s + e));
    }
    // Rank r's rows are rows [2r, 2r + 2) of the whole batch.
    for (int rank = 0; rank < 2; ++rank) {
      Rows part = batchOf(data, step, 4, rank, 2);
      EXPECT_EQ(part.labels, std::vector<int64_t>(whole.labels.begin() + 2 * rank,
                                                  whole.labels.begin() + 2 * rank + 2));
      EXPECT_EQ(part.features,
                std::vector<float>(whole.features.begin() + 6 * rank,
                                   whole.features.begin() + 6 * rank + 6));
    }
  }
}

TEST(SampleData, ATokenFilesSequencesGiveItsBatches) {
  // Tokens 0..99 with T = 8 hold 12 sequences; a samples file of those
  // sequences (input_ids) and their next tokens (labels) feeds what the
  // token file feeds, step for step and rank for rank.
  ScratchDir dir;
  std::string bin;
  for (int i = 0; i < 100; ++i)
    bin += std::string{char(i), char(0)};
  TokenData tokens = TokenData::open(dir.write("t.bin", bin));
  std::vector<int64_t> ids, labels;
  for (int s = 0; s < 12; ++s)
    for (int t = 0; t < 8; ++t) {
      ids.push_back(s * 8 + t);
      labels.push_back(s * 8 + t + 1);
    }
  std::string path = dir.file("t.safetensors");
  writeSafeTensors(path, {{"input_ids", DType::I64, {12, 8}, ids.data()},
                          {"labels", DType::I64, {12, 8}, labels.data()}});
  SampleData samples = SampleData::open(
      path, {{"input_ids", DType::I64, {8}}, {"labels", DType::I64, {8}}});
  for (int64_t step = 0; step < 5; ++step)
    for (int rank = 0; rank < 2; ++rank) {
      std::vector<int64_t> x(16), y(16), a(16), b(16);
      tokens.batch(step, 4, 8, rank, 2, x.data(), y.data());
      samples.batch(step, 4, rank, 2, {a.data(), b.data()});
      EXPECT_EQ(a, x) << "step " << step << " rank " << rank;
      EXPECT_EQ(b, y) << "step " << step << " rank " << rank;
    }
}

TEST(SampleData, OpenNamesTheTensorAndWhatWasExpected) {
  ScratchDir dir;
  Classifier good(4);
  std::vector<int32_t> labels32(4);
  std::vector<int64_t> none;
  auto file = [&](const std::string &name, std::vector<TensorView> tensors) {
    std::string path = dir.file(name);
    writeSafeTensors(path, tensors);
    return path;
  };
  TensorView features{"features", DType::F32, {4, 3}, good.features.data()};
  TensorView labels{"labels", DType::I64, {4}, good.labels.data()};
  auto errorFor = [&](const std::string &path) {
    return errorOf([&] { SampleData::open(path, Classifier::specs()); });
  };

  std::string missing = file("missing.safetensors", {features});
  EXPECT_EQ(errorFor(missing),
            missing + ": no tensor 'labels'; the artifact's input 'labels' "
                      "takes I64 [n] (n samples first)");
  std::string dtype = file("dtype.safetensors",
                           {features, {"labels", DType::I32, {4}, labels32.data()}});
  EXPECT_EQ(errorFor(dtype),
            dtype + ": tensor 'labels' is I32 [4], but the artifact's input "
                    "'labels' takes I64 [n] (n samples first)");
  std::string shape = file("shape.safetensors",
                           {{"features", DType::F32, {3, 4}, good.features.data()},
                            labels});
  EXPECT_EQ(errorFor(shape),
            shape + ": tensor 'features' is F32 [3, 4], but the artifact's "
                    "input 'features' takes F32 [n, 3] (n samples first)");
  std::string scalar = file("scalar.safetensors",
                            {features, {"labels", DType::I64, {}, good.labels.data()}});
  EXPECT_THAT(errorFor(scalar), HasSubstr("tensor 'labels' is I64 [], but"));
  std::string extra =
      file("extra.safetensors",
           {features, labels, {"attention_mask", DType::I64, {4}, good.labels.data()}});
  EXPECT_EQ(errorFor(extra),
            extra + ": tensor 'attention_mask' is not an input of the "
                    "artifact (its inputs: features, labels)");
  std::string empty = file("empty.safetensors",
                           {{"features", DType::F32, {0, 3}, none.data()},
                            {"labels", DType::I64, {0}, none.data()}});
  EXPECT_EQ(errorFor(empty), empty + ": tensor 'features' holds no samples "
                                     "(its first dimension is 0)");
  std::string uneven = file("uneven.safetensors",
                            {features, {"labels", DType::I64, {3}, good.labels.data()}});
  EXPECT_EQ(errorFor(uneven), uneven + ": tensor 'labels' holds 3 samples, "
                                       "but 'features' holds 4");

  // The reader's own checks: a truncated file, a header that is not JSON.
  std::string whole = good.write(dir, "whole.safetensors");
  std::string bytes = dsc::rt::test::readBytes(whole);
  std::string truncated =
      dir.write("truncated.safetensors", bytes.substr(0, bytes.size() - 5));
  EXPECT_THAT(errorFor(truncated), HasSubstr(truncated + ": "));
  std::string garbage = dir.write("garbage.safetensors",
                                  std::string("\x10\0\0\0\0\0\0\0", 8) +
                                      "not json at all!");
  EXPECT_THAT(errorFor(garbage), HasSubstr(garbage + ": "));
  EXPECT_THAT(errorFor(dir.file("absent.safetensors")),
              HasSubstr("absent.safetensors"));
}

TEST(SampleData, ValuesAreCheckedAsTheyAreCut) {
  ScratchDir dir;
  Classifier bad(4);
  bad.labels[2] = 3; // classes are [0, 3)
  bad.features[3 * 3 + 1] = std::numeric_limits<float>::quiet_NaN();
  SampleData data = SampleData::open(bad.write(dir, "bad.safetensors"),
                                     Classifier::specs());
  // Step 0 of batch 2 takes samples 0 and 1: fine.
  EXPECT_NO_THROW(batchOf(data, 0, 2));
  EXPECT_EQ(errorOf([&] { batchOf(data, 1, 2); }),
            data.path() + ": sample 2: tensor 'labels' holds 3 at element 0, "
                          "outside the artifact's range [0, 3)");
  EXPECT_EQ(errorOf([&] { batchOf(data, 1, 2, 1, 2); }),
            data.path() + ": sample 3: tensor 'features' holds a NaN or an "
                          "infinity at element 1; data must be finite");
  // A mask of bytes that are not booleans.
  std::vector<uint8_t> mask = {1, 0, 2, 1};
  std::string path = dir.file("mask.safetensors");
  writeSafeTensors(path, {{"attention_mask", DType::BOOL, {2, 2}, mask.data()}});
  SampleData masks =
      SampleData::open(path, {{"attention_mask", DType::BOOL, {2}}});
  std::vector<uint8_t> row(2);
  EXPECT_NO_THROW(masks.batch(0, 1, 0, 1, {row.data()}));
  EXPECT_EQ(errorOf([&] { masks.batch(1, 1, 0, 1, {row.data()}); }),
            path + ": sample 1: tensor 'attention_mask' holds 2 at element "
                   "0, which is not a boolean (0 or 1)");
}
