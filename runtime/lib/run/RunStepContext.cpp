//===- RunStepContext.cpp - what generated code calls during a step -------===//

#include "dsc/runtime/Comm.h"
#include "dsc/runtime/Run.h"

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
  case ElementType::F16:
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
                               std::function<void()> beforeCollective)
    : states_(std::move(states)), inputs_(std::move(inputs)),
      outputs_(std::move(outputs)), arena_(arena), comm_(comm),
      beforeCollective_(std::move(beforeCollective)) {}

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

void RunStepContext::allReduceSum(void *buffer, size_t count, ElementType type,
                                  int64_t sequence) {
  std::string where = "step " + std::to_string(step_) + ", collective " +
                      std::to_string(sequence) + " (allReduceSum of " +
                      std::to_string(count) + " " + elementTypeName(type) +
                      ")";
  check(collectivesThisStep_ == 0 ? sequence >= 0 : sequence > lastSequence_,
        where + ": sequence numbers must grow within a step; the previous "
                "collective of this step was " +
            std::to_string(lastSequence_));
  ++collectivesThisStep_;
  lastSequence_ = sequence;
  try {
    CommDType dtype = commType(type);
    if (beforeCollective_)
      beforeCollective_();
    comm_.allReduce(buffer, buffer, count, dtype, ReduceOp::Sum);
  } catch (const Error &error) {
    throw Error(where + ": " + error.what());
  }
}

int32_t RunStepContext::rank() const { return comm_.rank(); }
int32_t RunStepContext::worldSize() const { return comm_.size(); }

} // namespace dsc::rt
