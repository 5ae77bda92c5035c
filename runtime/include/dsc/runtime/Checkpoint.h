//===- Checkpoint.h - save, find, verify and load checkpoints ---*- C++ -*-===//
//
// A checkpoint (docs/running.md, "Checkpoints") is a directory per saved
// step under a root:
//
//   ROOT/latest                         "step_<N>\n", replaced atomically
//   ROOT/step_<N>/shard-<r>-of-<W>.safetensors   one per rank of the saver
//   ROOT/step_<N>/metadata.json         written last: what is where
//
// A save fills ROOT/step_<N>.saving and renames it to step_<N> once its
// metadata.json is written, so a step directory only ever exists complete.
// A second save of a step that has a directory (a run resumed from an
// earlier step) goes to step_<N>.<V> instead, and the one it supersedes is
// removed only once `latest` names the new one (CheckpointSave.cpp): a
// crash at any point leaves `latest` naming a complete checkpoint.
//
// A pipeline-parallel job (P stages) writes one checkpoint too: each rank
// writes its stage's states under their names, as a job of W/P ranks
// would place them, the shards still numbered by world rank; a state that
// several stages hold (a tied weight) is written by the first of them
// only, so the union of the shards is the whole model's state, every name
// once. metadata.json adds "pipeline_parallel_size" and each shard's
// "stage". Resuming reads each stage's states by name, so the stages of
// the saver and the resumer need not agree.
//
// N counts completed steps: a resumed run starts at step N + 1 and feeds
// data batch N. Tensors are stored under their fully-qualified names
// (the names the IR and weights files use), each exactly once, and
// metadata.json maps each name to
// its shard, dtype, shape, size and checksum, so a job of any number of
// ranks can load a checkpoint that W ranks wrote. A state partitioned over
// the ranks (ZeRO) is stored in pieces, one per rank that holds any of it,
// each in its rank's shard under the tensor's name, its padding stripped:
// the metadata gives the whole shape, the partitioning ("partition":
// world_size and shard_elements) and each piece's shard, element offset in
// the flattened whole, shape [count], size and checksum. A state
// partitioned over the Expert group (expert parallelism: P ranks hold one
// piece each, the W/P ranks of an ExpertData group the same one) is stored
// the same way, each piece once, by ranks 0 .. P-1; its "partition" adds
// "group": "expert" and "group_size": P. ZeRO's partitions of those
// experts over the ExpertData group (every rank a piece of its experts)
// add "group": "expert_data" and "group_size": W/P, their pieces listed by
// offset like the others. A tensor-parallel slice's piece is several
// ranges of the whole ("blocks" of shape[0] / blocks elements, "stride"
// apart); ZeRO's shard of a slice over the data group holds a run of those
// elements that may start and end inside a range ("first", its first
// element's place in the slice, and "block_elements", each range's
// length). Loading reads, for each rank, the
// pieces that overlap the part it holds, whatever world size, expert-
// parallel size and partitioning saved them.
//
// The pieces here are MPI-free, so that tests can play every rank of a save
// in one process; dsc-run (RunMain.cpp) calls them in order on its ranks,
// with an agreement between the ranks after each:
//   rank 0:     beginCheckpoint    (an empty staging directory)
//   every rank: writeCheckpointShard
//   rank 0:     commitCheckpoint   (metadata, then step_<N>, then latest)
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_CHECKPOINT_H
#define DSC_RUNTIME_CHECKPOINT_H

#include "dsc/runtime/Artifact.h"
#include "dsc/runtime/SafeTensors.h"
#include "dsc/runtime/StateSlice.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dsc::rt {

class MemoryPool;

/// FNV-1a, 64 bits, over `bytes` bytes, continuing from `hash`: the checksum
/// of every tensor in a checkpoint. Chosen for being a few lines with
/// published test vectors; it catches flipped and truncated bytes, not
/// tampering.
constexpr uint64_t kFnv1a64Offset = 0xcbf29ce484222325ull;
uint64_t fnv1a64(const void *data, size_t bytes,
                 uint64_t hash = kFnv1a64Offset);
