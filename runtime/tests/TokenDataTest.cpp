//===- TokenDataTest.cpp - token files and the batch layout ---------------===//
//
// The expectations are the cases of test/export/Inputs/check_batch_layout.py,
// which holds python/dsc/data.py's batch() to the same layout.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/TokenData.h"

#include "ScratchDir.h"
#include "dsc/runtime/Error.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

using dsc::rt::Error;
using dsc::rt::TokenData;
using dsc::rt::test::ScratchDir;

namespace {

// A .bin of the given token ids, little-endian uint16.
std::string tokenBytes(const std::vector<uint16_t> &ids) {
  std::string out;
  for (uint16_t id : ids) {
    out += static_cast<char>(id & 0xff);
    out += static_cast<char>(id >> 8);
  }
  return out;
}

// Tokens 0, 1, ..., n-1: token i has id i, so a row's first token is its
// start offset.
std::string arangeFile(const ScratchDir &dir, int n) {
  std::vector<uint16_t> ids(n);
  for (int i = 0; i < n; ++i)
    ids[i] = static_cast<uint16_t>(i);
  return dir.write("arange" + std::to_string(n) + ".bin", tokenBytes(ids));
}

struct Batch {
  std::vector<int64_t> tokens, targets;
};

Batch batchOf(const TokenData &data, int64_t step, int64_t B, int64_t T,
              int rank = 0, int world = 1) {
  Batch b{std::vector<int64_t>(B / world * T),
          std::vector<int64_t>(B / world * T)};
  data.batch(step, B, T, rank, world, b.tokens.data(), b.targets.data());
  return b;
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

} // namespace

TEST(TokenData, ReadsLittleEndianUint16) {
  ScratchDir dir;
  TokenData data =
      TokenData::open(dir.write("t.bin", tokenBytes({0x0102, 0xfffe, 7})));
  EXPECT_EQ(data.size(), 3u);
  EXPECT_EQ(data.token(0), 0x0102);
  EXPECT_EQ(data.token(1), 0xfffe);
  EXPECT_EQ(data.token(2), 7);
}

TEST(TokenData, BatchLayoutMatchesPython) {
  ScratchDir dir;
  TokenData data = TokenData::open(arangeFile(dir, 100));
  const int64_t T = 8, B = 4, nseq = (100 - 1) / T; // 12
  for (int64_t step = 0; step < 5; ++step) {
    Batch b = batchOf(data, step, B, T);
    for (int64_t j = 0; j < B; ++j) {
      int64_t start = ((step * B + j) % nseq) * T;
      for (int64_t t = 0; t < T; ++t) {
        EXPECT_EQ(b.tokens[j * T + t], start + t) << "step " << step;
        EXPECT_EQ(b.targets[j * T + t], start + t + 1) << "step " << step;
      }
    }
    // Ranks take consecutive slices of the global batch.
    std::vector<int64_t> joined, joinedTargets;
    for (int rank = 0; rank < 2; ++rank) {
      Batch part = batchOf(data, step, B, T, rank, 2);
      joined.insert(joined.end(), part.tokens.begin(), part.tokens.end());
      joinedTargets.insert(joinedTargets.end(), part.targets.begin(),
                           part.targets.end());
    }
    EXPECT_EQ(joined, b.tokens);
    EXPECT_EQ(joinedTargets, b.targets);
  }
  // Step 3 wraps: sequences 12..15 are 0..3 again.
  EXPECT_EQ(batchOf(data, 3, B, T).tokens[0], 0);
}

TEST(TokenData, HandComputedRows) {
  ScratchDir dir;
  TokenData data = TokenData::open(arangeFile(dir, 100));
  // Step 2, B=4, T=8, 4 ranks: rank 3 takes j=3, sequence (8+3) % 12 = 11,
  // which starts at 88 and whose targets end at token 96.
  Batch b = batchOf(data, 2, 4, 8, 3, 4);
  EXPECT_EQ(b.tokens, (std::vector<int64_t>{88, 89, 90, 91, 92, 93, 94, 95}));
  EXPECT_EQ(b.targets, (std::vector<int64_t>{89, 90, 91, 92, 93, 94, 95, 96}));
  // The last sequence may end on the last token: 9 tokens, T=8, nseq=1.
  TokenData nine = TokenData::open(arangeFile(dir, 9));
  Batch last = batchOf(nine, 5, 1, 8);
  EXPECT_EQ(last.targets.back(), 8);
  // A step far beyond 2^63 / B still wraps exactly: (2^62 * 4 + 0) % 12 ==
  // 4 (2^64 % 12 == 4), so the row starts at 4 * 8.
  Batch huge = batchOf(data, int64_t(1) << 62, 4, 8);
  EXPECT_EQ(huge.tokens[0], 32);
}

TEST(TokenData, FileErrorsNameThePath) {
  ScratchDir dir;
  std::string missing = dir.file("missing.bin");
  EXPECT_EQ(errorOf([&] { TokenData::open(missing); }).rfind(missing, 0), 0u);
  std::string odd = dir.write("odd.bin", "abc");
  EXPECT_EQ(errorOf([&] { TokenData::open(odd); }),
            odd + ": 3 bytes is not a whole number of uint16 tokens");
  std::string one = dir.write("one.bin", tokenBytes({5}));
  EXPECT_EQ(errorOf([&] { TokenData::open(one); }),
            one + ": needs at least 2 tokens, has 1");
  std::string empty = dir.write("empty.bin", "");
  EXPECT_EQ(errorOf([&] { TokenData::open(empty); }),
            empty + ": needs at least 2 tokens, has 0");
}

TEST(TokenData, BatchErrors) {
  ScratchDir dir;
  std::string path = arangeFile(dir, 100);
  TokenData data = TokenData::open(path);
  std::vector<int64_t> x(100), y(100);
  auto batchError = [&](int64_t step, int64_t B, int64_t T, int rank,
                        int world) {
    return errorOf(
        [&] { data.batch(step, B, T, rank, world, x.data(), y.data()); });
  };
  EXPECT_EQ(batchError(0, 3, 8, 0, 2),
            path + ": batch: batch 3 does not divide among 2 ranks");
  EXPECT_EQ(batchError(0, 1, 100, 0, 1),
            path + ": batch: 100 tokens hold no sequence of length 100");
  EXPECT_EQ(batchError(0, 4, 8, 2, 2),
            path + ": batch: rank 2 out of range for 2 ranks");
  EXPECT_EQ(batchError(0, 4, 8, -1, 2),
            path + ": batch: rank -1 out of range for 2 ranks");
  EXPECT_NE(batchError(-1, 4, 8, 0, 1).find("step -1"), std::string::npos);
  EXPECT_NE(batchError(0, 0, 8, 0, 1).find("must all be positive"),
            std::string::npos);
  EXPECT_NE(batchError(0, 4, 0, 0, 1).find("must all be positive"),
            std::string::npos);
  EXPECT_NE(batchError(0, 4, 8, 0, 0).find("must all be positive"),
            std::string::npos);
  EXPECT_NO_THROW(batchOf(data, 0, 1, 98)); // 99 tokens: exactly one sequence
}

TEST(TokenData, TokensAtOrAboveTheLimitAreRefusedWithTheirOffset) {
  ScratchDir dir;
  // Tokens 0..99: with a vocabulary of 50 the first sequence (0..8, its
  // targets included) is fine, the sequence starting at 48 holds id 50.
  TokenData data = TokenData::open(arangeFile(dir, 100), 50);
  std::vector<int64_t> x(8), y(8);
  EXPECT_NO_THROW(data.batch(0, 1, 8, 0, 1, x.data(), y.data()));
  // Step 5 with batch 1 and sequence 8 starts at token 40: its targets run
  // to token 48, fine; step 6 starts at 48, and token 50 is at byte 100.
  EXPECT_NO_THROW(data.batch(5, 1, 8, 0, 1, x.data(), y.data()));
  EXPECT_EQ(errorOf([&] { data.batch(6, 1, 8, 0, 1, x.data(), y.data()); }),
            data.path() + ": token id 50 at byte offset 100 is outside the "
                          "artifact's vocabulary [0, 50)");
  // The last target counts too: step 5's sequence is 40..47, its targets
  // 41..48; with a limit of 48 the target 48 is refused.
  TokenData tight = TokenData::open(data.path(), 48);
  EXPECT_EQ(errorOf([&] { tight.batch(5, 1, 8, 0, 1, x.data(), y.data()); }),
            data.path() + ": token id 48 at byte offset 96 is outside the "
                          "artifact's vocabulary [0, 48)");
  // No limit: every uint16 is taken.
  EXPECT_NO_THROW(TokenData::open(data.path())
                      .batch(6, 1, 8, 0, 1, x.data(), y.data()));
}
