//===- RunTarget.cpp - the registry of targets, and the CPU target --------===//
//
// The CPU target keeps state, inputs, outputs and arena in host MemoryPools
// (the artifact reads and writes them where dsc-run does), runs the
// artifact's streams as CpuStreams (a worker thread for those the artifact
// asks one for, Inline otherwise) and sums over MPI. The CUDA target is in CudaRun.cpp, which registers itself when it is
// linked.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/ArtifactLibrary.h"
#include "dsc/runtime/Checkpoint.h"
#include "dsc/runtime/MemoryPool.h"
#include "dsc/runtime/MpiComm.h"
#include "dsc/runtime/NvmeStore.h"
#include "dsc/runtime/Run.h"
#include "dsc/runtime/Stream.h"

#include <mpi.h>

#include <map>
#include <mutex>

namespace dsc::rt {

namespace {

class CpuRunTarget final : public RunTarget {
public:
  void prepare(int rank) override { rank_ = rank; }

  void allocate(const ArtifactInfo &info) override {
    expertParallelSize_ = info.expertParallelSize;
    tensorParallelSize_ = tensorParallelSize(info);
    pipelineParallelSize_ = pipelineParallelSize(info);
    for (int32_t i = 0; i < info.numInputs; ++i)
      inputs_.push_back(ioPool_.allocate(tensorBytes(info.inputs[i])));
    for (int32_t i = 0; i < info.numOutputs; ++i)
      outputs_.push_back(ioPool_.allocate(tensorBytes(info.outputs[i])));
    arena_ = arenaPool_.allocate(static_cast<size_t>(info.arenaBytes));
    // ZeRO-Offload's host memory in pools of its own, apart from the
    // "device" pools, so that the copies between them are real and counted.
    hostArena_ = hostArenaPool_.allocate(static_cast<size_t>(info.hostArenaBytes));
    // ZeRO-Infinity: the NVMe states' file, created (with the states'
    // extents reserved) before any state is read.
    nvme_ = makeNvmeStore(info, nvmePath_, rank_);
    for (int32_t i = 0; i < info.numStreams; ++i) {
      const StreamDesc &desc = info.streams[i];
      streams_.push_back(std::make_unique<CpuStream>(
          desc.name, desc.ownThread ? CpuStream::Mode::Threaded
                                    : CpuStream::Mode::Inline));
      if (desc.collectives) {
        collectiveStream_ = i;
        collectivesOnThread_ = desc.ownThread;
      }
    }
  }

  void loadStates(const ArtifactInfo &info,
                  const SafeTensorsFile &weights) override {
    states_ = dsc::rt::loadStates(info, weights, statePool_, rank_,
                                  &hostStatePool_, &nvmeLoadPool_);
    moveToNvme(info);
  }
  void loadStates(const ArtifactInfo &info,
                  const Checkpoint &checkpoint) override {
    states_ = checkpoint.loadStates(info, statePool_, rank_, &hostStatePool_,
                                    &nvmeLoadPool_);
    moveToNvme(info);
  }
  void loadTeacherStates(const ArtifactInfo &info,
                         const SafeTensorsFile &teacher) override {
    teacherHeld_ = true;
    forEachTeacherState(info, teacher, [&](int32_t i, const StateDesc &own) {
      void *&buffer = states_[size_t(i)];
      buffer = statePool(own, statePool_, &hostStatePool_, &nvmeLoadPool_)
                   .allocate(tensorBytes(own.tensor));
      readState(own, teacher, stageLocalRank(info, rank_), info.expertParallelSize, buffer);
      if (own.tier == MemoryTier::Nvme)
        moveToNvme(info, i);
    });
  }

