//===- AssignStreams.cpp - the step's work onto streams, ordered by events -===//
//
// --dsc-convert-to-runtime leaves the step a serial program: every launch on
// its one stream "compute", in the order the host enqueues it. This pass
// lets the work that need not wait for compute run beside it: collectives
// on "comm", the copies between device and host on "d2h" and "h2d", the
// kernels on host buffers on "host", NVMe reads and writes on "nvme"; and
// it orders each reader after its writer on another stream with a
// dscrt.record of the writer's stream and a dscrt.wait of the reader's.
// The program order stays the conversion's: where the host enqueues work
// (a read-ahead, a deferred copy) is the conversion's decision, on which
// stream it runs and what it waits for is this pass's.
//
// The kind of work is what the launch says of itself: a collective
// (isCollective), an NVMe read or write, a copy between the two memories
// that is not the step's input or output (those the runtime reads and
// fills around compute's work), a kernel writing host buffers.
//
//===----------------------------------------------------------------------===//

#include "dsc/Conversion/Passes.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Dialect/DSC/IR/MemoryTiers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/StringMap.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_ASSIGNSTREAMS
#include "dsc/Conversion/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dscrt;

/// Collectives the comm stream may run behind compute.
static constexpr unsigned kCollectivesInFlight = 2;
/// Device-to-host copies the d2h stream may run behind compute, whose
/// device buffers are busy until compute has waited for them.
static constexpr unsigned kTransfersInFlight = 2;

namespace {
/// Events recorded on one stream (`from`) after the work that wrote some
/// buffers, which another stream (`waiter`) has not waited for yet,
/// numbered in `from`'s order: one wait for the latest event covers every
/// earlier one.
struct PendingEvents {
  Value from, waiter;
  DenseMap<Value, std::pair<unsigned, Value>> pending; // buffer -> (#, event)
  unsigned recorded = 0;

  void record(OpBuilder &builder, Location loc, Value buffer) {
    add(buffer, RecordOp::create(builder, loc, from));
  }

  /// `event`, recorded on `from` after the work that wrote `buffer`.
  void add(Value buffer, Value event) { pending[buffer] = {recorded++, event}; }

  /// The latest event of `buffers` (of every pending buffer when `all`).
  std::optional<std::pair<unsigned, Value>> latest(ValueRange buffers,
                                                   bool all = false) const {
    std::optional<std::pair<unsigned, Value>> best;
    for (auto &[buffer, event] : pending)
      if ((all || llvm::is_contained(buffers, buffer)) &&
          (!best || event.first > best->first))
        best = event;
    return best;
  }

  /// Makes `waiter` wait for the work that wrote `buffers` (all of it when
  /// `all`).
  void waitFor(OpBuilder &builder, Location loc, ValueRange buffers,
               bool all = false) {
    waitUpTo(builder, loc, latest(buffers, all));
  }

  /// Makes `waiter` wait for event `last`, which covers every event
  /// recorded before it.
  void waitUpTo(OpBuilder &builder, Location loc,
                std::optional<std::pair<unsigned, Value>> last) {
    if (!last)
      return;
    WaitOp::create(builder, loc, waiter, last->second);
    SmallVector<Value> covered;
    for (auto &[buffer, event] : pending)
      if (event.first <= last->first)
        covered.push_back(buffer);
    for (Value buffer : covered)
      pending.erase(buffer);
  }

  /// Makes `waiter` wait for every event but the last `inFlight` recorded:
  /// their buffers are then free, so a step that issues much work early
  /// (gradient reductions during the backward) holds at most `inFlight` of
  /// them, as DeepSpeed's double-buffered buckets do.
  void bound(OpBuilder &builder, Location loc, unsigned inFlight) {
    std::optional<std::pair<unsigned, Value>> last;
    for (auto &[buffer, event] : pending)
      if (event.first + inFlight < recorded &&
          (!last || event.first > last->first))
        last = event;
    waitUpTo(builder, loc, last);
  }

