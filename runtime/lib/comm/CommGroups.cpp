//===- CommGroups.cpp - the groups of ranks, and their communicators ------===//

#include "dsc/runtime/CommGroups.h"

#include "dsc/runtime/Comm.h"
#include "dsc/runtime/Error.h"

namespace dsc::rt {

namespace {
[[noreturn]] void unknownGroup(CommGroup group) {
  throw Error("unknown communicator group " +
              std::to_string(static_cast<int32_t>(group)));
}
} // namespace

const char *name(CommGroup group) {
  switch (group) {
  case CommGroup::World: return "world";
  case CommGroup::Expert: return "expert";
  case CommGroup::ExpertData: return "expert_data";
  case CommGroup::Tensor: return "tensor";
  case CommGroup::Data: return "data";
  case CommGroup::Pipeline: return "pipeline";
  }
  unknownGroup(group);
}

bool parseCommGroup(const std::string &text, CommGroup &group) {
  for (CommGroup candidate : {CommGroup::World, CommGroup::Expert,
                              CommGroup::ExpertData, CommGroup::Tensor,
                              CommGroup::Data, CommGroup::Pipeline})
    if (text == name(candidate)) {
      group = candidate;
      return true;
    }
  return false;
}

bool isCommGroup(int32_t value) {
  return value >= static_cast<int32_t>(CommGroup::World) &&
         value <= static_cast<int32_t>(CommGroup::Pipeline);
}

int groupIndex(CommGroup group, int rank, int expertParallelSize,
               int tensorParallelSize) {
  switch (group) {
  case CommGroup::World: return rank;
  // Under tensor parallelism the expert groups run along the data
  // dimension: rank r's data index d = r / T is split into d % P (its
  // place in the expert group) and d / P (in the expert-data group).
  case CommGroup::Expert: return rank / tensorParallelSize % expertParallelSize;
  case CommGroup::ExpertData:
    return rank / tensorParallelSize / expertParallelSize;
  case CommGroup::Tensor: return rank % tensorParallelSize;
  case CommGroup::Data: return rank / tensorParallelSize;
  case CommGroup::Pipeline:
    return 0; // a pipeline of one stage; GroupLayout knows the others
  }
  unknownGroup(group);
}

GroupLayout::GroupLayout(int worldSize, int expertParallelSize,
                         int tensorParallelSize, int pipelineParallelSize)
    : worldSize_(worldSize), expertParallelSize_(expertParallelSize),
      tensorParallelSize_(tensorParallelSize),
      pipelineParallelSize_(pipelineParallelSize) {
  check(worldSize >= 1,
        "world size " + std::to_string(worldSize) + " is not positive");
  check(expertParallelSize >= 1 && worldSize % expertParallelSize == 0,
        "expert-parallel size " + std::to_string(expertParallelSize) +
            " does not divide the world size " + std::to_string(worldSize));
  check(tensorParallelSize >= 1 && worldSize % tensorParallelSize == 0,
        "tensor-parallel size " + std::to_string(tensorParallelSize) +
            " does not divide the world size " + std::to_string(worldSize));
  check(worldSize % (expertParallelSize * tensorParallelSize) == 0,
        "expert-parallel size " + std::to_string(expertParallelSize) +
            " times tensor-parallel size " +
            std::to_string(tensorParallelSize) +
            " does not divide the world size " + std::to_string(worldSize));
  check(pipelineParallelSize >= 1 &&
            worldSize % (tensorParallelSize * pipelineParallelSize) == 0,
        "tensor-parallel size " + std::to_string(tensorParallelSize) +
            " times pipeline-parallel size " +
            std::to_string(pipelineParallelSize) +
            " does not divide the world size " + std::to_string(worldSize));
  // The expert groups are made of the data-parallel ranks of one stage.
  check(worldSize % (expertParallelSize * tensorParallelSize *
                     pipelineParallelSize) == 0,
        "expert-parallel size " + std::to_string(expertParallelSize) +
            " times tensor-parallel size " +
            std::to_string(tensorParallelSize) +
            " does not divide the " +
            std::to_string(worldSize / pipelineParallelSize) +
            " ranks of a pipeline stage");
}

int GroupLayout::stage(int rank) const { return rank / stageRanks(); }

// Every group but the world and the pipeline lies within one pipeline
// stage (Megatron's mesh: rank = (p * D + d) * T + t), the expert groups
// among them, along the stage's data dimension: a rank's place in such a
// group is its stage-local rank's in a job of one stage, and the stages'
// groups are numbered one stage after the other.
namespace {
/// The color (see GroupLayout::color) of stage-local rank `local` in a
/// stage of one pipeline: the tensor index t = local % T and the part of
/// the data index d = local / T that the group does not vary.
int colorInStage(CommGroup group, int local, int expertParallelSize,
                 int tensorParallelSize) {
  const int t = local % tensorParallelSize, d = local / tensorParallelSize;
  switch (group) {
  case CommGroup::Expert:
    return d / expertParallelSize * tensorParallelSize + t;
  case CommGroup::ExpertData:
    return d % expertParallelSize * tensorParallelSize + t;
  case CommGroup::Tensor: return d;
  case CommGroup::Data: return t;
  case CommGroup::World:
  case CommGroup::Pipeline: break;
  }
  unknownGroup(group);
}

/// The stage-local rank at index `index` of the group that stage-local
/// rank `local` is in.
int memberInStage(CommGroup group, int local, int index,
                  int expertParallelSize, int tensorParallelSize) {
  const int t = local % tensorParallelSize, d = local / tensorParallelSize;
  switch (group) {
  case CommGroup::Expert:
    return (d / expertParallelSize * expertParallelSize + index) *
               tensorParallelSize + t;
  case CommGroup::ExpertData:
    return (d % expertParallelSize + index * expertParallelSize) *
               tensorParallelSize + t;
  case CommGroup::Tensor: return d * tensorParallelSize + index;
  case CommGroup::Data: return t + index * tensorParallelSize;
  case CommGroup::World:
  case CommGroup::Pipeline: break;
  }
  unknownGroup(group);
}
} // namespace

int GroupLayout::index(CommGroup group, int rank) const {
  if (group == CommGroup::Pipeline)
    return stage(rank);
  if (group == CommGroup::World)
    return rank;
  return groupIndex(group, rank % stageRanks(), expertParallelSize_,
                    tensorParallelSize_);
}

int GroupLayout::size(CommGroup group) const {
  switch (group) {
  case CommGroup::World: return worldSize_;
  case CommGroup::Expert: return expertParallelSize_;
  case CommGroup::ExpertData:
    return stageRanks() / (expertParallelSize_ * tensorParallelSize_);
  case CommGroup::Tensor: return tensorParallelSize_;
  case CommGroup::Data: return stageRanks() / tensorParallelSize_;
  case CommGroup::Pipeline: return pipelineParallelSize_;
  }
  unknownGroup(group);
}

int GroupLayout::color(CommGroup group, int rank) const {
  switch (group) {
  case CommGroup::World: return 0;
  case CommGroup::Pipeline: return rank % stageRanks();
  default:
    // A stage holds stageRanks() / size(group) groups of the kind.
    return stage(rank) * (stageRanks() / size(group)) +
           colorInStage(group, rank % stageRanks(), expertParallelSize_,
                        tensorParallelSize_);
  }
}

int GroupLayout::member(CommGroup group, int rank, int index) const {
  switch (group) {
  case CommGroup::World: return index;
  case CommGroup::Pipeline:
    return color(group, rank) + index * stageRanks();
  default:
    return stage(rank) * stageRanks() +
           memberInStage(group, rank % stageRanks(), index,
                         expertParallelSize_, tensorParallelSize_);
  }
}

std::string GroupLayout::describe(CommGroup group, int rank) const {
  std::string text = std::string("the ") + name(group) + " group (rank";
  int members = size(group);
  text += members > 1 ? "s " : " ";
  for (int i = 0; i < members; ++i)
    text += (i ? ", " : "") + std::to_string(member(group, rank, i));
  return text + ")";
}

GroupCommunicators::GroupCommunicators(Communicator &world,
                                       int expertParallelSize,
                                       int tensorParallelSize,
                                       int pipelineParallelSize)
    : world_(world), layout_(world.size(), expertParallelSize,
                             tensorParallelSize, pipelineParallelSize) {
  // The same decisions on every rank (they depend on W, P and T only), in the
  // same order: every rank takes part in the same splits.
  auto make = [&](CommGroup group) -> std::unique_ptr<Communicator> {
    int members = layout_.size(group);
    if (members == layout_.worldSize() || members == 1)
      return nullptr;
    const int rank = world.rank();
    std::unique_ptr<Communicator> comm =
        world.split(layout_.color(group, rank), layout_.index(group, rank));
    check(comm->size() == members && comm->rank() == layout_.index(group, rank),
          "the " + std::string(name(group)) + " communicator of rank " +
              std::to_string(rank) + " has rank " +
              std::to_string(comm->rank()) + " of " +
              std::to_string(comm->size()) + ", expected " +
              std::to_string(layout_.index(group, rank)) + " of " +
              std::to_string(members));
    comm->setLabel(layout_.describe(group, rank));
    return comm;
  };
  expert_ = make(CommGroup::Expert);
  expertData_ = make(CommGroup::ExpertData);
  tensor_ = make(CommGroup::Tensor);
  data_ = make(CommGroup::Data);
  pipeline_ = make(CommGroup::Pipeline);
}

GroupCommunicators::~GroupCommunicators() = default;

int GroupCommunicators::rank() const { return world_.rank(); }

Communicator *GroupCommunicators::communicator(CommGroup group) const {
  if (layout_.size(group) == layout_.worldSize())
    return &world_;
  if (layout_.size(group) == 1)
    return nullptr;
  switch (group) {
  case CommGroup::Expert: return expert_.get();
  case CommGroup::ExpertData: return expertData_.get();
  case CommGroup::Tensor: return tensor_.get();
  case CommGroup::Data: return data_.get();
  case CommGroup::Pipeline: return pipeline_.get();
  case CommGroup::World: break;
  }
  return &world_;
}

} // namespace dsc::rt
