//===- RunLtdIndices.cpp - dsc-run --dump-ltd-indices ---------------------===//
//
// Every step's random-LTD kept positions as text, for references that run
// the dropping blocks on the same tokens (a masked dense model in PyTorch).
// The positions come from the kernel the artifact's dsc.random_ltd_indices
// calls, with the step key the artifact gets, for the whole global batch:
// a sample's draw depends only on the run's seed, the step, the sample's
// place in the global batch and the draw's lengths and site seed.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/Run.h"

#include "dsc/kernels/Random.h"

#include <cerrno>
#include <cstring>

namespace dsc::rt {

LtdIndexDump::LtdIndexDump(const std::string &path) : path_(path) {
  file_ = std::fopen(path.c_str(), "w");
  if (!file_)
    throw Error(path + ": cannot write the random-LTD indices: " +
                std::strerror(errno));
}

LtdIndexDump::~LtdIndexDump() {
  if (file_)
    std::fclose(file_);
}

void LtdIndexDump::append(int64_t step, int64_t samples,
                          const RandomLtdDraw &draw, uint64_t runSeed) {
  check(file_ != nullptr, path_ + ": the random-LTD index file is closed");
  std::vector<int64_t> indices(static_cast<size_t>(samples * draw.kept));
  if (draw.kept >= draw.length) {
    for (int64_t j = 0; j < samples; ++j)
      for (int64_t t = 0; t < draw.length; ++t)
        indices[size_t(j * draw.kept + t)] = t;
  } else {
    // dsc.step_key: the run's seed, the step, the first sample, training.
    const int64_t key[4] = {static_cast<int64_t>(runSeed), step, 0, 1};
    kernels::cpu::randomLtdIndices(
        kernels::cpu::Queue{}, key, indices.data(),
        kernels::LtdSite{samples, draw.length, draw.kept, draw.seed});
  }
  std::string text;
  for (int64_t j = 0; j < samples; ++j) {
    text += std::to_string(step) + " " + std::to_string(j);
    for (int64_t k = 0; k < draw.kept; ++k)
      text += " " + std::to_string(indices[size_t(j * draw.kept + k)]);
    text += "\n";
  }
  if (std::fputs(text.c_str(), file_) < 0 || std::fflush(file_) != 0)
    throw Error(path_ + ": cannot write the random-LTD indices: " +
                std::strerror(errno));
}

void LtdIndexDump::close() {
  if (!file_)
    return;
  std::FILE *file = file_;
  file_ = nullptr;
  if (std::fclose(file) != 0)
    throw Error(path_ + ": cannot write the random-LTD indices: " +
                std::strerror(errno));
}

} // namespace dsc::rt