  /// `view` (a view of `buffer`) is ready when `buffer` is.
  void alias(Value buffer, Value view) {
    if (auto event = pending.lookup_or(buffer, {0, Value()}); event.second)
      pending[view] = event;
  }
};

/// Places the step's work on its streams, walking it in program order.
/// Compute waits for the collectives (`fromComm`) and copies to the device
/// (`fromH2d`) where it reads their buffers, and for the copies from the
/// device (`fromDevice`) before their buffers are reused and before it
/// writes state; host kernels wait for the copies to the host (`toHost`)
/// and the NVMe reads (`fromNvme`) where they read their buffers.
struct StreamAssigner {
  func::FuncOp step;
  ModuleOp module;
  Value compute, comm, host, d2h, h2d, nvme;
  /// The stream the conversion put the collectives on.
  Value collectives;
  PendingEvents fromComm, fromH2d, fromDevice, toHost, fromNvme;
  /// The read of each NVMe parameter's buffer, which its copy to the
  /// device waits for (on "h2d").
  DenseMap<Value, Value> parameterReads;
  /// Whether the step reads parameters from NVMe (their copies to the
  /// device read the buffers a later read may reuse).
  bool readsNvmeParameters = false;

  /// The module's dsc.state declarations, by name: their role and tier.
  llvm::StringMap<dsc::StateOp> states;

  /// The dsc.state named `name`, when the module declares it.
  dsc::StateOp stateNamed(StringRef name) const { return states.lookup(name); }

  bool isParameter(StringRef name) const {
    dsc::StateOp state = stateNamed(name);
    return state && state.getRole() == dsc::StateRole::parameter;
  }

  /// A parameter on NVMe (or a distillation teacher's weight): read by each
  /// of its loads into a buffer of its own, written from its update's.
  bool isNvmeParameter(StringRef name) const {
    dsc::StateOp state = stateNamed(name);
    return state && state.getTier() == dsc::MemoryTier::nvme &&
           (state.getRole() == dsc::StateRole::parameter ||
            state.getRole() == dsc::StateRole::teacher);
  }

  /// Creates stream `name` with its first use, after compute: streams are
  /// listed in reverse order of first use. (The collectives' stream, which
  /// the conversion created, moves there.)
  void ensure(Value &stream, StringRef name) {
    if (stream)
      return;
    Operation *first = compute.getDefiningOp();
    if (name == DSCRTDialect::kCollectiveStreamName && collectives) {
      collectives.getDefiningOp()->moveAfter(first);
      stream = collectives;
    } else {
      OpBuilder after(first);
      after.setInsertionPointAfter(first);
      stream = StreamOp::create(after, step.getLoc(), name);
    }
    for (auto [events, from, waiter] :
         {std::tuple{&fromComm, comm, compute},
          {&fromH2d, h2d, compute},
          {&fromDevice, d2h, compute},
          {&toHost, d2h, host},
          {&fromNvme, nvme, host}}) {
      events->from = from;
      events->waiter = waiter;
    }
  }

  /// Makes compute wait for the collectives and copies to the device that
  /// wrote `buffers` (all of them, and the copies from the device, when
  /// `all`).
  void computeWaitsFor(OpBuilder &builder, Location loc, ValueRange buffers,
                       bool all = false) {
    fromComm.waitFor(builder, loc, buffers, all);
    fromH2d.waitFor(builder, loc, buffers, all);
    if (all)
      fromDevice.waitFor(builder, loc, {}, all);
  }

  /// Makes `waiter` wait for what `from` has enqueued so far.
  static void waitForStream(OpBuilder &builder, Location loc, Value waiter,
                            Value from) {
    WaitOp::create(builder, loc, waiter, RecordOp::create(builder, loc, from));
  }

  /// The first of the allocations (dscrt.alloc, dscrt.state) of the
  /// buffers `launch` writes, which the conversion emits right before it:
  /// where the waits for its operands go, before the host takes its
  /// output buffers.
  static Operation *outputsStart(Operation *launch) {
    SmallVector<Value> reads, writes;
    cast<StreamUserOpInterface>(launch).getBufferAccesses(reads, writes);
    Operation *start = launch;
    while (Operation *prev = start->getPrevNode()) {
      if (!isa<AllocOp, StateOp>(prev) ||
          !llvm::is_contained(writes, prev->getResult(0)))
        break;
      start = prev;
    }
    return start;
  }

  static bool isHostBuffer(Value buffer) {
    return DSCRTDialect::isHostMemory(cast<MemRefType>(buffer.getType()));
  }

  /// A copy of the step's input to the device or of its output to the
  /// host: compute's work, the runtime fills and reads those host buffers.
  static bool isStepEdge(CopyOp copy) {
    return copy.getSource().getDefiningOp<InputOp>() ||
           copy.getSource().getDefiningOp<dscrt::StepKeyOp>() ||
           copy.getTarget().getDefiningOp<OutputOp>();
  }

