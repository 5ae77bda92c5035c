//===- Xxh64.h - XXH64, the runtime's fast content hash ---------*- C++ -*-===//
//
// XXH64 (Yann Collet's xxHash, 64-bit variant) as its specification
// defines it: the same values as the reference implementation and LLVM's
// llvm::xxHash64, at several GB/s where FNV-1a (the checkpoint checksum,
// one multiply per byte) manages about one. The runtime has no LLVM, so it
// carries its own. dsc-run hashes whole weights files and artifacts with it
// before the first step (JobAgreement.h). Streaming: update() in pieces of
// any size gives the hash of their concatenation. Inputs are read as
// little-endian words, the byte order of every host dsc targets.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_XXH64_H
#define DSC_RUNTIME_XXH64_H

#include <cstddef>
#include <cstdint>

namespace dsc::rt {

class Xxh64 {
public:
  explicit Xxh64(uint64_t seed = 0);

  /// Adds `bytes` bytes at `data` to the hashed input.
  void update(const void *data, size_t bytes);
  /// The hash of everything added so far (the state is unchanged).
  uint64_t digest() const;

  /// The hash of one buffer.
  static uint64_t of(const void *data, size_t bytes, uint64_t seed = 0);

private:
  static constexpr size_t kStripe = 32; // four lanes of 8 bytes
  void consumeStripe(const unsigned char *stripe);

  uint64_t seed_;
  uint64_t lanes_[4];
  uint64_t total_ = 0;
  unsigned char pending_[kStripe];
  size_t pendingBytes_ = 0;
};

} // namespace dsc::rt

#endif // DSC_RUNTIME_XXH64_H