  MemoryUse releaseTeacher(const ArtifactInfo &info,
                           size_t arenaBytes) override {
    MemoryUse before = inUse();
    teacherHeld_ = false; // (one on NVMe keeps its extent of the file)
    for (int32_t i = 0; i < info.numStates; ++i) {
      void *&buffer = states_[size_t(i)];
      if (info.states[i].role != StateRole::Teacher || !buffer)
        continue;
      statePool(info.states[i], statePool_, &hostStatePool_).release(buffer);
      buffer = nullptr;
      context_->setState(i, nullptr);
    }
    if (arenaBytes < static_cast<size_t>(info.arenaBytes)) {
      arenaPool_.release(arena_);
      arena_ = arenaPool_.allocate(arenaBytes);
      context_->setArena(arena_);
    }
    for (MemoryPool *pool : {&arenaPool_, &statePool_, &ioPool_,
                             &hostStatePool_, &hostArenaPool_})
      pool->resetHighWaterMark();
    MemoryUse after = inUse(), released;
    released.arena = before.arena - after.arena;
    released.state = before.state - after.state;
    released.hostState = before.hostState - after.hostState;
    return released;
  }

  RunStepContext &connect() override {
    if (collectivesOnThread_) {
      int provided = MPI_THREAD_SINGLE;
      MPI_Query_thread(&provided);
      check(provided >= MPI_THREAD_SERIALIZED,
            "the artifact runs its collectives on stream '" +
                streams_[size_t(collectiveStream_)]->name() +
                "''s own thread, which needs MPI_THREAD_SERIALIZED, but MPI "
                "was initialized with thread level " +
                std::to_string(provided) +
                " (dsc-run asks MPI_Init_thread for it; an MPI library "
                "built without thread support cannot run this artifact)");
    }
    comm_ = std::make_unique<MpiCommunicator>();
    std::vector<Stream *> streams;
    for (auto &stream : streams_)
      streams.push_back(stream.get());
    context_ = std::make_unique<RunStepContext>(
        states_, inputs_, outputs_, arena_, *comm_, streams, collectiveStream_,
        expertParallelSize_, RunStepContext::LocalCopy(), tensorParallelSize_,
        pipelineParallelSize_);
    context_->setHostArena(hostArena_);
    context_->setNvmeStore(nvme_.get());
    return *context_;
  }

  void *hostInput(int32_t i) override { return inputs_.at(size_t(i)); }
  const void *hostOutput(int32_t i) override { return outputs_.at(size_t(i)); }

  // An NVMe state is read from its file into `scratch` (every step has
  // written its states back before it returned).
  std::vector<void *> hostStates(const ArtifactInfo &info, int rank,
                                 int worldSize, MemoryPool &scratch) override {
    std::vector<void *> host = states_;
    for (int32_t i = 0; i < info.numStates; ++i) {
      if (info.states[i].tier != MemoryTier::Nvme ||
          !checkpointWritesInStage(info, i, rank, worldSize))
        continue;
      size_t bytes = tensorBytes(info.states[i].tensor);
      host[size_t(i)] = scratch.allocate(bytes);
      nvme_->wait(nvme_->read(NvmeStore::StateId(i), 0, host[size_t(i)], bytes));
    }
    return host;
  }

  const void *hostState(const ArtifactInfo &info, int32_t i,
                        MemoryPool &scratch) override {
    if (info.states[i].tier != MemoryTier::Nvme)
      return states_.at(size_t(i));
    if (info.states[i].role == StateRole::Teacher && !teacherHeld_)
      return nullptr; // never read, or released
    size_t bytes = tensorBytes(info.states[i].tensor);
    void *copy = scratch.allocate(bytes);
    nvme_->wait(nvme_->read(NvmeStore::StateId(i), 0, copy, bytes));
    return copy;
  }

  MemoryUse memoryUse() const override {
    MemoryUse use;
    use.arena = arenaPool_.highWaterMark();
    use.state = statePool_.highWaterMark();
    use.io = ioPool_.highWaterMark();
    use.hostState = hostStatePool_.highWaterMark();
    use.hostArena = hostArenaPool_.highWaterMark();
    if (nvme_)
      use.nvmeState = nvmeBytes_;
    return use;
  }

private:
  /// The pools' bytes in use now, in MemoryUse's fields.
  MemoryUse inUse() const {
    MemoryUse use;
    use.arena = arenaPool_.bytesInUse();
    use.state = statePool_.bytesInUse();
    use.io = ioPool_.bytesInUse();
    use.hostState = hostStatePool_.bytesInUse();
    use.hostArena = hostArenaPool_.bytesInUse();
    return use;
  }