/// 16 lowercase hex digits, as metadata.json stores a checksum.
std::string formatChecksum(uint64_t checksum);

constexpr const char *kCheckpointFormat = "dsc-checkpoint";
constexpr int kCheckpointVersion = 1;

/// "step_<N>".
std::string checkpointStepName(int64_t step);
/// N of a step directory's name, "step_<N>" or "step_<N>.<V>" (a re-save);
/// -1 for any other name (a staging directory "step_<N>.saving").
int64_t checkpointStepOf(const std::string &name);
/// "shard-<r>-of-<W>.safetensors".
std::string checkpointShardName(int rank, int worldSize);
/// The rank that writes replicated state `index` (ArtifactInfo::states
/// order) in a job of `worldSize` ranks: index % worldSize. Every rank holds
/// all of it, so the split only spreads the writing.
int checkpointWriter(int32_t index, int worldSize);
/// Whether `rank` writes state `index` in a job of `worldSize` ranks and
/// expert-parallel size `expertParallelSize`: its checkpointWriter for
/// replicated state; every rank, its own piece, for a state partitioned
/// over the World or the ExpertData group (ZeRO); the ranks of the first
/// ExpertData index (rank <
/// P), their own pieces, for a state partitioned over the Expert group,
/// whose other ranks hold copies of those pieces.
/// A tensor-parallel slice (partitioned over the Tensor group, T ranks)
/// is written by the ranks of the first Data index (rank < T); ZeRO's
/// partition of a whole tensor over the Data group by the ranks of the
/// first Tensor index (r % T = 0), their own pieces.
bool checkpointWrites(const StateDesc &state, int32_t index, int rank,
                      int worldSize, int expertParallelSize,
                      int tensorParallelSize = 1);
/// The tables of a pipeline-parallel artifact's stages, in stage order
/// (ArtifactLibrary::stageInfos): stage s runs on ranks [s * W/P, (s + 1) *
/// W/P). One entry, the artifact's, without pipeline parallelism.
using PipelineStageInfos = std::vector<const ArtifactInfo *>;
/// Whether `rank` writes state `index` of its own stage's tables, ignoring
/// the other stages: checkpointWrites within the stage, whose W/P ranks
/// place their states as a job of W/P ranks does (stageLocalRank, Run.h).
bool checkpointWritesInStage(const ArtifactInfo &stage, int32_t index,
                             int rank, int worldSize);
/// Whether `rank` writes state `index` of its stage's tables
/// (stages[rank / (W/P)]): checkpointWritesInStage, unless an earlier stage
/// holds a state of the same name too. Such a state is a tied weight (GPT-2's
/// token embedding, which the last stage's head reuses), kept equal on
/// every stage that holds it; the first of them writes it, so that every
/// name is stored once and the union over the stages is the model's state.
bool checkpointWrites(const PipelineStageInfos &stages, int32_t index,
                      int rank, int worldSize);
/// "parameter", "buffer", "optimizer", "gradient": how metadata.json
/// records each tensor's role (StateRole), so that tools reading a
/// checkpoint without its artifact (dsc-ckpt) tell the model's tensors
/// from the optimizer's.
const char *stateRoleName(StateRole role);
/// Inverse of stateRoleName; false for any other string.
bool parseStateRole(const std::string &name, StateRole &role);

/// What metadata.json says about the job that saved it.
struct CheckpointJob {
  int64_t step = 0; // completed steps
  int worldSize = 0;
  std::string model, target; // the artifact's, for people reading the file
  int64_t globalBatch = 0, seq = 0; // the data position is counted in these
  /// The run's seed (dsc-run --seed), which a resumed run takes unless
  /// given another; absent in checkpoints saved before dsc-run had one.
  std::optional<int64_t> seed;
  /// Pipeline stages of the saver: each rank wrote its stage's states.
  /// Informative only: a checkpoint holds the model's states by name
  /// whatever the stages, so any number of stages can resume it.
  int pipelineParallelSize = 1;
};

//===----------------------------------------------------------------------===//
// Saving
//===----------------------------------------------------------------------===//

