//===- VerifyStep.cpp - --dscrt-verify-step --------------------------------===//
//
// What the lowering guarantees of a step and the emitter and memory plan
// take for granted, checked on the step itself: each stream runs in order,
// and work on one stream that uses a buffer another stream wrote (or reads)
// must be ordered after that work by a dscrt.record/dscrt.wait chain or a
// dscrt.synchronize. A step that breaks this computes garbage on a GPU only,
// at random; here it is a located error.
//
// The order is tracked with vector clocks: for each stream, how much of
// every stream's work its next launch is ordered after.
//
//===----------------------------------------------------------------------===//

#include "dsc/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_VERIFYSTEP
#include "dsc/Conversion/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dscrt;

namespace {
/// For each stream, the number of its launches something is ordered after.
using Clock = SmallVector<int64_t>;

static void join(Clock &into, const Clock &other) {
  for (auto [a, b] : llvm::zip(into, other))
    a = std::max(a, b);
}

/// One launch: the `n`th (from 1) on stream `stream`.
struct Launch {
  Operation *op = nullptr;
  unsigned stream = 0;
  int64_t n = 0;
};

/// What has touched one buffer's memory since it was last written.
struct MemoryState {
  std::optional<Launch> write;
  SmallVector<Launch> reads;
  /// Holds a value before the step runs (a state, an input, a constant).
  bool filled = false;
};

struct StepChecker {
  func::FuncOp step;
  DenseMap<Value, unsigned> streamIndex;
  SmallVector<StreamOp> streams;
  SmallVector<Clock> clocks; // per stream: what its next launch follows
  SmallVector<int64_t> launched;
  Clock host; // what the host has synchronized with
  DenseMap<Value, Clock> events;
  DenseMap<int64_t, Value> stateMemory; // a state's index -> its first op
  DenseMap<Value, MemoryState> memory;

  explicit StepChecker(func::FuncOp step) : step(step) {}

  /// The value naming `buffer`'s memory: views see their source's, and
  /// every dscrt.state op of one index the same state.
  Value memoryOf(Value buffer) {
    while (auto view = buffer.getDefiningOp<ViewOp>())
      buffer = view.getSource();
    if (auto state = buffer.getDefiningOp<StateOp>())
      return stateMemory.try_emplace(state.getIndex(), buffer).first->second;
    return buffer;
  }

  MemoryState &stateOf(Value buffer) {
    Value root = memoryOf(buffer);
    auto [it, inserted] = memory.try_emplace(root);
    if (inserted)
      it->second.filled =
          root.getDefiningOp<StateOp>() || root.getDefiningOp<InputOp>() ||
          root.getDefiningOp<StepKeyOp>() || root.getDefiningOp<ConstantOp>();
    return it->second;
  }

  bool ordered(const Launch &before, const Launch &after) const {
    return before.stream == after.stream ||
           clocks[after.stream][before.stream] >= before.n;
  }

  std::string streamName(unsigned stream) const {
    return "'" + StreamOp(streams[stream]).getName().str() + "'";
  }

  LogicalResult unordered(const Launch &later, const Launch &earlier,
                          StringRef what, Value buffer) {
    InFlightDiagnostic diag = later.op->emitOpError()
                              << "on stream " << streamName(later.stream)
                              << " " << what << " on stream "
                              << streamName(earlier.stream)
                              << " without waiting for it (a dscrt.wait for "
                                 "an event recorded after it)";
    diag.attachNote(earlier.op->getLoc()) << "the unordered access";
    if (Operation *def = memoryOf(buffer).getDefiningOp())
      diag.attachNote(def->getLoc()) << "the buffer";
    return diag;
  }

  /// `launch` reads `buffer`.
  LogicalResult read(const Launch &launch, Value buffer) {
    MemoryState &state = stateOf(buffer);
    if (!state.write && !state.filled)
      return launch.op->emitOpError()
             << "reads a buffer that nothing has written";
    if (state.write && !ordered(*state.write, launch))
      return unordered(launch, *state.write, "reads a buffer written", buffer);
    state.reads.push_back(launch);
    return success();
  }

