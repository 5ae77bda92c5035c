//===- TokenData.cpp - nanoGPT token files and dsc's batch layout ---------===//

#include "dsc/runtime/TokenData.h"

#include "PosixFile.h"
#include "dsc/runtime/BatchLayout.h"
#include "dsc/runtime/Error.h"

#include <sys/mman.h>

namespace dsc::rt {

TokenData TokenData::open(const std::string &path, int64_t tokenLimit) {
  auto file = detail::PosixFile::openForReading(path);
  uint64_t bytes = file.size();
  check(bytes % 2 == 0, path + ": " + std::to_string(bytes) +
                            " bytes is not a whole number of uint16 tokens");
  check(bytes >= 4,
        path + ": needs at least 2 tokens, has " + std::to_string(bytes / 2));
  void *mapped = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, file.fd(), 0);
  if (mapped == MAP_FAILED)
    detail::PosixFile::throwErrno(path, "cannot map");
  // The mapping outlives the descriptor, which closes with `file`.
  TokenData data;
  data.path_ = path;
  data.size_ = bytes / 2;
  data.tokenLimit_ = tokenLimit;
  data.bytes_ = std::shared_ptr<const unsigned char>(
      static_cast<const unsigned char *>(mapped),
      [bytes](const unsigned char *p) {
        ::munmap(const_cast<unsigned char *>(p), bytes);
      });
  return data;
}

uint16_t TokenData::token(size_t i) const {
  const unsigned char *p = bytes_.get() + 2 * i;
  return static_cast<uint16_t>(p[0] | (p[1] << 8)); // little-endian
}

void TokenData::batch(int64_t step, int64_t globalBatch, int64_t seqLen,
                      int rank, int worldSize, int64_t *tokens,
                      int64_t *targets) const {
  const std::string where = path_ + ": batch";
  check(tokens != nullptr && targets != nullptr, where + ": no output");
  check(globalBatch > 0 && seqLen > 0 && worldSize > 0,
        where + ": batch " + std::to_string(globalBatch) + ", sequence " +
            std::to_string(seqLen) + " and " + std::to_string(worldSize) +
            " ranks must all be positive");
  BatchShare share(where, step, globalBatch, rank, worldSize);
  uint64_t T = static_cast<uint64_t>(seqLen);
  uint64_t nseq = (size_ - 1) / T;
  check(nseq >= 1, where + ": " + std::to_string(size_) +
                       " tokens hold no sequence of length " +
                       std::to_string(seqLen));

  for (uint64_t row = 0; row < share.rows(); ++row) {
    uint64_t sequence = share.sample(row, nseq);
    uint64_t start = sequence * T;
    for (uint64_t t = 0; t <= T; ++t) {
      uint16_t id = token(start + t);
      if (tokenLimit_ > 0 && id >= tokenLimit_)
        throw Error(path_ + ": token id " + std::to_string(id) +
                    " at byte offset " + std::to_string(2 * (start + t)) +
                    " is outside the artifact's vocabulary [0, " +
                    std::to_string(tokenLimit_) + ")");
      if (t < T)
        tokens[row * T + t] = id;
      if (t > 0)
        targets[row * T + t - 1] = id;
    }
  }
}

} // namespace dsc::rt
