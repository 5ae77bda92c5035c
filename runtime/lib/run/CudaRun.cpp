//===- CudaRun.cpp - dsc-run's CUDA target --------------------------------===//
//
// A CUDA artifact (ArtifactInfo::target "cuda", from dsc-compile
// --target=cuda) gets device memory for everything StepContext hands out:
// state, inputs, outputs, arena. It uploads its own constants, copies its
// outputs device to device into output(i), synchronizes the device at the
// end of its step and throws on CUDA errors; allReduceSum gets device
// buffers. This target, compiled only with the CUDA backend (dsc_run_cuda,
// linked whole into dsc-run: it registers itself at start-up):
//
//   - selects this rank's GPU by local rank (Device::select) before anything
//     is read, so that a machine without one fails at once, with one line;
//   - keeps state, inputs and outputs, and the arena in CudaMemoryPools of
//     device memory ("state", "io", "arena"), and stages through pinned host
//     memory ("staging"): each state tensor is read into a pinned buffer of
//     the largest tensor's size and copied to the GPU, the batch is cut on
//     the host and copied to the device inputs before each step, the
//     outputs are copied back after it;
//   - sums over NCCL (NcclCommunicator). The artifact's kernels run on the
//     legacy default stream and the communicator on its own non-blocking
//     stream, so before each collective an event recorded on the former is
//     made a dependency of the latter: the collective reads what the kernels
//     wrote, and a kernel that never finishes is a collective that times
//     out under the watchdog rather than a silent hang.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/ArtifactLibrary.h"
#include "dsc/runtime/Checkpoint.h"
#include "dsc/runtime/CudaDevice.h"
#include "dsc/runtime/CudaMemoryPool.h"
#include "dsc/runtime/MemoryPool.h"
#include "dsc/runtime/Run.h"
#include "dsc/runtime/SafeTensors.h"
#ifdef DSC_HAVE_NCCL
#include "dsc/runtime/NcclComm.h"
#endif

#include <cuda_runtime_api.h>

#include <algorithm>
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

class CudaRunTarget final : public RunTarget {
public:
  ~CudaRunTarget() override {
    if (ready_)
      (void)cudaEventDestroy(ready_);
  }

  void prepare(int rank) override {
    requireNccl();
    cuda::Device::select(rank);
    // Device pools allocate on the device current when they are built.
    arenaPool_ = std::make_unique<CudaMemoryPool>("arena", MemoryKind::Device);
    statePool_ = std::make_unique<CudaMemoryPool>("state", MemoryKind::Device);
    ioPool_ = std::make_unique<CudaMemoryPool>("io", MemoryKind::Device);
    stagingPool_ =
        std::make_unique<CudaMemoryPool>("staging", MemoryKind::PinnedHost);
  }

  void allocate(const ArtifactInfo &info) override {
    for (int32_t i = 0; i < info.numInputs; ++i)
      inputs_.push_back(makeBuffer(info.inputs[i]));
    for (int32_t i = 0; i < info.numOutputs; ++i)
      outputs_.push_back(makeBuffer(info.outputs[i]));
    arena_ = arenaPool_->allocate(static_cast<size_t>(info.arenaBytes));
  }

  void loadStates(const ArtifactInfo &info,
                  const SafeTensorsFile &weights) override {
    size_t largest = 0;
    for (int32_t i = 0; i < info.numStates; ++i)
      largest = std::max(largest, tensorBytes(info.states[i].tensor));
    Staging staging(*stagingPool_, largest);
    forEachState(info, weights,
                 [&](int32_t, const std::string &name, size_t bytes,
                     bool present) {
                   void *device = statePool_->allocate(bytes);
                   states_.push_back(device);
                   if (!present) { // optimizer state: starts at zero
                     checkCuda(cudaMemset(device, 0, bytes),
                               "zeroing state '" + name + "' on the GPU");
                     return;
                   }
                   weights.read(name, staging.buffer, bytes);
                   copy(device, staging.buffer, bytes, cudaMemcpyHostToDevice,
                        "state '" + name + "' to the GPU");
                 });
  }

