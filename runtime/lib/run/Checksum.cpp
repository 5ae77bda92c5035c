//===- Checksum.cpp - FNV-1a 64, the checksum of checkpoint tensors -------===//

#include "dsc/runtime/Checkpoint.h"

#include <cstdio>

namespace dsc::rt {

uint64_t fnv1a64(const void *data, size_t bytes, uint64_t hash) {
  constexpr uint64_t kPrime = 0x100000001b3ull;
  const auto *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < bytes; ++i)
    hash = (hash ^ p[i]) * kPrime;
  return hash;
}

std::string formatChecksum(uint64_t checksum) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx",
                static_cast<unsigned long long>(checksum));
  return text;
}

} // namespace dsc::rt
