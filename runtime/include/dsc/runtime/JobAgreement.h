//===- JobAgreement.h - every rank runs the same job ------------*- C++ -*-===//
//
// Ranks launched with different artifacts crash in the first collective
// whose sizes differ; ranks that loaded different weights train on
// silently and drift apart. So before its first collective dsc-run reduces
// what each rank runs to a fixed-size digest (the artifact file's bytes,
// the state it loaded and the options every rank must share), the ranks
// exchange digests with one allgather, and a disagreement stops the job on
// every rank with a message that names the ranks on each side and what
// differs. Paths are not compared: each node may keep its own copy.
//
// The digests are XXH64 (Xxh64.h), fast enough to read a whole weights file
// at disk speed: they catch a different or damaged file, not a forged one.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_JOBAGREEMENT_H
#define DSC_RUNTIME_JOBAGREEMENT_H

#include <cstdint>
#include <string>
#include <vector>

namespace dsc::rt {

class Checkpoint;
struct RunOptions;

/// What one rank runs, reduced to the 24 bytes the ranks exchange.
struct JobDigest {
  uint64_t artifact = 0; // the artifact file's bytes
  uint64_t state = 0;    // the weights file's bytes, or the checkpoint's
                         // metadata.json (which holds every piece's checksum,
                         // checked as the piece is loaded)
  uint64_t options = 0;  // sharedOptionsText()
  bool operator==(const JobDigest &other) const {
    return artifact == other.artifact && state == other.state &&
           options == other.options;
  }
};

/// What one rank runs, in words, for the message when ranks disagree.
struct JobDescription {
  std::string artifact; // the path this rank was given
  std::string state;    // "weights PATH" or "checkpoint DIR"
  std::string options;  // sharedOptionsText()

  /// One string (the fields joined by NUL bytes), and back.
  std::string serialize() const;
  static JobDescription deserialize(const std::string &text);
};

/// XXH64 of the bytes of the regular file `path`. Throws Error naming
/// the file when it is not a regular file or cannot be read.
uint64_t fileDigest(const std::string &path);

/// The options that change what the ranks do together, as text:
/// "--batch 4 --seq 16 --steps 5 [--eval] [--save [--save-interval K]]
/// [--resume]". Rank 0's own outputs (--metrics, --dump-outputs) and the
/// paths are left out.
std::string sharedOptionsText(const RunOptions &options);

/// This rank's digest and description: its artifact, its options, and the
/// state it loaded, `resumed` or else the --weights file.
void describeJob(const RunOptions &options, const Checkpoint *resumed,
                 JobDigest &digest, JobDescription &description);

/// "rank 2", "ranks 0, 1, 3": ranks as a message names them.
std::string rankList(const std::vector<int> &ranks);

/// One line per part on which the ranks disagree (`digests` in rank order):
/// "the ranks run different artifacts: rank 0: a.so (digest
/// 0123456789abcdef); rank 1: b.so (digest ...)", ranks that agree with
/// each other grouped. `descriptions` is empty or has one entry per rank;
/// empty, the message names the digests only. No line when all agree.
std::vector<std::string>
describeDisagreement(const std::vector<JobDigest> &digests,
                     const std::vector<JobDescription> &descriptions);

} // namespace dsc::rt

#endif // DSC_RUNTIME_JOBAGREEMENT_H