  /// The buffers each op of `kernel`'s body reads from outside it, in
  /// program order (the ops of one fused group, each waited for in turn);
  /// a copy (a body that only yields) reads all its inputs at once.
  static SmallVector<SmallVector<Value>> readsPerOp(KernelOp kernel) {
    SmallVector<SmallVector<Value>> reads;
    Block &body = kernel.getBody().front();
    for (Operation &op : body.without_terminator()) {
      SmallVector<Value> &operands = reads.emplace_back();
      for (Value operand : op.getOperands())
        if (auto arg = dyn_cast<BlockArgument>(operand);
            arg && arg.getOwner() == &body)
          operands.push_back(kernel.getIns()[arg.getArgNumber()]);
    }
    if (reads.empty())
      reads.push_back(llvm::to_vector(kernel.getIns()));
    return reads;
  }

  void assignKernel(KernelOp kernel) {
    Location loc = kernel.getLoc();
    bool onHost = llvm::any_of(kernel.getOuts(), isHostBuffer);
    if (onHost)
      ensure(host, "host");
    Operation *start = outputsStart(kernel);
    OpBuilder builder(start);
    bool copy = kernel.getBody().front().without_terminator().empty();
    for (ArrayRef<Value> reads : readsPerOp(kernel)) {
      if (!onHost) {
        computeWaitsFor(builder, loc, reads);
        continue;
      }
      toHost.waitFor(builder, loc, reads);
      if (!copy) // a stored copy reads a host kernel's value, no NVMe read
        fromNvme.waitFor(builder, loc, reads);
    }
    // Before it writes a state: compute after the copies to the host (one
    // may still read the old value); host after the copies to the device
    // of a parameter's partition.
    for (Operation *op = start; op != kernel; op = op->getNextNode()) {
      auto state = dyn_cast<StateOp>(op);
      if (!state)
        continue;
      builder.setInsertionPoint(state);
      if (!onHost)
        fromDevice.waitFor(builder, loc, {}, /*all=*/true);
      else if (h2d && isParameter(state.getName()))
        waitForStream(builder, loc, host, h2d);
    }
    if (onHost)
      kernel.setStream(host);
  }

  /// A collective runs on "comm" once compute has written what it reads;
  /// compute waits for what it writes where it reads it.
  void assignCollective(StreamUserOpInterface op) {
    Location loc = op->getLoc();
    SmallVector<Value> reads, writes;
    op.getBufferAccesses(reads, writes);
    if (!reads.empty()) {
      OpBuilder before(outputsStart(op));
      computeWaitsFor(before, loc, reads);
    }
    ensure(comm, DSCRTDialect::kCollectiveStreamName);
    OpBuilder builder(op);
    if (!reads.empty())
      waitForStream(builder, loc, comm, compute);
    op.setStream(comm);
    if (writes.empty())
      return;
    builder.setInsertionPointAfter(op);
    for (Value buffer : writes)
      fromComm.record(builder, loc, buffer);
    fromComm.bound(builder, loc, kCollectivesInFlight);
  }

  /// A copy to the host runs on "d2h" after the work that wrote its source;
  /// host kernels wait for it, and compute before it reuses the source's
  /// memory or writes state.
  void assignCopyToHost(CopyOp copy) {
    Location loc = copy.getLoc();
    Value source = copy.getSource();
    ensure(d2h, "d2h");
    OpBuilder builder(outputsStart(copy));
    for (PendingEvents *events : {&fromComm, &fromH2d})
      if (auto event = events->latest(source))
        WaitOp::create(builder, loc, d2h, event->second);
    waitForStream(builder, loc, d2h, compute);
    copy.setStream(d2h);
    builder.setInsertionPointAfter(copy);
    Value copied = RecordOp::create(builder, loc, d2h);
    toHost.add(copy.getTarget(), copied);
    fromDevice.add(source, copied);
    fromDevice.bound(builder, loc, kTransfersInFlight);
  }

  /// A copy to the device runs on "h2d" after the host kernel or NVMe read
  /// that wrote its source, and after compute's work so far (its buffer
  /// may take the memory of one compute was using); compute waits for it
  /// where it reads the result.
  void assignCopyToDevice(CopyOp copy) {
    Location loc = copy.getLoc();
    Value source = copy.getSource();
    ensure(h2d, "h2d");
    ensure(host, "host");
    OpBuilder builder(outputsStart(copy));
    toHost.waitFor(builder, loc, source); // copied to the host and straight back
    if (Value read = parameterReads.lookup(source))
      WaitOp::create(builder, loc, h2d, read);
    waitForStream(builder, loc, h2d, host);
    waitForStream(builder, loc, h2d, compute);
    copy.setStream(h2d);
    builder.setInsertionPointAfter(copy);
    fromH2d.record(builder, loc, copy.getTarget());
  }

