//===- Xxh64.cpp - XXH64, per the xxHash specification -------------------===//

#include "dsc/runtime/Xxh64.h"

#include <algorithm>
#include <cstring>

namespace dsc::rt {

namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ull;
constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ull;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t read64(const unsigned char *p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint32_t read32(const unsigned char *p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint64_t round(uint64_t acc, uint64_t input) {
  acc += input * kPrime2;
  acc = rotl(acc, 31);
  return acc * kPrime1;
}

uint64_t mergeRound(uint64_t acc, uint64_t lane) {
  acc ^= round(0, lane);
  return acc * kPrime1 + kPrime4;
}

} // namespace

Xxh64::Xxh64(uint64_t seed)
    : seed_(seed), lanes_{seed + kPrime1 + kPrime2, seed + kPrime2, seed,
                          seed - kPrime1} {}

void Xxh64::consumeStripe(const unsigned char *stripe) {
  for (int lane = 0; lane < 4; ++lane)
    lanes_[lane] = round(lanes_[lane], read64(stripe + 8 * lane));
}

void Xxh64::update(const void *data, size_t bytes) {
  const auto *p = static_cast<const unsigned char *>(data);
  total_ += bytes;
  if (pendingBytes_ > 0) {
    size_t take = std::min(bytes, kStripe - pendingBytes_);
    std::memcpy(pending_ + pendingBytes_, p, take);
    pendingBytes_ += take;
    p += take;
    bytes -= take;
    if (pendingBytes_ < kStripe)
      return;
    consumeStripe(pending_);
    pendingBytes_ = 0;
  }
  for (; bytes >= kStripe; p += kStripe, bytes -= kStripe)
    consumeStripe(p);
  std::memcpy(pending_, p, bytes);
  pendingBytes_ = bytes;
}

uint64_t Xxh64::digest() const {
  uint64_t h;
  if (total_ >= kStripe) {
    h = rotl(lanes_[0], 1) + rotl(lanes_[1], 7) + rotl(lanes_[2], 12) +
        rotl(lanes_[3], 18);
    for (uint64_t lane : lanes_)
      h = mergeRound(h, lane);
  } else {
    h = seed_ + kPrime5;
  }
  h += total_;
  const unsigned char *p = pending_;
  size_t left = pendingBytes_;
  for (; left >= 8; p += 8, left -= 8)
    h = rotl(h ^ round(0, read64(p)), 27) * kPrime1 + kPrime4;
  if (left >= 4) {
    h = rotl(h ^ uint64_t(read32(p)) * kPrime1, 23) * kPrime2 + kPrime3;
    p += 4;
    left -= 4;
  }
  for (; left > 0; ++p, --left)
    h = rotl(h ^ *p * kPrime5, 11) * kPrime1;
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  h *= kPrime3;
  h ^= h >> 32;
  return h;
}

uint64_t Xxh64::of(const void *data, size_t bytes, uint64_t seed) {
  Xxh64 hash(seed);
  hash.update(data, bytes);
  return hash.digest();
}

} // namespace dsc::rt
