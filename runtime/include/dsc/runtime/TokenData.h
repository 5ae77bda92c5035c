//===- TokenData.h - nanoGPT token files and dsc's batch layout -*- C++ -*-===//
//
// Training data is nanoGPT's .bin format: flat little-endian uint16 token
// ids. batch() cuts them into the same (tokens, targets) that
// python/dsc/data.py's batch() does, so that dsc-run trains on exactly the
// sequences the golden PyTorch run (python -m dsc.golden) trained on.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_TOKENDATA_H
#define DSC_RUNTIME_TOKENDATA_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace dsc::rt {

class TokenData {
public:
  /// Maps `path` read-only. Throws Error "PATH: <problem>" when the file is
  /// missing, has an odd number of bytes, or holds fewer than 2 tokens.
  /// With `tokenLimit` > 0 (the artifact's vocabulary, FeedPlan), batch()
  /// refuses any token id at or above it.
  static TokenData open(const std::string &path, int64_t tokenLimit = 0);

  /// Number of tokens.
  size_t size() const { return size_; }
  uint16_t token(size_t i) const;
  const std::string &path() const { return path_; }

  /// Fills `tokens` and `targets`, each int64 [globalBatch/worldSize,
  /// seqLen] row-major, with rank `rank`'s share of step `step` (0-based).
  ///
  /// With B = globalBatch, T = seqLen, N = worldSize and
  /// nseq = (size()-1) / T, sequence j of the step starts at
  /// ((step*B + j) % nseq) * T; tokens are data[start, start+T) and targets
  /// data[start+1, start+T+1); rank r takes j in [r*B/N, (r+1)*B/N): the
  /// layout every format shares (BatchShare, BatchLayout.h).
  /// Throws Error when B % N != 0, nseq < 1, the rank is out of range, or a
  /// size is not positive, and "PATH: token id V at byte offset O is
  /// outside the vocabulary ..." for a token at or above the limit. Every
  /// token is checked as it is cut, rather than the whole file when it is
  /// opened: files run to tens of GB, and each rank reads only its share.
  void batch(int64_t step, int64_t globalBatch, int64_t seqLen, int rank,
             int worldSize, int64_t *tokens, int64_t *targets) const;

private:
  TokenData() = default;
  std::string path_;
  // Mapped rather than read: token files run to tens of GB and each rank
  // touches only its own sequences. As with nanoGPT's np.memmap, the file
  // must not be rewritten while it is open. Shared so that copies are cheap.
  std::shared_ptr<const unsigned char> bytes_;
  size_t size_ = 0;
  int64_t tokenLimit_ = 0;
};

} // namespace dsc::rt

#endif // DSC_RUNTIME_TOKENDATA_H