  /// The step's outputs, copied on compute one after the other: compute
  /// waits once for what all of them read.
  void assignOutputs(CopyOp first) {
    SmallVector<Value> sources;
    for (Operation *op = first; op; op = op->getNextNode()) {
      auto copy = dyn_cast<CopyOp>(op);
      if (copy && copy.getTarget().getDefiningOp<OutputOp>()) {
        sources.push_back(copy.getSource());
        continue;
      }
      if (!isa<OutputOp>(op))
        break;
    }
    OpBuilder builder(first.getTarget().getDefiningOp());
    computeWaitsFor(builder, first.getLoc(), sources);
  }

  static bool isOutputCopy(Operation *op) {
    auto copy = dyn_cast_or_null<CopyOp>(op);
    return copy && copy.getTarget().getDefiningOp<OutputOp>();
  }

  /// Before the NVMe stream reads into a new buffer, which may take the
  /// memory of buffers the host and the copies to the device have used so
  /// far, it waits for them.
  void nvmeMayReuse(OpBuilder &builder, Location loc) {
    for (Value stream : {host, readsNvmeParameters ? h2d : Value()})
      if (stream)
        waitForStream(builder, loc, nvme, stream);
  }

  /// The kernel that reads `buffer` first: the host update an NVMe
  /// read is for.
  static Operation *firstKernelReading(Value buffer) {
    Operation *first = nullptr;
    for (Operation *user : buffer.getUsers())
      if (isa<KernelOp>(user) && (!first || user->isBeforeInBlock(first)))
        first = user;
    return first;
  }

  /// An NVMe parameter's read: one event of its own, which its copy to the
  /// device waits for. A sub-group's reads (the states one host update
  /// reads, read one after the other): one event after the last.
  void assignNvmeRead(NvmeReadOp read) {
    Location loc = read.getLoc();
    ensure(nvme, "nvme");
    read.setStream(nvme);
    if (isNvmeParameter(read.getName())) {
      OpBuilder builder(outputsStart(read));
      nvmeMayReuse(builder, loc);
      builder.setInsertionPointAfter(read);
      Value event = RecordOp::create(builder, loc, nvme);
      fromNvme.add(read.getTarget(), event);
      parameterReads[read.getTarget()] = event;
      return;
    }
    Operation *update = firstKernelReading(read.getTarget());
    auto sameGroup = [&](NvmeReadOp other) {
      return other && !isNvmeParameter(other.getName()) &&
             firstKernelReading(other.getTarget()) == update;
    };
    // The group's first read places the wait; its last the event.
    Operation *start = outputsStart(read);
    auto previous = dyn_cast_or_null<NvmeReadOp>(start->getPrevNode());
    if (!sameGroup(previous)) {
      OpBuilder builder(start);
      nvmeMayReuse(builder, loc);
    }
    Operation *next = read->getNextNode();
    while (next && isa<AllocOp>(next))
      next = next->getNextNode();
    if (sameGroup(dyn_cast_or_null<NvmeReadOp>(next)))
      return;
    OpBuilder builder = OpBuilder::atBlockEnd(read->getBlock());
    builder.setInsertionPointAfter(read);
    Value event = RecordOp::create(builder, loc, nvme);
    SmallVector<Value> group{read.getTarget()};
    for (Operation *op = start->getPrevNode(); op; op = op->getPrevNode()) {
      if (auto groupRead = dyn_cast<NvmeReadOp>(op); sameGroup(groupRead))
        group.push_back(groupRead.getTarget());
      else if (!isa<AllocOp>(op))
        break;
    }
    // In read order: a kernel that waits for the first read only waits
    // again for the others.
    for (Value buffer : llvm::reverse(group))
      fromNvme.add(buffer, event);
  }