  /// `launch` writes `buffer`.
  LogicalResult write(const Launch &launch, Value buffer) {
    MemoryState &state = stateOf(buffer);
    if (state.write && !ordered(*state.write, launch))
      return unordered(launch, *state.write,
                       "overwrites a buffer written", buffer);
    for (const Launch &reader : state.reads)
      if (reader.op != launch.op && !ordered(reader, launch))
        return unordered(launch, reader, "overwrites a buffer read", buffer);
    state.write = launch;
    state.reads.clear();
    return success();
  }

  /// The buffers `op` reads and writes, on `stream`; false for an op that
  /// launches no work.
  static bool accesses(Operation *op, Value &stream, SmallVector<Value> &reads,
                       SmallVector<Value> &writes) {
    auto user = dyn_cast<StreamUserOpInterface>(op);
    if (!user)
      return false;
    stream = user.getStream();
    user.getBufferAccesses(reads, writes);
    return true;
  }

  std::optional<unsigned> indexOf(Operation *op, Value stream) {
    auto it = streamIndex.find(stream);
    if (it != streamIndex.end())
      return it->second;
    op->emitOpError() << "runs on a stream that is not a dscrt.stream of "
                         "this function";
    return std::nullopt;
  }

  LogicalResult run() {
    Block &body = step.getBody().front();
    for (auto stream : body.getOps<StreamOp>()) {
      streamIndex[stream.getResult()] = streams.size();
      streams.push_back(stream);
    }
    clocks.assign(streams.size(), Clock(streams.size(), 0));
    launched.assign(streams.size(), 0);
    host.assign(streams.size(), 0);
    auto now = [&](unsigned s) {
      Clock clock = clocks[s];
      clock[s] = launched[s];
      return clock;
    };
    for (Operation &op : body) {
      if (auto alloc = dyn_cast<AllocOp>(op)) {
        if (alloc->use_empty())
          return alloc.emitOpError() << "allocates a buffer nothing uses";
        continue;
      }
      if (auto record = dyn_cast<RecordOp>(op)) {
        std::optional<unsigned> s = indexOf(&op, record.getStream());
        if (!s)
          return failure();
        events[record.getEvent()] = now(*s);
        continue;
      }
      if (auto wait = dyn_cast<WaitOp>(op)) {
        std::optional<unsigned> s = indexOf(&op, wait.getStream());
        auto event = events.find(wait.getEvent());
        if (!s)
          return failure();
        if (event == events.end())
          return wait.emitOpError()
                 << "waits for an event not recorded earlier in the step";
        join(clocks[*s], event->second);
        continue;
      }
      if (auto sync = dyn_cast<SynchronizeOp>(op)) {
        std::optional<unsigned> s = indexOf(&op, sync.getStream());
        if (!s)
          return failure();
        join(host, now(*s));
        continue;
      }
      if (isa<func::ReturnOp>(op)) {
        // The runtime reads the outputs once the step returns.
        for (auto [s, stream] : llvm::enumerate(streams))
          if (host[s] < launched[s])
            return op.emitOpError()
                   << "returns before synchronizing stream "
                   << streamName(s) << ", which has work pending";
        continue;
      }
      Value stream;
      SmallVector<Value> reads, writes;
      if (!accesses(&op, stream, reads, writes))
        continue;
      std::optional<unsigned> s = indexOf(&op, stream);
      if (!s)
        return failure();
      // Work the host enqueues after a synchronize follows what it waited for.
      join(clocks[*s], host);
      Launch launch{&op, *s, ++launched[*s]};
      for (Value buffer : reads)
        if (failed(read(launch, buffer)))
          return failure();
      for (Value buffer : writes)
        if (failed(write(launch, buffer)))
          return failure();
    }
    return success();
  }
};

struct VerifyStepPass : public dsc::impl::VerifyStepBase<VerifyStepPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // Graph functions have no streams: only steps are checked.
    if (func.isExternal() || func.getBody().getOps<StreamOp>().empty())
      return;
    if (!func.getBody().hasOneBlock()) {
      func.emitError() << "a step must be one block";
      return signalPassFailure();
    }
    if (failed(StepChecker(func).run()))
      signalPassFailure();
  }
};
} // namespace
