//===- CudaRun.cpp - dsc-run's CUDA target --------------------------------===//
//
// A CUDA artifact (ArtifactInfo::target "cuda", from dsc-compile
// --target=cuda) gets device memory for its state and arena, pinned host
// memory for its inputs and outputs, and CudaStreams for its streams. It
// uploads its own constants, copies its inputs and outputs between host and
// device on its streams (cudaMemcpyAsync), orders its collectives with
// events, synchronizes its streams at the end of its step and throws on CUDA
// errors; allReduceSum gets device buffers. This target, compiled only with
// the CUDA backend (dsc_run_cuda, linked whole into dsc-run: it registers
// itself at start-up):
//
//   - selects this rank's GPU by local rank (Device::select) before anything
//     is read, so that a machine without one fails at once, with one line;
//   - keeps state and the arena in CudaMemoryPools of device memory
//     ("state", "arena"), inputs and outputs in pinned host memory ("io"),
//     and stages state through pinned host memory ("staging"): each state
//     tensor is read into a pinned buffer of the largest tensor's size and
//     copied to the GPU;
//   - ZeRO-Offload: keeps the states on the host and the host arena in
//     pinned host memory ("host state", "host arena": cudaHostAlloc), so
//     that the artifact's copies between them and the GPU (cudaMemcpyAsync
//     on its copy streams) are asynchronous, and its host kernels (the
//     update, host tasks of its "host" stream) read and write them in
//     place; ZeRO-Infinity: creates the rank's NVMe store (makeNvmeStore)
//     and writes the NVMe states into it as it loads them, through the
//     pinned staging buffer, one state at a time;
//   - creates the artifact's streams (CudaStream) and sums over NCCL
//     (NcclCommunicator) on the artifact's collectives stream. The order of
//     kernels and collectives is the artifact's: its events make the
//     collectives stream wait for the kernels that wrote a collective's
//     buffer, so a kernel that never finishes is a collective that times out
//     under the watchdog rather than a silent hang.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/ArtifactLibrary.h"
#include "dsc/runtime/Checkpoint.h"
#include "dsc/runtime/CudaDevice.h"
#include "dsc/runtime/CudaMemoryPool.h"
#include "dsc/runtime/CudaStream.h"
#include "dsc/runtime/MemoryPool.h"
#include "dsc/runtime/NvmeStore.h"
#include "dsc/runtime/Run.h"
#include "dsc/runtime/SafeTensors.h"
#ifdef DSC_HAVE_NCCL
#include "dsc/runtime/NcclComm.h"
#endif

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace dsc::rt {

namespace {

using cuda::checkCuda;
using cuda::CudaMemoryPool;
using cuda::MemoryKind;

#ifdef DSC_HAVE_NCCL
constexpr bool kHaveNccl = true;
#else
constexpr bool kHaveNccl = false;
#endif

void requireNccl() {
  check(kHaveNccl, "this dsc-run was built without NCCL, which CUDA "
                   "artifacts need for their collectives (docs/cuda.md, "
                   "Building)");
}

/// The staging a state needs at most on its way to the GPU.
size_t largestStateBytes(const ArtifactInfo &info) {
  size_t largest = 0;
  for (int32_t i = 0; i < info.numStates; ++i)
    largest = std::max(largest, tensorBytes(info.states[i].tensor));
  return largest;
}

class CudaRunTarget final : public RunTarget {
public:
  void prepare(int rank) override {
    rank_ = rank;
    requireNccl();
    cuda::Device::select(rank);
    // Device pools allocate on the device current when they are built.
    arenaPool_ = std::make_unique<CudaMemoryPool>("arena", MemoryKind::Device);
    statePool_ = std::make_unique<CudaMemoryPool>("state", MemoryKind::Device);
    ioPool_ = std::make_unique<CudaMemoryPool>("io", MemoryKind::PinnedHost);
    stagingPool_ =
        std::make_unique<CudaMemoryPool>("staging", MemoryKind::PinnedHost);
    hostStatePool_ =
        std::make_unique<CudaMemoryPool>("host state", MemoryKind::PinnedHost);
    hostArenaPool_ =
        std::make_unique<CudaMemoryPool>("host arena", MemoryKind::PinnedHost);
  }

  void allocate(const ArtifactInfo &info) override {
    expertParallelSize_ = info.expertParallelSize;
    tensorParallelSize_ = tensorParallelSize(info);
    pipelineParallelSize_ = pipelineParallelSize(info);
    for (int32_t i = 0; i < info.numInputs; ++i)
      inputs_.push_back(ioPool_->allocate(tensorBytes(info.inputs[i])));
    for (int32_t i = 0; i < info.numOutputs; ++i)
      outputs_.push_back(ioPool_->allocate(tensorBytes(info.outputs[i])));
    arena_ = arenaPool_->allocate(static_cast<size_t>(info.arenaBytes));
    hostArena_ =
        hostArenaPool_->allocate(static_cast<size_t>(info.hostArenaBytes));
    nvme_ = makeNvmeStore(info, nvmePath_, rank_);
    for (int32_t i = 0; i < info.numStreams; ++i) {
      streams_.push_back(
          std::make_unique<cuda::CudaStream>(info.streams[i].name));
      if (info.streams[i].collectives)
        collectiveStream_ = i;
    }
  }

  void loadStates(const ArtifactInfo &info,
                  const SafeTensorsFile &weights) override {
    Staging staging(*stagingPool_, largestStateBytes(info));
    forEachState(info, weights,
                 [&](int32_t i, const std::string &name, size_t bytes,
                     bool present) {
                   // loadTeacherStates allocates a teacher's, when it runs.
                   if (info.states[i].role == StateRole::Teacher) {
                     states_.push_back(nullptr);
                     return;
                   }
                   MemoryTier tier = info.states[i].tier;
                   // Host states are read in place; device and NVMe
                   // states through the staging buffer.
                   void *read = tier == MemoryTier::Host
                                    ? hostStatePool_->allocate(bytes)
                                    : staging.buffer;
                   if (present)
                     readState(info.states[i], weights,
                               stageLocalRank(info, rank_),
                               info.expertParallelSize, read,
                               tensorParallelSize(info));
                   else // optimizer state: starts at zero
                     std::memset(read, 0, bytes);
                   place(i, tier, read, bytes, name);
                 });
  }

  void loadTeacherStates(const ArtifactInfo &info,
                         const SafeTensorsFile &teacher) override {
    Staging staging(*stagingPool_, largestStateBytes(info));
    forEachTeacherState(info, teacher, [&](int32_t i, const StateDesc &own) {
      // With parameter offload a teacher's partitions are on the host.
      if (own.tier == MemoryTier::Host) {
        states_[size_t(i)] = hostStatePool_->allocate(tensorBytes(own.tensor));
        readState(own, teacher, stageLocalRank(info, rank_), info.expertParallelSize,
                  states_[size_t(i)]);
        return;
      }
      readState(own, teacher, stageLocalRank(info, rank_), info.expertParallelSize, staging.buffer);
      states_[size_t(i)] = statePool_->allocate(tensorBytes(own.tensor));
      copy(states_[size_t(i)], staging.buffer, tensorBytes(own.tensor),
           cudaMemcpyHostToDevice,
           std::string("teacher state '") + own.tensor.name + "' to the GPU");
    });
  }

  void loadStates(const ArtifactInfo &info,
                  const Checkpoint &checkpoint) override {
    // The checkpoint is read and verified (checksums) in host memory, all
    // of it at once, then copied up tensor by tensor.
    MemoryPool host("checkpoint");
    std::vector<void *> loaded = checkpoint.loadStates(info, host, rank_);
    for (int32_t i = 0; i < info.numStates; ++i) {
      const TensorDesc &state = info.states[i].tensor;
      size_t bytes = tensorBytes(state);
      if (!loaded[size_t(i)]) { // a teacher's: loadTeacherStates
        states_.push_back(nullptr);
        continue;
      }
      MemoryTier tier = info.states[size_t(i)].tier;
      if (tier == MemoryTier::Host) {
        void *pinned = hostStatePool_->allocate(bytes);
        std::memcpy(pinned, loaded[size_t(i)], bytes);
        place(i, tier, pinned, bytes, state.name);
      } else {
        place(i, tier, loaded[size_t(i)], bytes, state.name);
      }
      host.release(loaded[size_t(i)]);
    }
  }

  RunStepContext &connect() override {
    connectNccl();
    std::vector<Stream *> streams;
    for (auto &stream : streams_)
      streams.push_back(stream.get());
    // A collective over a group of one rank moves its block within the
    // GPU, in order on the collectives stream.
    auto localCopy = [](void *dst, const void *src, size_t bytes,
                        Stream &stream) {
      checkCuda(
          cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                          static_cast<cuda::CudaStream &>(stream).handle()),
          "a collective over a group of one rank: cudaMemcpyAsync");
    };
    // Collective over the job when the groups need communicators of their
    // own (ncclCommSplit of the job's).
    context_ = std::make_unique<RunStepContext>(
        states_, inputs_, outputs_, arena_, *comm_, streams, collectiveStream_,
        expertParallelSize_, localCopy, tensorParallelSize_,
        pipelineParallelSize_);
    context_->setHostArena(hostArena_);
    context_->setNvmeStore(nvme_.get());
    return *context_;
  }

  void *hostInput(int32_t i) override { return inputs_.at(size_t(i)); }
  const void *hostOutput(int32_t i) override { return outputs_.at(size_t(i)); }

  std::vector<void *> hostStates(const ArtifactInfo &info, int rank,
                                 int worldSize, MemoryPool &scratch) override {
    std::vector<void *> host(states_.size(), nullptr);
    for (int32_t i = 0; i < info.numStates; ++i) {
      if (!checkpointWritesInStage(info, i, rank, worldSize))
        continue;
      const TensorDesc &state = info.states[i].tensor;
      size_t bytes = tensorBytes(state);
      // Every step synchronized its streams before it returned: the host
      // states are final, and the NVMe states written back.
      if (info.states[i].tier == MemoryTier::Host) {
        host[size_t(i)] = states_[size_t(i)];
        continue;
      }
      host[size_t(i)] = scratch.allocate(bytes);
      if (info.states[i].tier == MemoryTier::Nvme) {
        nvme_->wait(nvme_->read(NvmeStore::StateId(i), 0, host[size_t(i)], bytes));
        continue;
      }
      copy(host[size_t(i)], states_[size_t(i)], bytes, cudaMemcpyDeviceToHost,
           std::string("state '") + state.name + "' from the GPU");
    }
    return host;
  }

  const void *hostState(const ArtifactInfo &info, int32_t i,
                        MemoryPool &scratch) override {
    const void *state = states_.at(size_t(i));
    if (!state)
      return nullptr;
    const TensorDesc &tensor = info.states[i].tensor;
    size_t bytes = tensorBytes(tensor);
    void *host = scratch.allocate(bytes);
    copy(host, state, bytes, cudaMemcpyDefault,
         std::string("state '") + tensor.name + "' to the host");
    return host;
  }

  MemoryUse releaseTeacher(const ArtifactInfo &info,
                           size_t arenaBytes) override {
    // Every stream's work that may read them is done.
    checkCuda(cudaDeviceSynchronize(), "waiting for the steps with the teacher");
    MemoryUse released;
    released.where = "device";
    const size_t state = statePool_->bytesInUse(), arena = arenaPool_->bytesInUse(),
                 hostState = hostStatePool_->bytesInUse();
    for (int32_t i = 0; i < info.numStates; ++i) {
      void *&buffer = states_[size_t(i)];
      if (info.states[i].role != StateRole::Teacher || !buffer)
        continue;
      (info.states[i].tier == MemoryTier::Host ? *hostStatePool_ : *statePool_)
          .release(buffer);
      buffer = nullptr;
      context_->setState(i, nullptr);
    }
    if (arenaBytes < static_cast<size_t>(info.arenaBytes)) {
      arenaPool_->release(arena_);
      arena_ = arenaPool_->allocate(arenaBytes);
      context_->setArena(arena_);
    }
    released.state = state - statePool_->bytesInUse();
    released.arena = arena - arenaPool_->bytesInUse();
    released.hostState = hostState - hostStatePool_->bytesInUse();
    for (CudaMemoryPool *pool :
         {arenaPool_.get(), statePool_.get(), ioPool_.get(), stagingPool_.get(),
          hostStatePool_.get(), hostArenaPool_.get()})
      pool->resetHighWaterMark();
    return released;
  }

  MemoryUse memoryUse() const override {
    MemoryUse use;
    use.where = "device";
    if (!arenaPool_)
      return use;
    use.arena = arenaPool_->highWaterMark();
    use.state = statePool_->highWaterMark();
    // Inputs and outputs are pinned host memory: no device io.
    use.pinnedHost = stagingPool_->highWaterMark() + ioPool_->highWaterMark();
    // ZeRO-Offload's pinned pools, reported as on the CPU target.
    use.hostState = hostStatePool_->highWaterMark();
    use.hostArena = hostArenaPool_->highWaterMark();
    if (nvme_)
      use.nvmeState = nvmeBytes_;
    return use;
  }

private:
  /// A pinned staging buffer, released when the scope ends.
  struct Staging {
    Staging(CudaMemoryPool &pool, size_t bytes)
        : pool(pool), buffer(pool.allocate(bytes)) {}
    ~Staging() {
      try {
        pool.release(buffer);
      } catch (...) {
        // Released once, from the pool that made it: cannot fail.
      }
    }
    Staging(const Staging &) = delete;
    Staging &operator=(const Staging &) = delete;
    CudaMemoryPool &pool;
    void *buffer;
  };

  /// Makes `bytes` at `buffer` (host memory: a host state's own, or a
  /// buffer the caller keeps) state `i` where its tier says: a host state
  /// is `buffer` itself, a device state a copy of it in GPU memory, an NVMe
  /// state a write of it into the rank's file (the state then has no
  /// buffer: the artifact's host buffers hold it during the steps).
  void place(int32_t i, MemoryTier tier, void *buffer, size_t bytes,
             const std::string &name) {
    if (tier == MemoryTier::Host) {
      states_.push_back(buffer);
      return;
    }
    if (tier == MemoryTier::Nvme) {
      nvme_->wait(nvme_->write(NvmeStore::StateId(i), 0, buffer, bytes));
      nvmeBytes_ += bytes;
      states_.push_back(nullptr);
      return;
    }
    void *device = statePool_->allocate(bytes);
    states_.push_back(device);
    copy(device, buffer, bytes, cudaMemcpyHostToDevice,
         "state '" + name + "' to the GPU");
  }

  /// A synchronous copy on the legacy default stream (after the work queued
  /// there, before the work queued after it).
  static void copy(void *to, const void *from, size_t bytes,
                   cudaMemcpyKind kind, const std::string &what) {
    checkCuda(cudaMemcpy(to, from, bytes, kind), "copying " + what);
  }

  void connectNccl() {
    requireNccl();
#ifdef DSC_HAVE_NCCL
    // Bound to the artifact's collectives stream (its own without one).
    cudaStream_t stream =
        collectiveStream_ >= 0
            ? static_cast<cuda::CudaStream &>(*streams_[size_t(collectiveStream_)])
                  .handle()
            : nullptr;
    comm_ = std::make_unique<NcclCommunicator>(MPI_COMM_WORLD, stream);
#endif
  }

  std::unique_ptr<CudaMemoryPool> arenaPool_, statePool_, ioPool_, stagingPool_,
      hostStatePool_, hostArenaPool_;
  // Destroyed after the streams whose tasks use it (declared before them),
  // which removes the rank's file.
  std::unique_ptr<NvmeStore> nvme_;
  size_t nvmeBytes_ = 0;
  void *hostArena_ = nullptr;
  int rank_ = 0;
  std::vector<void *> states_;
  std::vector<void *> inputs_, outputs_;
  void *arena_ = nullptr;
  // The communicator, bound to a stream, goes before the streams.
  std::vector<std::unique_ptr<Stream>> streams_;
  int32_t collectiveStream_ = -1;
  int32_t expertParallelSize_ = 1;
  int32_t tensorParallelSize_ = 1;
  int32_t pipelineParallelSize_ = 1;
  // The groups' communicators (in the context) share the job's stream:
  // they go first.
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<RunStepContext> context_;
};

std::unique_ptr<RunTarget> makeCudaRunTarget() {
  return std::make_unique<CudaRunTarget>();
}

/// Registers the target when dsc-run starts (before main).
struct Registration {
  Registration() { registerRunTarget("cuda", &makeCudaRunTarget); }
} registration;

} // namespace

} // namespace dsc::rt