  /// An NVMe write runs once the host has computed its value: a
  /// parameter's after the copies to the host it reads; a sub-group's
  /// states (written one after the other) once for all.
  void assignNvmeWrite(NvmeWriteOp write) {
    Location loc = write.getLoc();
    ensure(nvme, "nvme");
    write.setStream(nvme);
    OpBuilder builder(write);
    if (isNvmeParameter(write.getName())) {
      toHost.waitFor(builder, loc, write.getSource());
      waitForStream(builder, loc, nvme, host);
      return;
    }
    auto previous = dyn_cast_or_null<NvmeWriteOp>(write->getPrevNode());
    if (!previous || isNvmeParameter(previous.getName()))
      waitForStream(builder, loc, nvme, host);
  }

  LogicalResult run() {
    for (StreamOp stream : step.getOps<StreamOp>()) {
      StringRef name = stream.getName();
      Value *slot = name == DSCRTDialect::kComputeStreamName ? &compute
                    : name == DSCRTDialect::kCollectiveStreamName ? &collectives
                                                                  : nullptr;
      if (!slot || *slot)
        return stream.emitOpError()
               << "is a stream of a step whose streams are assigned: "
                  "--dscrt-assign-streams expects its work on \""
               << DSCRTDialect::kComputeStreamName
               << "\" and its collectives on \""
               << DSCRTDialect::kCollectiveStreamName << "\"";
      *slot = stream;
    }
    if (!compute)
      return success();
    if (module)
      for (auto state : module.getOps<dsc::StateOp>())
        states[state.getSymName()] = state;
    step.walk([&](NvmeReadOp read) {
      readsNvmeParameters |= isNvmeParameter(read.getName());
    });
    SmallVector<Operation *> ops;
    for (Operation &op : step.getBody().front())
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (auto view = dyn_cast<ViewOp>(op)) {
        for (PendingEvents *events : {&fromComm, &fromH2d, &toHost, &fromNvme})
          events->alias(view.getSource(), view.getResult());
        continue;
      }
      if (auto sync = dyn_cast<SynchronizeOp>(op);
          sync && sync.getStream() == compute) {
        assignEnd(sync);
        continue;
      }
      auto user = dyn_cast<StreamUserOpInterface>(op);
      if (!user)
        continue;
      if (user.getStream() != (user.isCollective() ? collectives : compute))
        return op->emitOpError()
               << "is on a stream the conversion does not use: "
                  "--dscrt-assign-streams expects it on \""
               << (user.isCollective() ? DSCRTDialect::kCollectiveStreamName
                                       : DSCRTDialect::kComputeStreamName)
               << "\"";
      if (user.isCollective()) {
        assignCollective(user);
      } else if (auto kernel = dyn_cast<KernelOp>(op)) {
        assignKernel(kernel);
      } else if (auto read = dyn_cast<NvmeReadOp>(op)) {
        assignNvmeRead(read);
      } else if (auto write = dyn_cast<NvmeWriteOp>(op)) {
        assignNvmeWrite(write);
      } else if (auto copy = dyn_cast<CopyOp>(op); copy && !isStepEdge(copy)) {
        if (isHostBuffer(copy.getTarget()))
          assignCopyToHost(copy);
        else
          assignCopyToDevice(copy);
      } else if (isOutputCopy(op)) {
        // The first of the outputs copied one after the other.
        Operation *output = cast<CopyOp>(op).getTarget().getDefiningOp();
        if (!isOutputCopy(output->getPrevNode()))
          assignOutputs(cast<CopyOp>(op));
      } else {
        SmallVector<Value> reads, writes;
        user.getBufferAccesses(reads, writes);
        OpBuilder builder(outputsStart(op));
        computeWaitsFor(builder, op->getLoc(), reads);
      }
    }
    return success();
  }

  /// The step's end, where the host synchronizes compute: compute first
  /// waits for every collective and copy not waited for yet (one nobody
  /// read has run too before compute is done), then every other stream
  /// is drained.
  void assignEnd(SynchronizeOp sync) {
    Location loc = sync.getLoc();
    OpBuilder builder(sync);
    computeWaitsFor(builder, loc, {}, /*all=*/true);
    builder.setInsertionPointAfter(sync);
    for (Value stream : {comm, d2h, host, h2d, nvme})
      if (stream)
        SynchronizeOp::create(builder, loc, stream);
  }
};

struct AssignStreamsPass
    : public dsc::impl::AssignStreamsBase<AssignStreamsPass> {
  void runOnOperation() override {
    StreamAssigner assigner;
    assigner.step = getOperation();
    assigner.module = assigner.step->getParentOfType<ModuleOp>();
    if (failed(assigner.run()))
      signalPassFailure();
  }
};
} // namespace
