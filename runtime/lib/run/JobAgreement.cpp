//===- JobAgreement.cpp - digests of what a rank runs, and their diff -----===//

#include "dsc/runtime/JobAgreement.h"

#include "CheckpointFiles.h"
#include "../io/PosixFile.h"
#include "dsc/runtime/Checkpoint.h"
#include "dsc/runtime/Error.h"
#include "dsc/runtime/Run.h"
#include "dsc/runtime/Xxh64.h"

#include <algorithm>
#include <map>

namespace dsc::rt {

namespace {

constexpr size_t kReadChunk = size_t(1) << 20;

/// "the ranks run different artifacts: rank 0: a.so (digest ...); ...".
std::string
describePart(const char *what, const std::vector<JobDigest> &digests,
             const std::vector<JobDescription> &descriptions,
             uint64_t JobDigest::*part,
             std::string JobDescription::*text) {
  std::map<uint64_t, std::vector<int>> ranksOf;
  std::vector<uint64_t> order; // by the first rank holding each value
  for (int r = 0; r < static_cast<int>(digests.size()); ++r) {
    uint64_t value = digests[static_cast<size_t>(r)].*part;
    if (ranksOf[value].empty())
      order.push_back(value);
    ranksOf[value].push_back(r);
  }
  std::string line = std::string("the ranks ") + what + ": ";
  for (size_t i = 0; i < order.size(); ++i) {
    const std::vector<int> &ranks = ranksOf[order[i]];
    line += (i ? "; " : "") + rankList(ranks) + ": ";
    if (!descriptions.empty())
      line += descriptions[static_cast<size_t>(ranks.front())].*text + " ";
    line += "(digest " + formatChecksum(order[i]) + ")";
  }
  return line;
}

} // namespace

std::string rankList(const std::vector<int> &ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i)
    out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

std::string JobDescription::serialize() const {
  return artifact + '\0' + state + '\0' + options;
}

JobDescription JobDescription::deserialize(const std::string &text) {
  JobDescription description;
  size_t first = text.find('\0');
  size_t second =
      first == std::string::npos ? first : text.find('\0', first + 1);
  if (second == std::string::npos)
    return description;
  description.artifact = text.substr(0, first);
  description.state = text.substr(first + 1, second - first - 1);
  description.options = text.substr(second + 1);
  return description;
}

uint64_t fileDigest(const std::string &path) {
  // openForReading refuses anything but a regular file without waiting (a
  // FIFO would block for a writer).
  detail::PosixFile file = detail::PosixFile::openForReading(path);
  uint64_t size = file.size();
  std::vector<unsigned char> buffer(std::min<uint64_t>(kReadChunk, size));
  Xxh64 hash;
  for (uint64_t offset = 0; offset < size; offset += buffer.size()) {
    size_t bytes = std::min<uint64_t>(buffer.size(), size - offset);
    file.readAt(buffer.data(), bytes, offset);
    hash.update(buffer.data(), bytes);
  }
  return hash.digest();
}

std::string sharedOptionsText(const RunOptions &options) {
  std::string text = "--batch " + std::to_string(options.batch) + " --seq " +
                     std::to_string(options.seq) + " --steps " +
                     std::to_string(options.steps) + " --seed " +
                     std::to_string(options.seed);
  if (options.eval)
    text += " --eval";
  // Saving is collective (every rank writes its shard); where is not.
  if (!options.save.empty())
    text += " --save";
  if (options.saveInterval > 0)
    text += " --save-interval " + std::to_string(options.saveInterval);
  if (!options.resume.empty())
    text += " --resume";
  return text;
}

void describeJob(const RunOptions &options, const Checkpoint *resumed,
                 JobDigest &digest, JobDescription &description) {
  description.artifact = options.artifact;
  description.options = sharedOptionsText(options);
  digest.artifact = fileDigest(options.artifact);
  digest.options =
      Xxh64::of(description.options.data(), description.options.size());
  if (resumed) {
    description.state = "checkpoint " + resumed->directory();
    digest.state = fileDigest(
        detail::joinPath(resumed->directory(), detail::kCheckpointMetadataFile));
  } else {
    description.state = "weights " + options.weights;
    digest.state = fileDigest(options.weights);
  }
}

std::vector<std::string>
describeDisagreement(const std::vector<JobDigest> &digests,
                     const std::vector<JobDescription> &descriptions) {
  std::vector<std::string> lines;
  auto differs = [&](uint64_t JobDigest::*part) {
    for (const JobDigest &digest : digests)
      if (digest.*part != digests.front().*part)
        return true;
    return false;
  };
  if (differs(&JobDigest::artifact))
    lines.push_back(describePart("run different artifacts", digests,
                                 descriptions, &JobDigest::artifact,
                                 &JobDescription::artifact));
  if (differs(&JobDigest::state))
    lines.push_back(describePart("loaded different states", digests,
                                 descriptions, &JobDigest::state,
                                 &JobDescription::state));
  if (differs(&JobDigest::options))
    lines.push_back(describePart("were given different options", digests,
                                 descriptions, &JobDigest::options,
                                 &JobDescription::options));
  return lines;
}

} // namespace dsc::rt