  /// Writes each NVMe state, read into nvmeLoadPool_, into its file, and
  /// releases its memory: during the steps only the artifact's host
  /// buffers hold it. A teacher's states are loadTeacherStates' to move
  /// (loadStates leaves them unread).
  void moveToNvme(const ArtifactInfo &info) {
    for (int32_t i = 0; i < info.numStates; ++i)
      if (info.states[i].tier == MemoryTier::Nvme &&
          info.states[i].role != StateRole::Teacher)
        moveToNvme(info, i);
  }
  void moveToNvme(const ArtifactInfo &info, int32_t i) {
    size_t bytes = tensorBytes(info.states[i].tensor);
    void *&state = states_[size_t(i)];
    nvme_->wait(nvme_->write(NvmeStore::StateId(i), 0, state, bytes));
    nvmeLoadPool_.release(state);
    state = nullptr;
    nvmeBytes_ += bytes;
  }

  MemoryPool arenaPool_{"arena"}, statePool_{"state"}, ioPool_{"io"},
      hostStatePool_{"host state"}, hostArenaPool_{"host arena"},
      nvmeLoadPool_{"NVMe state being loaded"};
  // Destroyed after the context and the streams that use it (declared
  // before them), which removes the rank's file.
  std::unique_ptr<NvmeStore> nvme_;
  size_t nvmeBytes_ = 0;
  /// A teacher's NVMe states are in the file: loaded, not yet released.
  bool teacherHeld_ = false;
  void *hostArena_ = nullptr;
  int rank_ = 0;
  std::vector<void *> states_, inputs_, outputs_;
  void *arena_ = nullptr;
  // Streams are drained before the communicators their tasks use go: the
  // job's, and the groups' that the context holds.
  std::unique_ptr<MpiCommunicator> comm_;
  std::unique_ptr<RunStepContext> context_;
  std::vector<std::unique_ptr<Stream>> streams_;
  int32_t collectiveStream_ = -1;
  bool collectivesOnThread_ = false;
  int32_t expertParallelSize_ = 1;
  int32_t tensorParallelSize_ = 1;
  int32_t pipelineParallelSize_ = 1;
};

std::unique_ptr<RunTarget> makeCpuRunTarget() {
  return std::make_unique<CpuRunTarget>();
}

struct Registry {
  std::mutex mutex;
  std::map<std::string, RunTargetFactory> factories{{"cpu", &makeCpuRunTarget}};
};

// Built on first use: CudaRun.cpp registers during static initialization,
// in whatever order the objects' initializers run.
Registry &registry() {
  static Registry instance;
  return instance;
}

} // namespace

RunTarget::~RunTarget() = default;

std::unique_ptr<NvmeStore> makeNvmeStore(const ArtifactInfo &info,
                                         const std::string &path, int rank) {
  bool nvme = false;
  for (int32_t i = 0; i < info.numStates; ++i)
    nvme |= info.states[i].tier == MemoryTier::Nvme;
  if (!nvme)
    return nullptr;
  check(!path.empty(),
        std::string("the artifact keeps state on NVMe "
                    "(ZeRO-Infinity): give dsc-run --nvme-path DIR, or "
                    "compile with --nvme-path (nvme_path)"));
  NvmeOptions options;
  options.path = path;
  options.rank = rank;
  auto store = std::make_unique<NvmeStore>(options);
  for (int32_t i = 0; i < info.numStates; ++i)
    if (info.states[i].tier == MemoryTier::Nvme)
      store->addState(NvmeStore::StateId(i), tensorBytes(info.states[i].tensor));
  return store;
}

void registerRunTarget(const std::string &target, RunTargetFactory factory) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.factories[target] = factory;
}

bool haveRunTarget(const std::string &target) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.factories.count(target) != 0;
}

std::unique_ptr<RunTarget> makeRunTarget(const std::string &target) {
  RunTargetFactory factory = nullptr;
  {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto found = r.factories.find(target);
    check(found != r.factories.end(),
          "no RunTarget for artifacts of target '" + target + "'");
    factory = found->second;
  }
  return factory();
}

} // namespace dsc::rt
