//===- Xxh64Test.cpp - XXH64 against its published values ----------------===//
//
// The expected values are the reference implementation's (xxhsum, and
// LLVM's llvm::xxHash64, which agree): the empty input, inputs shorter than
// a 32-byte stripe (each tail path: 8-, 4- and 1-byte steps) and longer
// ones. Streaming in pieces of any size must give the one-shot value.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/Xxh64.h"

#include <gtest/gtest.h>

#include <string>

namespace dsc::rt {
namespace {

uint64_t of(const std::string &text, uint64_t seed = 0) {
  return Xxh64::of(text.data(), text.size(), seed);
}

TEST(Xxh64Test, PublishedValues) {
  EXPECT_EQ(of(""), 0xEF46DB3751D8E999ull);
  EXPECT_EQ(of("a"), 0xD24EC4F1A98C6E5Bull);
  EXPECT_EQ(of("abc"), 0x44BC2CF5AD770999ull);
  EXPECT_EQ(of("The quick brown fox jumps over the lazy dog"),
            0x0B242D361FDA71BCull);
}

TEST(Xxh64Test, StreamingEqualsOneShot) {
  std::string input;
  for (int i = 0; i < 1000; ++i)
    input += static_cast<char>(i * 37 % 256);
  for (size_t length : {0, 1, 3, 4, 7, 8, 31, 32, 33, 63, 64, 65, 999, 1000}) {
    uint64_t oneShot = Xxh64::of(input.data(), length, 7);
    for (size_t piece : {1, 5, 13, 32, 100}) {
      Xxh64 hash(7);
      for (size_t at = 0; at < length; at += piece)
        hash.update(input.data() + at, std::min(piece, length - at));
      EXPECT_EQ(hash.digest(), oneShot) << length << " in pieces of " << piece;
    }
  }
}

TEST(Xxh64Test, EveryByteAndTheSeedCount) {
  std::string input(100, 'x');
  uint64_t base = of(input);
  for (size_t i = 0; i < input.size(); ++i) {
    std::string changed = input;
    changed[i] ^= 0x40;
    EXPECT_NE(of(changed), base) << "byte " << i;
  }
  EXPECT_NE(of(input, 1), base);
}

} // namespace
} // namespace dsc::rt