/// Creates the checkpoint root `root` if it does not exist (every rank, at
/// setup, so that a --save that cannot work fails before the first step).
/// Throws Error.
void createCheckpointRoot(const std::string &root);

/// Rank 0, before any rank writes: creates `root` if needed and an empty
/// staging directory ROOT/step_<N>.saving for the shards, removing what an
/// interrupted save left there. Throws Error.
void beginCheckpoint(const std::string &root, int64_t step);

/// Every rank: writes this rank's shard (the states checkpointWrites gives
/// it, read from `states`, ArtifactInfo::states order) atomically into the
/// staging directory, and returns its report for commitCheckpoint: the
/// shard's size and each tensor's dtype, shape and checksum (JSON). Throws
/// Error, naming the directory when rank 0's staging directory is not
/// visible here (ROOT must be shared by every rank), and naming the tensor
/// when a state holds NaN or an infinity: a resume would refuse it.
std::string writeCheckpointShard(const std::string &root,
                                 const CheckpointJob &job,
                                 const ArtifactInfo &info,
                                 const std::vector<void *> &states, int rank);
/// The same for a rank of a pipeline-parallel job: `states` are those of
/// its own stage's tables (stages[rank / (W/P)]), of which it writes the
/// ones checkpointWrites(stages, ...) gives it, under their names.
std::string writeCheckpointShard(const std::string &root,
                                 const CheckpointJob &job,
                                 const PipelineStageInfos &stages,
                                 const std::vector<void *> &states, int rank);

/// Rank 0, once every rank's shard is durable: checks that the reports
/// (in rank order) hold every state once, writes metadata.json atomically,
/// renames the staging directory to ROOT/step_<N> (ROOT/step_<N>.<V> when
/// a save of the step exists), points ROOT/latest at it atomically, then
/// removes the saves of step N it supersedes. Returns the new directory.
/// Throws Error; `latest` is untouched then.
std::string commitCheckpoint(const std::string &root, const CheckpointJob &job,
                             const ArtifactInfo &info,
                             const std::vector<std::string> &reports);
/// The same for a pipeline-parallel job: the reports hold every state of
/// every stage once (a state that several stages hold, once), and
/// metadata.json records the stage count ("pipeline_parallel_size").
std::string commitCheckpoint(const std::string &root, const CheckpointJob &job,
                             const PipelineStageInfos &stages,
                             const std::vector<std::string> &reports);

/// Rank 0, after a failed save: removes the staging directory, best effort.
void abandonCheckpoint(const std::string &root, int64_t step) noexcept;

//===----------------------------------------------------------------------===//
// Resuming
//===----------------------------------------------------------------------===//

/// A checkpoint found and verified on disk, every shard open.
class Checkpoint {
public:
  /// `dir` is a checkpoint root (its `latest` names the step directory) or
  /// a step directory itself. Reads metadata.json and opens every shard,
  /// refusing with an Error naming the directory: no checkpoint there, a
  /// missing or malformed metadata.json or one of another format version, a
  /// missing shard, a shard whose size differs from the metadata's
  /// (truncated), whose header does not hold a tensor as the metadata
  /// says, or that holds a tensor the metadata does not place there.
  static Checkpoint open(const std::string &dir);

  const std::string &directory() const { return directory_; }
  const CheckpointJob &job() const { return job_; }

  /// Refuses a checkpoint that holds none of the parameters and buffers of
  /// `info` (one pipeline stage's, or the whole artifact's): another
  /// model's. Checked before checkJob, whose complaint would say less.
  void checkModel(const ArtifactInfo &info) const;

  /// Refuses another global batch or sequence length than the saver's: the
  /// data position (batch N) means the same sequences only with the same
  /// batch shape.
  void checkJob(int64_t globalBatch, int64_t seq) const;

