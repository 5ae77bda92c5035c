//===- RunStepContext.cpp - what generated code calls during a step -------===//

#include "dsc/runtime/Comm.h"
#include "dsc/runtime/CommGroups.h"
#include "dsc/runtime/NvmeStore.h"
#include "dsc/runtime/Run.h"
#include "dsc/runtime/Stream.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

namespace dsc::rt {

namespace {

/// The communicator's type for `type`; Error for those it has none for
/// (i1), saying that it cannot `verb` them.
CommDType commType(ElementType type, const char *verb) {
  switch (type) {
  case ElementType::F32: return CommDType::F32;
  case ElementType::F64: return CommDType::F64;
  case ElementType::I32: return CommDType::I32;
  case ElementType::I64: return CommDType::I64;
  case ElementType::BF16: return CommDType::BF16;
  case ElementType::F16: return CommDType::F16;
  case ElementType::I1:
    break;
  }
  throw Error(std::string("the communicator cannot ") + verb + " " +
              elementTypeName(type) + " elements");
}

template <typename T>
T *at(std::vector<T *> &list, int32_t i, const char *what) {
  check(i >= 0 && static_cast<size_t>(i) < list.size(),
        std::string("artifact asked for ") + what + " " + std::to_string(i) +
            " of " + std::to_string(list.size()));
  return list[static_cast<size_t>(i)];
}

} // namespace

RunStepContext::RunStepContext(std::vector<void *> states,
                               std::vector<void *> inputs,
                               std::vector<void *> outputs, void *arena,
                               Communicator &comm,
                               std::vector<Stream *> streams,
                               int32_t collectiveStream,
                               int32_t expertParallelSize, LocalCopy localCopy,
                               int32_t tensorParallelSize,
                               int32_t pipelineParallelSize)
    : states_(std::move(states)), inputs_(std::move(inputs)),
      outputs_(std::move(outputs)), arena_(arena), comm_(comm),
      streams_(std::move(streams)), collectiveStream_(collectiveStream),
      localCopy_(std::move(localCopy)),
      groups_(std::make_unique<GroupCommunicators>(
          comm, expertParallelSize, tensorParallelSize, pipelineParallelSize)) {
}

RunStepContext::~RunStepContext() = default;

void RunStepContext::beginStep(int64_t step, int64_t firstSample,
                               bool endsOptimizerStep) {
  step_ = step;
  endsOptimizerStep_ = endsOptimizerStep;
  firstSample_ = firstSample;
  collectivesThisStep_ = 0;
  lastSequence_ = 0;
}

void RunStepContext::countTransfer(TransferDirection direction, size_t bytes) {
  TransferCounters &counters = transfers_.at(size_t(direction));
  counters.calls += 1;
  counters.bytes += int64_t(bytes);
}

void RunStepContext::checkNvme(int32_t i, size_t bytes,
                               TransferCounters &counters) {
  check(nvme_ != nullptr, "the artifact reads or writes state " +
                              std::to_string(i) +
                              " on NVMe, but the run has no NVMe store");
  check(i >= 0 && static_cast<size_t>(i) < states_.size() &&
            nvme_->stateBytes(NvmeStore::StateId(i)) == bytes,
        "the artifact transfers " + std::to_string(bytes) +
            " bytes of NVMe state " + std::to_string(i) +
            ", which is not the state's size");
  counters.calls += 1;
  counters.bytes += int64_t(bytes);
}

// The stream's task issues the request and waits for it: the stream runs
// in order, so the next read or write starts once this one is complete,
// and the events recorded after it stand for its completion.
void RunStepContext::nvmeRead(int32_t i, void *buffer, size_t bytes,
                              Stream &stream) {
  enqueueNvme(true, i, buffer, bytes, stream);
}

void RunStepContext::nvmeWrite(int32_t i, const void *buffer, size_t bytes,
                               Stream &stream) {
  enqueueNvme(false, i, const_cast<void *>(buffer), bytes, stream);
}

void RunStepContext::enqueueNvme(bool read, int32_t i, void *buffer,
                                 size_t bytes, Stream &stream) {
  checkNvme(i, bytes, read ? nvmeReads_ : nvmeWrites_);
  NvmeStore *store = nvme_;
  auto id = NvmeStore::StateId(i);
  stream.enqueue(
      [store, read, id, buffer, bytes] {
        store->wait(read ? store->read(id, 0, buffer, bytes)
                         : store->write(id, 0, buffer, bytes));
      },
      std::string(read ? "NVMe read" : "NVMe write") + " of state " +
          std::to_string(i));
}

const int64_t *RunStepContext::stepKey() {
  key_ = {static_cast<int64_t>(seed_), step_, firstSample_, training_ ? 1 : 0};
  return key_.data();
}

void *RunStepContext::state(int32_t i) { return at(states_, i, "state"); }
void RunStepContext::setState(int32_t i, void *buffer) {
  at(states_, i, "state");
  states_[size_t(i)] = buffer;
}
void *RunStepContext::output(int32_t i) { return at(outputs_, i, "output"); }
const void *RunStepContext::input(int32_t i) {
  return at(inputs_, i, "input");
}
Stream &RunStepContext::stream(int32_t i) { return *at(streams_, i, "stream"); }

RunStepContext::Issued RunStepContext::begin(CollectiveKind kind,
                                             const std::string &what,
                                             size_t count, ElementType type,
                                             int64_t sequence, Stream &stream,
                                             CommGroup group, bool counted) {
  const bool known = isCommGroup(static_cast<int32_t>(group));
  std::string over;
  if (!known)
    over = " over group " + std::to_string(static_cast<int32_t>(group));
  else if (group != CommGroup::World)
    over = std::string(" over the ") + name(group) + " group";
  std::string where = "step " + std::to_string(step_) + ", collective " +
                      std::to_string(sequence) + " (" + what + " of " +
                      std::to_string(count) + " " + elementTypeName(type) +
                      over + ")";
  check(collectivesThisStep_ == 0 ? sequence >= 0 : sequence > lastSequence_,
        where + ": sequence numbers must grow within a step; the previous "
                "collective of this step was " +
            std::to_string(lastSequence_));
  ++collectivesThisStep_;
  lastSequence_ = sequence;
  Issued issued{nullptr, CommDType::F32, where,
                what + ", collective " + std::to_string(sequence)};
  try {
    check(known, "no such communicator group (0: world, 1: expert, 2: "
                 "expert_data, 3: tensor, 4: data, 5: pipeline)");
    bool sums = kind == CollectiveKind::AllReduce ||
                kind == CollectiveKind::ReduceScatter;
    issued.dtype = commType(type, sums ? "sum" : "move");
    check(collectiveStream_ >= 0 &&
              &stream == streams_.at(size_t(collectiveStream_)),
          "it was issued on stream '" + stream.name() +
              "', but the artifact's collectives stream is " +
              (collectiveStream_ >= 0
                   ? "'" + streams_.at(size_t(collectiveStream_))->name() + "'"
                   : std::string("none")));
  } catch (const Error &error) {
    throw Error(where + ": " + error.what());
  }
  issued.comm = groups_->communicator(group);
  if (counted)
    groupStats_[size_t(group)].record(
      kind, collectiveBytesSent(kind, uint64_t(count) * elementSize(type),
                                groupRank(group), groupSize(group)));
  return issued;
}

void RunStepContext::run(
    const Issued &issued, Stream &stream,
    const std::function<void(Communicator &, CommDType)> &collective) {
  auto task = [comm = issued.comm, dtype = issued.dtype, collective,
               where = issued.where] {
    try {
      collective(*comm, dtype);
    } catch (const Error &error) {
      throw Error(where + ": " + error.what());
    }
  };
  // A host task of a CUDA stream must make no CUDA call (Stream.h): NCCL
  // enqueues on the stream itself.
  if (std::strcmp(stream.backend(), "cpu") == 0)
    stream.enqueue(task, issued.label);
  else
    task();
}

void RunStepContext::copyLocally(const Issued &issued, void *dst,
                                 const void *src, size_t bytes,
                                 Stream &stream) {
  if (dst == src || bytes == 0)
    return;
  if (localCopy_) {
    localCopy_(dst, src, bytes, stream);
    return;
  }
  check(std::strcmp(stream.backend(), "cpu") == 0,
        issued.where + ": no local copy on a stream of the " +
            stream.backend() + " backend");
  stream.enqueue([dst, src, bytes] { std::memmove(dst, src, bytes); },
                 issued.label);
}

void RunStepContext::allReduceSum(void *buffer, size_t count, ElementType type,
                                  int64_t sequence, Stream &stream,
                                  CommGroup group) {
  Issued issued = begin(CollectiveKind::AllReduce, "allReduceSum", count, type,
                        sequence, stream, group);
  // Over a group of one rank the sum is the buffer as it is.
  if (issued.comm)
    run(issued, stream, [buffer, count](Communicator &comm, CommDType dtype) {
      comm.allReduce(buffer, buffer, count, dtype, ReduceOp::Sum);
    });
}

void RunStepContext::allReduceSumStages(void *buffer, size_t count,
                                        ElementType type, int64_t sequence,
                                        Stream &stream, const int32_t *stages,
                                        int32_t stageCount) {
  std::vector<int32_t> members(stages, stages + std::max(stageCount, 0));
  std::string group = "pipeline[";
  for (size_t i = 0; i < members.size(); ++i)
    group += (i ? "," : "") + std::to_string(members[i]);
  group += "]";
  Issued issued = begin(CollectiveKind::AllReduce,
                        "allReduceSumStages over " + group, count, type,
                        sequence, stream, CommGroup::Pipeline,
                        /*counted=*/false);
  int32_t stage = groupRank(CommGroup::Pipeline);
  int32_t stageCountAll = groupSize(CommGroup::Pipeline);
  auto self = std::find(members.begin(), members.end(), stage);
  bool increasing = std::adjacent_find(members.begin(), members.end(),
                                       std::greater_equal<int32_t>()) ==
                    members.end();
  check(members.size() >= 2 && increasing && members.front() >= 0 &&
            members.back() < stageCountAll && self != members.end(),
        issued.where + ": the stages must be at least 2, increasing, below " +
            std::to_string(stageCountAll) + " and include this rank's stage " +
            std::to_string(stage));
  check(std::strcmp(stream.backend(), "cpu") == 0 &&
            (type == ElementType::F32 || type == ElementType::F64),
        issued.where + ": a sum over some stages runs on a CPU stream, in f32 "
                       "or f64, only");
  int32_t index = int32_t(self - members.begin());
  stageGroupStats_[group].record(
      CollectiveKind::AllReduce,
      collectiveBytesSent(CollectiveKind::AllReduce,
                          uint64_t(count) * elementSize(type), index,
                          int32_t(members.size())));
  run(issued, stream, [=](Communicator &comm, CommDType dtype) {
    // Every member sends its part to the others and adds theirs in stage
    // order: the same additions in the same order on every member.
    size_t bytes = count * elementSize(type);
    for (int32_t peer : members)
      if (peer != stage)
        comm.send(buffer, count, dtype, peer, kStagesTag);
    std::vector<char> parts(bytes * members.size());
    for (size_t i = 0; i < members.size(); ++i)
      if (members[i] == stage)
        std::memcpy(parts.data() + i * bytes, buffer, bytes);
      else
        comm.recv(parts.data() + i * bytes, count, dtype, members[i],
                  kStagesTag);
    auto sum = [&](auto *out) {
      using T = std::remove_pointer_t<decltype(out)>;
      const T *first = reinterpret_cast<const T *>(parts.data());
      std::copy(first, first + count, out);
      for (size_t i = 1; i < members.size(); ++i) {
        const T *part = reinterpret_cast<const T *>(parts.data() + i * bytes);
        for (size_t e = 0; e < count; ++e)
          out[e] += part[e];
      }
    };
    if (type == ElementType::F32)
      sum(static_cast<float *>(buffer));
    else
      sum(static_cast<double *>(buffer));
  });
}

void RunStepContext::allReduceMax(void *buffer, size_t count, ElementType type,
                                  int64_t sequence, Stream &stream,
                                  CommGroup group) {
  Issued issued = begin(CollectiveKind::AllReduce, "allReduceMax", count, type,
                        sequence, stream, group);
  if (issued.comm)
    run(issued, stream, [buffer, count](Communicator &comm, CommDType dtype) {
      comm.allReduce(buffer, buffer, count, dtype, ReduceOp::Max);
    });
}

void RunStepContext::allGather(const void *send, void *recv, size_t count,
                               ElementType type, int64_t sequence,
                               Stream &stream, CommGroup group) {
  Issued issued = begin(CollectiveKind::AllGather, "allGather", count, type,
                        sequence, stream, group);
  if (!issued.comm)
    return copyLocally(issued, recv, send, count * elementSize(type), stream);
  run(issued, stream, [send, recv, count](Communicator &comm, CommDType dtype) {
    comm.allGather(send, recv, count, dtype);
  });
}

void RunStepContext::reduceScatterSum(const void *send, void *recv,
                                      size_t count, ElementType type,
                                      int64_t sequence, Stream &stream,
                                      CommGroup group) {
  Issued issued = begin(CollectiveKind::ReduceScatter, "reduceScatterSum",
                        count, type, sequence, stream, group);
  if (!issued.comm)
    return copyLocally(issued, recv, send, count * elementSize(type), stream);
  run(issued, stream, [send, recv, count](Communicator &comm, CommDType dtype) {
    comm.reduceScatter(send, recv, count, dtype, ReduceOp::Sum);
  });
}

void RunStepContext::allToAll(void *buffer, size_t count, ElementType type,
                              int64_t sequence, Stream &stream,
                              CommGroup group) {
  Issued issued = begin(CollectiveKind::AllToAll, "allToAll", count, type,
                        sequence, stream, group);
  // Over a group of one rank the only block stays where it is.
  if (issued.comm)
    run(issued, stream, [buffer, count](Communicator &comm, CommDType dtype) {
      comm.allToAll(buffer, buffer, count, dtype);
    });
}

void RunStepContext::pipelineSend(const void *buffer, size_t count,
                                  ElementType type, PipelinePeer peer,
                                  int64_t microBatch, int64_t sequence,
                                  Stream &stream) {
  pipelineTransfer(true, const_cast<void *>(buffer), count, type, peer,
                   microBatch, sequence, stream);
}

void RunStepContext::pipelineRecv(void *buffer, size_t count, ElementType type,
                                  PipelinePeer peer, int64_t microBatch,
                                  int64_t sequence, Stream &stream) {
  pipelineTransfer(false, buffer, count, type, peer, microBatch, sequence,
                   stream);
}

void RunStepContext::pipelineTransfer(bool send, void *buffer, size_t count,
                                      ElementType type, PipelinePeer peer,
                                      int64_t microBatch, int64_t sequence,
                                      Stream &stream) {
  const char *what = send ? "pipelineSend" : "pipelineRecv";
  // The pipeline group is a ring: under the interleaved schedule the last
  // rank's chunk c sends to rank 0's chunk c + 1 (and its gradient comes
  // back the other way). A message is matched by its peer and micro-batch
  // alone; two of one micro-batch between the same ranks (a chunk's and
  // the next chunk's, or with two ranks an activation and a gradient) are
  // issued and received in the same order, since each depends on the one
  // before through the model's chunks.
  int32_t stage = groupRank(CommGroup::Pipeline);
  int32_t stages = groupSize(CommGroup::Pipeline);
  int32_t target = peer == PipelinePeer::Next ? (stage + 1) % stages
                                              : (stage + stages - 1) % stages;
  check(stages > 1 && microBatch >= 0 && microBatch <= INT32_MAX,
        "step " + std::to_string(step_) + ", collective " +
            std::to_string(sequence) + " (" + what + "): stage " +
            std::to_string(stage) + " of " + std::to_string(stages) +
            " has no " + (peer == PipelinePeer::Next ? "next" : "previous") +
            " stage, or micro-batch " + std::to_string(microBatch) +
            " is out of range");
  Issued issued =
      begin(send ? CollectiveKind::Send : CollectiveKind::Recv, what, count,
            type, sequence, stream, CommGroup::Pipeline);
  int tag = int(microBatch);
  run(issued, stream, [=](Communicator &comm, CommDType dtype) {
    if (send)
      comm.send(buffer, count, dtype, target, tag);
    else
      comm.recv(buffer, count, dtype, target, tag);
  });
}

void RunStepContext::completePipelineSends() {
  if (Communicator *comm = groups_->communicator(CommGroup::Pipeline))
    comm->completeSends();
}

int32_t RunStepContext::groupSize(CommGroup group) const {
  return groups_->layout().size(group);
}

int32_t RunStepContext::groupRank(CommGroup group) const {
  return groups_->layout().index(group, comm_.rank());
}

const CommStats &RunStepContext::groupStats(CommGroup group) const {
  check(isCommGroup(static_cast<int32_t>(group)),
        "no such communicator group " +
            std::to_string(static_cast<int32_t>(group)));
  return groupStats_[size_t(group)];
}

int32_t RunStepContext::rank() const { return comm_.rank(); }
int32_t RunStepContext::worldSize() const { return comm_.size(); }

} // namespace dsc::rt
