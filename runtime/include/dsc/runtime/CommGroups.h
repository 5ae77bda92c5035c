//===- CommGroups.h - groups of ranks and their communicators -*- C++ -*-===//
//
// Expert parallelism runs collectives over groups of ranks smaller than the
// job: its all-to-alls over the Expert group (the ranks that share out a
// layer's experts), the gradient sums of the experts over the ExpertData
// group (the ranks that hold the same experts). Tensor parallelism sums the
// partial products of its split blocks over the Tensor group and the
// gradients over the Data group. Everything else runs over the World
// (Artifact.h, CommGroup, says who is in which). GroupLayout is that
// arithmetic, shared by whatever places data by group: the loading of
// expert-partitioned states, checkpoints, the communicators.
// GroupCommunicators makes the communicator of each group once, at start.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_COMMGROUPS_H
#define DSC_RUNTIME_COMMGROUPS_H

#include "dsc/runtime/Artifact.h"

#include <memory>
#include <string>

namespace dsc::rt {

class Communicator;

/// "world", "expert", "expert_data": the group's name in dsc-run's summary
/// and in checkpoint metadata.
const char *name(CommGroup group);
/// The group of that name; false for any other string.
bool parseCommGroup(const std::string &name, CommGroup &group);
/// Whether `value` is one of CommGroup's values.
bool isCommGroup(int32_t value);

/// `rank`'s index in its group of kind `group` with expert-parallel size
/// `expertParallelSize` and tensor-parallel size `tensorParallelSize`:
/// rank, rank % P, rank / P, rank % T, rank / T (independent of the world
/// size, which is why it is not only a GroupLayout method). `rank` is a
/// rank of one pipeline stage (its stage-local rank).
int groupIndex(CommGroup group, int rank, int expertParallelSize,
               int tensorParallelSize = 1);

/// The groups of a job of W ranks with expert-parallel size EP,
/// tensor-parallel size T and P pipeline stages (CommGroup), laid out as
/// Megatron's mesh: rank = (p * D + d) * T + t. Every group but the world
/// and the pipeline's lies within one stage: the expert groups run along a
/// stage's D data-parallel ranks.
class GroupLayout {
public:
  /// Throws Error unless W >= 1 and EP * T * P divides W.
  GroupLayout(int worldSize, int expertParallelSize,
              int tensorParallelSize = 1, int pipelineParallelSize = 1);

  int worldSize() const { return worldSize_; }
  int expertParallelSize() const { return expertParallelSize_; }
  int tensorParallelSize() const { return tensorParallelSize_; }
  int pipelineParallelSize() const { return pipelineParallelSize_; }
  /// Ranks per pipeline stage, W / P, and `rank`'s stage (Artifact.h).
  int stageRanks() const { return worldSize_ / pipelineParallelSize_; }
  int stage(int rank) const;

  /// Ranks in each group of kind `group`: W, EP, W / (EP T P), T,
  /// W / (T P), P.
  int size(CommGroup group) const;
  /// `rank`'s index in its group of kind `group`: groupIndex of its
  /// stage-local rank, its stage for the Pipeline group.
  int index(CommGroup group, int rank) const;
  /// Which group of kind `group` `rank` is in, numbered from 0 (the color
  /// of Communicator::split), stage after stage.
  int color(CommGroup group, int rank) const;
  /// The rank at index `index` of the group of kind `group` that `rank`
  /// is in.
  int member(CommGroup group, int rank, int index) const;
  /// "the expert group (ranks 2, 3)": `rank`'s group, for messages.
  std::string describe(CommGroup group, int rank) const;

private:
  int worldSize_;
  int expertParallelSize_;
  int tensorParallelSize_;
  int pipelineParallelSize_;
};

/// The communicator of each group of this rank, made once when the job
/// starts. A group of all W ranks (the World; Expert with P = W; ExpertData
/// with P = 1) runs on the job's communicator itself, whose ranks are in
/// group order. A group of one rank otherwise (Expert with P = 1,
/// ExpertData with P = W) has none: its collectives move nothing between
/// ranks (the caller copies locally). Any other group gets a communicator
/// split from the job's (Communicator::split), labelled with describe() for
/// its timeout reports.
class GroupCommunicators {
public:
  /// Collective over `world` (the job's communicator; not owned): every
  /// rank must construct it at the same point. Throws Error unless P
  /// divides world.size(), or when a split communicator's rank or size is
  /// not the layout's.
  GroupCommunicators(Communicator &world, int expertParallelSize,
                     int tensorParallelSize = 1, int pipelineParallelSize = 1);
  ~GroupCommunicators();
  GroupCommunicators(const GroupCommunicators &) = delete;
  GroupCommunicators &operator=(const GroupCommunicators &) = delete;

  const GroupLayout &layout() const { return layout_; }
  /// This rank's index in the job (the world communicator's rank).
  int rank() const;
  /// The communicator of this rank's `group`; nullptr for a group of one
  /// rank that has none.
  Communicator *communicator(CommGroup group) const;

private:
  Communicator &world_;
  GroupLayout layout_;
  std::unique_ptr<Communicator> expert_, expertData_, tensor_, data_,
      pipeline_;
};

} // namespace dsc::rt

#endif // DSC_RUNTIME_COMMGROUPS_H