  void loadStates(const ArtifactInfo &info,
                  const Checkpoint &checkpoint) override {
    // The checkpoint is read and verified (checksums) in host memory, all
    // of it at once, then copied up tensor by tensor.
    MemoryPool host("checkpoint");
    std::vector<void *> loaded = checkpoint.loadStates(info, host);
    for (int32_t i = 0; i < info.numStates; ++i) {
      const TensorDesc &state = info.states[i].tensor;
      size_t bytes = tensorBytes(state);
      void *device = statePool_->allocate(bytes);
      states_.push_back(device);
      copy(device, loaded[size_t(i)], bytes, cudaMemcpyHostToDevice,
           std::string("state '") + state.name + "' to the GPU");
      host.release(loaded[size_t(i)]);
    }
  }

  RunStepContext &connect() override {
    connectNccl();
    checkCuda(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming),
              "cudaEventCreateWithFlags");
    context_ = std::make_unique<RunStepContext>(
        states_, devicePointers(inputs_), devicePointers(outputs_), arena_,
        *comm_, [this] { orderBeforeCollective(); });
    return *context_;
  }

  void *hostInput(int32_t i) override { return inputs_.at(size_t(i)).host; }
  const void *hostOutput(int32_t i) override {
    return outputs_.at(size_t(i)).host;
  }

  void beforeStep() override {
    for (const Buffer &input : inputs_)
      copy(input.device, input.host, input.bytes, cudaMemcpyHostToDevice,
           "input '" + input.name + "' to the GPU");
  }

  void afterStep() override {
    for (const Buffer &output : outputs_)
      copy(output.host, output.device, output.bytes, cudaMemcpyDeviceToHost,
           "output '" + output.name + "' from the GPU");
  }

  std::vector<void *> hostStates(const ArtifactInfo &info, int rank,
                                 int worldSize, MemoryPool &scratch) override {
    std::vector<void *> host(states_.size(), nullptr);
    for (int32_t i = 0; i < info.numStates; ++i) {
      if (checkpointWriter(i, worldSize) != rank)
        continue;
      const TensorDesc &state = info.states[i].tensor;
      size_t bytes = tensorBytes(state);
      host[size_t(i)] = scratch.allocate(bytes);
      copy(host[size_t(i)], states_[size_t(i)], bytes, cudaMemcpyDeviceToHost,
           std::string("state '") + state.name + "' from the GPU");
    }
    return host;
  }

  MemoryUse memoryUse() const override {
    MemoryUse use;
    use.where = "device";
    if (!arenaPool_)
      return use;
    use.arena = arenaPool_->highWaterMark();
    use.state = statePool_->highWaterMark();
    use.io = ioPool_->highWaterMark();
    use.pinnedHost = stagingPool_->highWaterMark();
    return use;
  }

private:
  /// An input or output: device memory, and its pinned host copy.
  struct Buffer {
    std::string name;
    size_t bytes = 0;
    void *device = nullptr;
    void *host = nullptr;
  };

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

  Buffer makeBuffer(const TensorDesc &tensor) {
    Buffer buffer;
    buffer.name = tensor.name;
    buffer.bytes = tensorBytes(tensor);
    buffer.device = ioPool_->allocate(buffer.bytes);
    buffer.host = stagingPool_->allocate(buffer.bytes);
    return buffer;
  }

  static std::vector<void *> devicePointers(const std::vector<Buffer> &list) {
    std::vector<void *> pointers;
    for (const Buffer &buffer : list)
      pointers.push_back(buffer.device);
    return pointers;
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
    auto nccl = std::make_unique<NcclCommunicator>();
    commStream_ = nccl->stream();
    comm_ = std::move(nccl);
#endif
  }

  void orderBeforeCollective() {
    checkCuda(cudaEventRecord(ready_, cudaStreamLegacy),
              "cudaEventRecord after the step's kernels");
    checkCuda(cudaStreamWaitEvent(commStream_, ready_, 0),
              "cudaStreamWaitEvent of the communicator's stream");
  }

  std::unique_ptr<CudaMemoryPool> arenaPool_, statePool_, ioPool_, stagingPool_;
  std::vector<void *> states_;
  std::vector<Buffer> inputs_, outputs_;
  void *arena_ = nullptr;
  std::unique_ptr<Communicator> comm_;
  cudaStream_t commStream_ = nullptr;
  cudaEvent_t ready_ = nullptr;
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
