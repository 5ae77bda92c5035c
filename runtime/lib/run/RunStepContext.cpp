//===- RunStepContext.cpp - what generated code calls during a step -------===//

#include "dsc/runtime/Comm.h"
#include "dsc/runtime/Run.h"
#include "dsc/runtime/Stream.h"

#include <cstring>

namespace dsc::rt {

namespace {

/// The communicator's type for `type`; Error for those MPI cannot reduce.
CommDType commType(ElementType type) {
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
  throw Error(std::string("the communicator cannot sum ") +
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
                               int32_t collectiveStream)
    : states_(std::move(states)), inputs_(std::move(inputs)),
      outputs_(std::move(outputs)), arena_(arena), comm_(comm),
      streams_(std::move(streams)), collectiveStream_(collectiveStream) {}

void RunStepContext::beginStep(int64_t step) {
  step_ = step;
  collectivesThisStep_ = 0;
  lastSequence_ = 0;
}

void *RunStepContext::state(int32_t i) { return at(states_, i, "state"); }
void *RunStepContext::output(int32_t i) { return at(outputs_, i, "output"); }
const void *RunStepContext::input(int32_t i) {
  return at(inputs_, i, "input");
}
Stream &RunStepContext::stream(int32_t i) { return *at(streams_, i, "stream"); }

void RunStepContext::issue(const std::string &what, size_t count,
                           ElementType type, int64_t sequence, Stream &stream,
                           const std::function<void(CommDType)> &collective) {
  std::string where = "step " + std::to_string(step_) + ", collective " +
                      std::to_string(sequence) + " (" + what + " of " +
                      std::to_string(count) + " " + elementTypeName(type) +
                      ")";
  check(collectivesThisStep_ == 0 ? sequence >= 0 : sequence > lastSequence_,
        where + ": sequence numbers must grow within a step; the previous "
                "collective of this step was " +
            std::to_string(lastSequence_));
  ++collectivesThisStep_;
  lastSequence_ = sequence;
  auto run = [collective, where](CommDType dtype) {
    try {
      collective(dtype);
    } catch (const Error &error) {
      throw Error(where + ": " + error.what());
    }
  };
  CommDType dtype;
  try {
    dtype = commType(type);
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
  // A host task of a CUDA stream must make no CUDA call (Stream.h): NCCL
  // enqueues on the stream itself.
  if (std::strcmp(stream.backend(), "cpu") == 0)
    stream.enqueue([run, dtype] { run(dtype); },
                   what + ", collective " + std::to_string(sequence));
  else
    run(dtype);
}

void RunStepContext::allReduceSum(void *buffer, size_t count, ElementType type,
                                  int64_t sequence, Stream &stream) {
  issue("allReduceSum", count, type, sequence, stream,
        [this, buffer, count](CommDType dtype) {
          comm_.allReduce(buffer, buffer, count, dtype, ReduceOp::Sum);
        });
}

void RunStepContext::allGather(const void *send, void *recv, size_t count,
                               ElementType type, int64_t sequence,
                               Stream &stream) {
  issue("allGather", count, type, sequence, stream,
        [this, send, recv, count](CommDType dtype) {
          comm_.allGather(send, recv, count, dtype);
        });
}

void RunStepContext::reduceScatterSum(const void *send, void *recv,
                                      size_t count, ElementType type,
                                      int64_t sequence, Stream &stream) {
  issue("reduceScatterSum", count, type, sequence, stream,
        [this, send, recv, count](CommDType dtype) {
          comm_.reduceScatter(send, recv, count, dtype, ReduceOp::Sum);
        });
}

int32_t RunStepContext::rank() const { return comm_.rank(); }
int32_t RunStepContext::worldSize() const { return comm_.size(); }

} // namespace dsc::rt