  /// Reads every state of `info` into buffers from `pool`, in
  /// ArtifactInfo::states order, as loadStates (Run.h) does from a weights
  /// file; refuses a state the checkpoint lacks (but those zero between
  /// optimizer steps, zeroBetweenSteps in Run.h, which start at zero),
  /// another dtype, shape
  /// (naming both) or role, a tensor whose bytes fail their checksum, and
  /// one holding NaN or an infinity.
  /// `rank` is the loading rank: a partitioned state gets its slice
  /// (stateSlice, Run.h, with the artifact's expert-parallel size, at the
  /// rank's place in its pipeline stage: stageLocalRank), zero-padded. A
  /// pipeline stage reads its own states only, by name, so a checkpoint
  /// saved by any number of stages resumes on any other.
  /// States on the host come from `hostPool` when one is given, states on
  /// NVMe from `nvmePool` (statePool, Run.h). A teacher's state is left
  /// nullptr, as loadStates (Run.h) leaves it.
  std::vector<void *> loadStates(const ArtifactInfo &info, MemoryPool &pool,
                                 int rank = 0, MemoryPool *hostPool = nullptr,
                                 MemoryPool *nvmePool = nullptr) const;

  /// What metadata.json says of one tensor, for tools that read a
  /// checkpoint without its artifact (dsc-ckpt).
  struct TensorRecord {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape; // the whole tensor's
    /// Absent in checkpoints saved before metadata.json recorded roles.
    std::optional<StateRole> role;
    /// Partitioned: the saver's ranks and elements per rank, and how many
    /// pieces hold it; 0, 0 and 1 for a tensor stored whole.
    int partitionWorldSize = 0;
    int64_t shardElements = 0;
    size_t pieces = 1;
    /// The group it was partitioned over and that group's size: the World
    /// and partitionWorldSize for ZeRO, Expert and P for expert parallelism,
    /// ExpertData and W/P for ZeRO's partitions of experts.
    CommGroup partitionGroup = CommGroup::World;
    int partitionGroupSize = 0;
    int64_t numel() const;
  };
  /// Every tensor, sorted by name.
  std::vector<TensorRecord> tensors() const;
  /// Reads tensor `name` whole into `dst` (`bytes` = its numel times its
  /// dtype's size), its pieces reassembled whatever the partitioning that
  /// saved it; refuses a piece whose bytes fail their checksum.
  void readTensor(const std::string &name, void *dst, size_t bytes) const;

private:
  /// Elements [offset, offset + count) of the whole flattened tensor, as
  /// tensor `name` of shape `shape` in shard `shard`.
  /// A piece of `blocks` ranges of `count` elements, `stride` apart from
  /// `offset` (a tensor-parallel slice; one range otherwise).
  struct Piece {
    std::string shard;
    StateSlice held; // the whole tensor's elements it holds, in order
    std::vector<int64_t> shape;
    size_t bytes = 0;
    uint64_t checksum = 0;
  };
  struct Entry {
    DType dtype;
    std::vector<int64_t> shape; // the whole tensor's
    std::vector<Piece> pieces;  // by offset, covering the whole once
    std::optional<StateRole> role;
    int partitionWorldSize = 0;
    int64_t shardElements = 0;
    CommGroup partitionGroup = CommGroup::World;
    int partitionGroupSize = 0;
  };
  /// Per read: the shard last opened and a buffer for pieces read whole
  /// but copied in part.
  struct ReadCache;
  Checkpoint() = default;
  /// Copies the elements of [begin, begin + count) of tensor `name` (of
  /// `element` bytes each) that its pieces hold into `dst`, each piece
  /// read whole to check its checksum; elements past the tensor's end
  /// (a partition's padding) are left alone.
  void readElements(const std::string &name, const Entry &entry,
                    int64_t begin, int64_t count, size_t element, char *dst,
                    ReadCache &cache) const;
  std::string directory_;
  CheckpointJob job_;
  std::map<std::string, Entry> tensors_;
  // Shard file names, in rank order. Shards are opened when read, one at a
  // time, rather than held open: a job of M ranks resuming W shards would
  // otherwise hold W descriptors per rank.
  std::vector<std::string> shards_;
};

} // namespace dsc::rt

#endif // DSC_RUNTIME_CHECKPOINT_H
