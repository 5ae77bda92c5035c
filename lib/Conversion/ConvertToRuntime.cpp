//===- ConvertToRuntime.cpp - dsc graph -> dscrt buffers and kernels ------===//
//
// The conversion proper of the lowering: the graph, decomposed and ordered
// (--dsc-decompose-for-library) with its kernels formed (--dsc-form-kernels),
// becomes the step of runtime calls: buffers, kernels, collectives and
// copies, on streams ordered by events.
//
//===----------------------------------------------------------------------===//

#include "dsc/Conversion/Passes.h"
#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Dialect/DSC/IR/DSCTraits.h"
#include "dsc/Dialect/DSC/IR/GraphUtils.h"
#include "dsc/Dialect/DSC/IR/MemoryTiers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_CONVERTTORUNTIME
#include "dsc/Conversion/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

static MemRefType bufferType(Type tensorType) {
  auto t = cast<RankedTensorType>(tensorType);
  return MemRefType::get(t.getShape(), t.getElementType());
}

static MemRefType hostBufferType(Type tensorType) {
  auto t = cast<RankedTensorType>(tensorType);
  return MemRefType::get(t.getShape(), t.getElementType(), MemRefLayoutAttrInterface(),
                         dscrt::HostMemoryAttr::get(t.getContext()));
}

/// Collectives the comm stream may run behind compute.
static constexpr unsigned kCollectivesInFlight = 2;
/// Device-to-host copies the d2h stream may run behind compute, whose
/// device buffers are busy until compute has waited for them.
static constexpr unsigned kTransfersInFlight = 2;

namespace {
/// Events recorded on one stream (`from`) after the work that produced
/// some tensors, which another stream (`waiter`) has not waited for yet,
/// numbered in `from`'s order: one wait for the latest event covers every
/// earlier one.
struct PendingEvents {
  Value from, waiter;
  DenseMap<Value, std::pair<unsigned, Value>> pending; // tensor -> (#, event)
  unsigned recorded = 0;

  void record(OpBuilder &builder, Location loc, Value tensor) {
    add(tensor, dscrt::RecordOp::create(builder, loc, from));
  }

  /// `event`, recorded on `from` after the work that produced `tensor`.
  void add(Value tensor, Value event) { pending[tensor] = {recorded++, event}; }

  /// The latest event of `operands` (of every pending tensor when `all`).
  std::optional<std::pair<unsigned, Value>> latest(ValueRange operands,
                                                   bool all = false) const {
    std::optional<std::pair<unsigned, Value>> best;
    for (auto &[tensor, event] : pending)
      if ((all || llvm::is_contained(operands, tensor)) &&
          (!best || event.first > best->first))
        best = event;
    return best;
  }

  /// Makes `waiter` wait for the work that produced `operands` (all of it
  /// when `all`).
  void waitFor(OpBuilder &builder, Location loc, ValueRange operands,
               bool all = false) {
    waitUpTo(builder, loc, latest(operands, all));
  }

  /// Makes `waiter` wait for event `last`, which covers every event
  /// recorded before it.
  void waitUpTo(OpBuilder &builder, Location loc,
                std::optional<std::pair<unsigned, Value>> last) {
    if (!last)
      return;
    dscrt::WaitOp::create(builder, loc, waiter, last->second);
    SmallVector<Value> covered;
    for (auto &[tensor, event] : pending)
      if (event.first <= last->first)
        covered.push_back(tensor);
    for (Value tensor : covered)
      pending.erase(tensor);
  }

  /// Makes `waiter` wait for every event but the last `inFlight` recorded:
  /// their buffers are then free, so a step that issues much work early
  /// (gradient reductions during the backward) holds at most `inFlight` of
  /// them, as DeepSpeed's double-buffered buckets do.
  void bound(OpBuilder &builder, Location loc, unsigned inFlight) {
    std::optional<std::pair<unsigned, Value>> last;
    for (auto &[tensor, event] : pending)
      if (event.first + inFlight < recorded &&
          (!last || event.first > last->first))
        last = event;
    waitUpTo(builder, loc, last);
  }

  /// `alias` (a view of `tensor`, or the same buffer) is ready when
  /// `tensor` is.
  void alias(Value tensor, Value alias) {
    if (auto event = pending.lookup_or(tensor, {0, Value()}); event.second)
      pending[alias] = event;
  }
};

/// The streams of the step: kernels and copies on "compute"; collectives on
/// "comm" (created with the first one), which waits for an event recorded
/// on compute after the collective's operand was written, and whose sums
/// compute waits for where it reads them (`fromComm`). ZeRO-Offload adds
/// the copy streams "d2h" and "h2d" and the stream "host" of the kernels
/// on host buffers (the optimizer's update on the host CPU): a tensor
/// copied to the host is read by host kernels once "host" has waited for
/// its copy (`toHost`); compute waits for the copies from the device
/// (`fromDevice`) before their buffers are reused and before it writes
/// state, and for the copies back (`fromH2d`) where it reads them.
/// ZeRO-Infinity adds the stream "nvme" of the reads and writes of NVMe
/// states (NvmeSchedule), which host kernels wait for (`fromNvme`).
struct Streams {
  Value compute, comm, host, d2h, h2d, nvme;
  PendingEvents fromComm, fromH2d, fromDevice, toHost;
  /// ZeRO-Infinity's reads of NVMe states, which host kernels wait for.
  PendingEvents fromNvme;
  /// The read of each NVMe parameter load, which its copy to the device
  /// waits for (on "h2d").
  DenseMap<Value, Value> parameterReads;

  /// Makes compute wait for the collectives and copies to the device that
  /// produced `operands` (all of them when `all`).
  void waitFor(OpBuilder &builder, Location loc, ValueRange operands,
               bool all = false) {
    fromComm.waitFor(builder, loc, operands, all);
    fromH2d.waitFor(builder, loc, operands, all);
    if (all)
      fromDevice.waitFor(builder, loc, {}, all);
  }

  /// `alias` is ready where `tensor` is.
  void alias(Value tensor, Value alias) {
    fromComm.alias(tensor, alias);
    fromH2d.alias(tensor, alias);
    toHost.alias(tensor, alias);
    fromNvme.alias(tensor, alias);
  }
};
} // namespace

namespace {
/// ZeRO-Infinity's static schedule of NVMe reads and writes. The host
/// updates that read NVMe states (the sub-groups of --dsc-offload) are
/// numbered in program order; the states of sub-group k are read into host
/// buffers on the "nvme" stream once sub-group k - depth has been written
/// back (the first `depth` sub-groups when the read-ahead starts: once the
/// step is sure to reach the update, after its evaluation or micro-step
/// exit), and written back right after their update. The stream runs in
/// order, so a read that follows a write may reuse its buffer's memory: at
/// most `depth` sub-groups hold host memory at once (DeepSpeed's
/// buffer_count), and the reads run behind the updates before them.
///
/// Parameters on NVMe (offload_param) are read by every load of them, on
/// the same stream, `paramDepth` loads ahead in program order (DeepSpeed's
/// offload_param.buffer_count); each read's buffer lives until the copy to
/// the device (or the host update) that reads it, and the new partition is
/// written back from the host after the update.
struct NvmeSchedule {
  int64_t depth = 0;
  SmallVector<SmallVector<LoadOp>> groups; // the loads of each sub-group
  DenseMap<Operation *, unsigned> groupOf; // host update -> its sub-group
  DenseMap<Attribute, Value> staging;      // state -> its host buffer
  unsigned nextRead = 0;                   // the next sub-group to read
  int64_t paramDepth = 0;
  SmallVector<LoadOp> paramLoads;          // in program order
  DenseMap<Operation *, unsigned> paramIndex;
  unsigned nextParamRead = 0;

  static bool onNvme(ModuleOp module, FlatSymbolRefAttr name) {
    auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(module, name);
    return state && state.getTier() == MemoryTier::nvme;
  }

  /// A parameter on NVMe: read by each of its loads, written by its store
  /// (a distillation teacher's weight: read alike, never stored).
  static bool isNvmeParameter(ModuleOp module, FlatSymbolRefAttr name) {
    auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(module, name);
    return state && state.getTier() == MemoryTier::nvme &&
           (state.getRole() == StateRole::parameter ||
            state.getRole() == StateRole::teacher);
  }

  /// The sub-groups of `body`; an error at a load of an NVMe state that
  /// another op than one update reads.
  static FailureOr<NvmeSchedule> plan(ModuleOp module, Block &body) {
    NvmeSchedule schedule;
    auto depth = module->getAttrOfType<IntegerAttr>(
        DSCDialect::kNvmeBufferCountAttrName);
    schedule.depth = depth ? std::max<int64_t>(depth.getInt(), 1) : 1;
    auto paramDepth = module->getAttrOfType<IntegerAttr>(
        kNvmeParamBufferCountAttrName);
    schedule.paramDepth =
        paramDepth ? std::max<int64_t>(paramDepth.getInt(), 1) : 1;
    for (Operation &op : body) {
      if (auto load = dyn_cast<LoadOp>(op);
          load && isNvmeParameter(module, load.getStateAttr())) {
        schedule.paramIndex[load] = schedule.paramLoads.size();
        schedule.paramLoads.push_back(load);
      }
      auto update = dyn_cast<MultiTensorUpdateOpInterface>(op);
      SmallVector<LoadOp> loads;
      for (Value operand : op.getOperands()) {
        auto load = operand.getDefiningOp<LoadOp>();
        if (!load || !onNvme(module, load.getStateAttr()) ||
            isNvmeParameter(module, load.getStateAttr()))
          continue;
        if (!update || !load->hasOneUse())
          return load.emitOpError()
                 << "reads " << load.getStateAttr()
                 << ", a state on nvme: only one optimizer update may read "
                    "it (its host buffer lives from its read to its write)";
        loads.push_back(load);
      }
      if (loads.empty())
        continue;
      schedule.groupOf[&op] = schedule.groups.size();
      schedule.groups.push_back(std::move(loads));
    }
    return schedule;
  }
};

struct ConvertToRuntimePass
    : public dsc::impl::ConvertToRuntimeBase<ConvertToRuntimePass> {

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto graphs = llvm::to_vector(module.getOps<func::FuncOp>());
    if (graphs.size() != 1 || graphs[0].isExternal()) {
      module.emitError() << "expected one graph function to lower, found "
                         << graphs.size();
      return signalPassFailure();
    }
    if (failed(lower(module, graphs[0])))
      return signalPassFailure();
  }

  /// Gradient accumulation: the ops after the graph's
  /// dsc.optimizer_boundary (`boundary`, set when there is one) run once
  /// per optimizer step; --dsc-decompose-for-library moved there exactly
  /// the ops that read the boundary, directly or not. Returns them; an
  /// error at an op after the boundary that does not read it.
  static FailureOr<DenseSet<Operation *>>
  perUpdateOps(Block &body, OptimizerBoundaryOp &boundary) {
    DenseSet<Operation *> perUpdate;
    auto boundaries = body.getOps<OptimizerBoundaryOp>();
    if (boundaries.empty())
      return perUpdate;
    boundary = *boundaries.begin();
    perUpdate.insert(boundary);
    for (Operation *op = boundary->getNextNode();
         op && !op->hasTrait<mlir::OpTrait::IsTerminator>(); op = op->getNextNode()) {
      if (llvm::none_of(op->getOperands(), [&](Value v) {
            Operation *def = v.getDefiningOp();
            return def && perUpdate.contains(def);
          }))
        return op->emitOpError()
               << "follows the dsc.optimizer_boundary but does not read it, "
                  "so it would run once per optimizer step only; "
                  "--dsc-decompose-for-library moves it before the boundary";
      perUpdate.insert(op);
    }
    perUpdate.erase(boundary);
    return perUpdate;
  }

  /// The kernels --dsc-form-kernels recorded: for each op of `body`, the
  /// last op of its dsc.fusion_group (where the group's kernel is
  /// emitted), or the op itself when it has none. An error at a group that
  /// one kernel cannot compute: a member that is not elementwise, an op
  /// before the last whose value an op outside the group but a store reads
  /// (it would read it before the kernel is emitted), or a group across
  /// the optimizer boundary.
  static FailureOr<DenseMap<Operation *, Operation *>>
  recordedGroups(Block &body, const DenseSet<Operation *> &perUpdate) {
    DenseMap<Operation *, Operation *> root;
    DenseMap<int64_t, SmallVector<Operation *>> groups;
    SmallVector<int64_t> ids; // in order of first appearance
    for (Operation &op : body) {
      root[&op] = &op;
      auto id = op.getAttrOfType<IntegerAttr>(DSCDialect::kFusionGroupAttrName);
      if (!id)
        continue;
      if (!isElementwise(&op))
        return op.emitOpError() << "is in a dsc.fusion_group but is not "
                                   "elementwise";
      auto [it, inserted] = groups.try_emplace(id.getInt());
      if (inserted)
        ids.push_back(id.getInt());
      it->second.push_back(&op);
    }
    for (int64_t id : ids) {
      ArrayRef<Operation *> members = groups[id];
      Operation *last = members.back();
      for (Operation *member : members) {
        if (perUpdate.contains(member) != perUpdate.contains(last))
          return member->emitOpError()
                 << "is in dsc.fusion_group " << id
                 << " with ops on the other side of the optimizer boundary";
        root[member] = last;
        if (member == last)
          continue; // its kernel's result, read after the kernel
        for (Operation *user : member->getUsers())
          if (!isa<StoreOp>(user) &&
              user->getAttr(DSCDialect::kFusionGroupAttrName) !=
                  member->getAttr(DSCDialect::kFusionGroupAttrName))
            return user->emitOpError()
                   << "reads a value of dsc.fusion_group " << id
                   << ", which is computed inside the group's kernel";
      }
    }
    return root;
  }

  LogicalResult lower(ModuleOp module, func::FuncOp graph) {
    if (failed(verifyLowerableGraph(graph)))
      return failure();
    OpBuilder builder(module.getContext());
    builder.setInsertionPointAfter(graph);
    auto step = func::FuncOp::create(builder, graph.getLoc(), "step",
                                     builder.getFunctionType({}, {}));
    Block *entry = step.addEntryBlock();
    builder.setInsertionPointToStart(entry);
    Streams streams;
    streams.compute = dscrt::StreamOp::create(builder, graph.getLoc(), "compute");

    DenseMap<StringAttr, int64_t> stateIndex;
    for (auto state : module.getOps<StateOp>())
      stateIndex[state.getSymNameAttr()] = stateIndex.size();

    IRMapping buffers; // tensor value -> memref value
    Block &body = graph.getBody().front();
    // What the runtime fills on the host (graph inputs, the step key),
    // copied to device memory for the kernels on compute.
    auto mapToDevice = [&](Value value, Value host) {
      Value device = dscrt::AllocOp::create(builder, value.getLoc(),
                                            bufferType(value.getType()));
      dscrt::CopyOp::create(builder, value.getLoc(), host, device,
                            streams.compute);
      buffers.map(value, device);
    };
    for (BlockArgument arg : body.getArguments()) {
      auto name = graph.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                     DSCDialect::kInputAttrName);
      mapToDevice(arg, dscrt::InputOp::create(
                           builder, arg.getLoc(), hostBufferType(arg.getType()),
                           arg.getArgNumber(),
                           name ? name.getValue() : StringRef("")));
    }

    OptimizerBoundaryOp boundary;
    FailureOr<DenseSet<Operation *>> perUpdate = perUpdateOps(body, boundary);
    if (failed(perUpdate))
      return failure();
    FailureOr<MemoryTiers> tiers = MemoryTiers::compute(body);
    if (failed(tiers))
      return failure();
    // A tensor's buffer is in the memory of its tier.
    auto typeOf = [&](Value value) {
      return tiers->of(value) == MemoryTier::host ? hostBufferType(value.getType())
                                                  : bufferType(value.getType());
    };
    // Streams other than compute are created with their first use, at the
    // start of the step.
    auto ensureStream = [&](Value &stream, StringRef name) {
      if (stream)
        return;
      OpBuilder atStart = OpBuilder::atBlockBegin(entry);
      atStart.setInsertionPointAfter(streams.compute.getDefiningOp());
      stream = dscrt::StreamOp::create(atStart, graph.getLoc(), name);
      for (auto [events, from, waiter] :
           {std::tuple{&streams.fromComm, streams.comm, streams.compute},
            {&streams.fromH2d, streams.h2d, streams.compute},
            {&streams.fromDevice, streams.d2h, streams.compute},
            {&streams.toHost, streams.d2h, streams.host},
            {&streams.fromNvme, streams.nvme, streams.host}}) {
        events->from = from;
        events->waiter = waiter;
      }
    };
    FailureOr<DenseMap<Operation *, Operation *>> groups =
        recordedGroups(body, *perUpdate);
    if (failed(groups))
      return failure();
    DenseMap<Operation *, Operation *> &root = *groups;
    // Members of each group in program order, collected at their root.
    DenseMap<Operation *, SmallVector<Operation *>> members;
    for (Operation &op : body)
      members[root.lookup(&op)].push_back(&op);
    if (failed(checkStoreOrder(body, root)))
      return failure();
    DenseMap<Value, StoreOp> inPlace = inPlaceStores(body, root);
    FailureOr<NvmeSchedule> nvme = NvmeSchedule::plan(module, body);
    if (failed(nvme))
      return failure();
    // A parameter on NVMe has no memory to update in place: its new value
    // is computed into a buffer of its own and written from there.
    SmallVector<Value> writtenToFile;
    for (auto &[value, store] : inPlace)
      if (NvmeSchedule::isNvmeParameter(module, store.getStateAttr()))
        writtenToFile.push_back(value);
    for (Value value : writtenToFile)
      inPlace.erase(value);
    // A buffer read from NVMe may take the memory of buffers the host and
    // the copies to the device have used so far.
    auto nvmeMayReuse = [&](Location loc) {
      // (Only parameters' buffers are read by copies to the device.)
      for (Value stream :
           {streams.host, nvme->paramLoads.empty() ? Value() : streams.h2d})
        if (stream)
          dscrt::WaitOp::create(builder, loc, streams.nvme,
                                dscrt::RecordOp::create(builder, loc, stream));
    };
    // Reads the NVMe parameter loads up to `last` (in program order) into
    // new host buffers, which their copies to the device read.
    auto readParametersUpTo = [&](Location loc, int64_t last) {
      while (nvme->nextParamRead < nvme->paramLoads.size() &&
             int64_t(nvme->nextParamRead) <= last) {
        LoadOp load = nvme->paramLoads[nvme->nextParamRead++];
        ensureStream(streams.nvme, "nvme");
        nvmeMayReuse(loc);
        Value buffer =
            dscrt::AllocOp::create(builder, loc, typeOf(load.getResult()));
        dscrt::NvmeReadOp::create(builder, loc,
                                  stateIndex.lookup(load.getStateAttr().getAttr()),
                                  load.getState(), buffer, streams.nvme);
        buffers.map(load.getResult(), buffer);
        Value read = dscrt::RecordOp::create(builder, loc, streams.nvme);
        streams.fromNvme.add(load.getResult(), read);
        streams.parameterReads[load.getResult()] = read;
      }
    };
    // Reads sub-group `group`'s NVMe states into new host buffers, which
    // its update then reads and writes in place.
    auto readGroup = [&](Location loc, unsigned group) {
      ensureStream(streams.nvme, "nvme");
      nvmeMayReuse(loc);
      for (LoadOp load : nvme->groups[group]) {
        Value buffer = dscrt::AllocOp::create(builder, loc, typeOf(load.getResult()));
        dscrt::NvmeReadOp::create(builder, loc,
                                  stateIndex.lookup(load.getStateAttr().getAttr()),
                                  load.getState(), buffer, streams.nvme);
        buffers.map(load.getResult(), buffer);
        nvme->staging[load.getStateAttr()] = buffer;
      }
      Value read = dscrt::RecordOp::create(builder, loc, streams.nvme);
      for (LoadOp load : nvme->groups[group])
        streams.fromNvme.add(load.getResult(), read);
    };
    // Reads ahead up to sub-group `last` (at most the last one).
    auto readUpTo = [&](Location loc, int64_t last) {
      while (nvme->nextRead < nvme->groups.size() &&
             int64_t(nvme->nextRead) <= last)
        readGroup(loc, nvme->nextRead++);
    };
    auto startReadAhead = [&](Location loc) { readUpTo(loc, nvme->depth - 1); };
    // Writes NVMe states' new values back, once the host has computed them.
    auto writeBack = [&](Location loc, ArrayRef<StoreOp> stores) {
      if (stores.empty())
        return;
      dscrt::WaitOp::create(builder, loc, streams.nvme,
                            dscrt::RecordOp::create(builder, loc, streams.host));
      for (StoreOp store : stores)
        dscrt::NvmeWriteOp::create(
            builder, loc, nvme->staging.lookup(store.getStateAttr()),
            stateIndex.lookup(store.getStateAttr().getAttr()), store.getState(),
            streams.nvme);
    };
    // The NVMe stores of `op`'s results: written back after its kernel.
    auto nvmeStoresOf = [&](Operation *op) {
      SmallVector<StoreOp> stores;
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers())
          if (auto store = dyn_cast<StoreOp>(user);
              store && NvmeSchedule::onNvme(module, store.getStateAttr()))
            stores.push_back(store);
      return stores;
    };

    auto ret = cast<func::ReturnOp>(body.getTerminator());
    // Outputs computed once per optimizer step (from the reduced
    // gradients) are written after the micro_step_exit, the others on
    // every call.
    SmallVector<Value> everyCall, onceAStep;
    for (Value value : ret.getOperands()) {
      Operation *def = value.getDefiningOp();
      (def && perUpdate->contains(def) ? onceAStep : everyCall).push_back(value);
    }
    // Each output is a host buffer filled by a copy on compute, once the
    // collectives that produced it have run.
    auto emitOutputs = [&](Location loc, ArrayRef<Value> which) {
      streams.waitFor(builder, loc, which);
      for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
        if (!llvm::is_contained(which, value))
          continue;
        auto name = graph.getResultAttrOfType<StringAttr>(
            i, DSCDialect::kOutputAttrName);
        Value host = dscrt::OutputOp::create(
            builder, loc, hostBufferType(value.getType()), i,
            name ? name.getValue() : StringRef(""));
        dscrt::CopyOp::create(builder, loc, buffers.lookup(value), host,
                              streams.compute);
      }
    };
    // A training step writes its outputs as soon as they are computed and
    // may end there (dscrt.eval_exit): evaluation is the same step, cut
    // before the backward pass and the optimizer. One that accumulates
    // gradients computes its loss behind the boundary: it has no such cut
    // (dsc-run refuses --eval for it).
    bool training = !body.getOps<StoreOp>().empty();
    bool evaluable = training && !boundary;
    Operation *outputsReady =
        evaluable ? lastOutputProducer(everyCall, root) : nullptr;
    if (evaluable && !outputsReady) {
      emitOutputs(graph.getLoc(), everyCall);
      dscrt::EvalExitOp::create(builder, graph.getLoc());
      startReadAhead(graph.getLoc());
    }

    // An offloaded parameter's partition (a host state the device reads
    // through copies on "h2d") is written on the host once those copies
    // have run. Masters and moments are not copied: their updates do not
    // wait for the copies back of the sub-groups before them.
    auto waitForCopiesOfParameter = [&](StoreOp store) {
      auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(
          module, store.getStateAttr());
      if (streams.h2d && state && state.getRole() == StateRole::parameter)
        dscrt::WaitOp::create(builder, store.getLoc(), streams.host,
                              dscrt::RecordOp::create(builder, store.getLoc(),
                                                      streams.h2d));
    };
    // Copied into the state's memory, after every read of the old value
    // (checkStoreOrder).
    SmallVector<StoreOp> deferredStores;
    auto emitStore = [&](StoreOp store) {
      Location loc = store.getLoc();
      bool onHost = tiers->isHost(store);
      if (onHost) {
        streams.toHost.waitFor(builder, loc, store.getValue());
        if (NvmeSchedule::isNvmeParameter(module, store.getStateAttr())) {
          // Written to its file from the value's buffer (no copy).
          ensureStream(streams.nvme, "nvme");
          dscrt::WaitOp::create(builder, loc, streams.nvme,
                                dscrt::RecordOp::create(builder, loc, streams.host));
          dscrt::NvmeWriteOp::create(
              builder, loc, buffers.lookup(store.getValue()),
              stateIndex.lookup(store.getStateAttr().getAttr()),
              store.getState(), streams.nvme);
          return;
        }
        waitForCopiesOfParameter(store);
      } else {
        streams.waitFor(builder, loc, store.getValue());
        // A copy to the host may still read the state's old value.
        streams.fromDevice.waitFor(builder, loc, {}, /*all=*/true);
      }
      bool toNvme = NvmeSchedule::onNvme(module, store.getStateAttr());
      Value target =
          toNvme ? nvme->staging.lookup(store.getStateAttr())
                 : dscrt::StateOp::create(
                       builder, loc, typeOf(store.getValue()),
                       stateIndex.lookup(store.getStateAttr().getAttr()),
                       store.getState());
      auto copy = dscrt::KernelOp::create(
          builder, loc, onHost ? streams.host : streams.compute,
          buffers.lookup(store.getValue()), target);
      OpBuilder inner = OpBuilder::atBlockEnd(&copy.getBody().front());
      dscrt::YieldOp::create(inner, loc, copy.getBody().front().getArgument(0));
      if (toNvme)
        writeBack(loc, store);
    };

    int64_t sequence = 0;
    for (Operation &op : body) {
      Location loc = op.getLoc();
      if (isa<func::ReturnOp>(op)) {
        if (!evaluable)
          emitOutputs(loc, everyCall);
        emitOutputs(loc, onceAStep);
        // A collective nobody read has run, too, before compute is done.
        streams.waitFor(builder, loc, {}, /*all=*/true);
        for (Value stream : {streams.compute, streams.comm, streams.d2h,
                             streams.host, streams.h2d, streams.nvme})
          if (stream)
            dscrt::SynchronizeOp::create(builder, loc, stream);
        continue;
      }
      llvm::scope_exit afterOp([&] {
        if (&op == outputsReady) {
          emitOutputs(loc, everyCall);
          dscrt::EvalExitOp::create(builder, loc);
          startReadAhead(loc);
        }
      });
      if (auto store = dyn_cast<StoreOp>(op)) {
        // Written in place by its kernel: nothing to copy.
        if (inPlace.lookup(store.getValue()) == store)
          continue;
        // A value computed by a kernel emitted later (an output of a fused
        // group whose last op follows the store) is stored after it.
        if (!buffers.contains(store.getValue()))
          deferredStores.push_back(store);
        else
          emitStore(store);
        continue;
      }
      if (&op == boundary.getOperation()) {
        // The calls that end no optimizer step end here, every stream
        // drained; the boundary's results are its operands' buffers.
        dscrt::MicroStepExitOp::create(builder, loc);
        startReadAhead(loc);
        for (auto [in, out] :
             llvm::zip(boundary.getInputs(), boundary.getResults())) {
          buffers.map(out, buffers.lookup(in));
          streams.alias(in, out);
        }
        continue;
      }
      if (auto load = dyn_cast<LoadOp>(op)) {
        // An NVMe parameter is read `paramDepth` loads ahead.
        if (auto index = nvme->paramIndex.find(load);
            index != nvme->paramIndex.end()) {
          readParametersUpTo(loc, int64_t(index->second) + nvme->paramDepth - 1);
          continue;
        }
        // An NVMe state's host buffer is its read's (readGroup).
        if (NvmeSchedule::onNvme(module, load.getStateAttr()))
          continue;
        buffers.map(load.getResult(),
                    dscrt::StateOp::create(
                        builder, loc, typeOf(load.getResult()),
                        stateIndex.lookup(load.getStateAttr().getAttr()),
                        load.getState()));
        continue;
      }
      if (auto key = dyn_cast<StepKeyOp>(op)) {
        mapToDevice(key.getResult(),
                    dscrt::StepKeyOp::create(builder, loc,
                                             hostBufferType(key.getType())));
        continue;
      }
      if (auto cst = dyn_cast<ConstantOp>(op)) {
        buffers.map(cst.getResult(),
                    dscrt::ConstantOp::create(builder, loc,
                                              bufferType(cst.getType()),
                                              cst.getValue()));
        continue;
      }
      if (isa<ReshapeOp, ReplicateOp>(op)) {
        // A view touches no memory: its readers wait, not the view. (A
        // replicate is the identity once autodiff has read it.)
        Value input = op.getOperand(0), result = op.getResult(0);
        streams.alias(input, result);
        buffers.map(result,
                    dscrt::ViewOp::create(builder, loc,
                                          typeOf(result),
                                          buffers.lookup(input)));
        continue;
      }
      if (auto send = dyn_cast<PipelineSendOp>(op)) {
        // Read in place by the collectives stream, as an all-gather's
        // shard; the send's scalar zero (what the stage adds to its loss)
        // is a constant.
        streams.waitFor(builder, loc, send.getInput());
        ensureStream(streams.comm, "comm");
        Value written = dscrt::RecordOp::create(builder, loc, streams.compute);
        dscrt::WaitOp::create(builder, loc, streams.comm, written);
        dscrt::PipelineSendOp::create(
            builder, loc, buffers.lookup(send.getInput()), streams.comm,
            send.getPeer(), send.getMicroBatch(), sequence++);
        auto zeroType = cast<RankedTensorType>(send.getZero().getType());
        buffers.map(send.getZero(),
                    dscrt::ConstantOp::create(
                        builder, loc, bufferType(zeroType),
                        DenseElementsAttr::get(zeroType, 0.0f)));
        continue;
      }
      if (auto recv = dyn_cast<PipelineRecvOp>(op)) {
        ensureStream(streams.comm, "comm");
        Value out = dscrt::AllocOp::create(builder, loc,
                                           bufferType(recv.getType()));
        dscrt::PipelineRecvOp::create(builder, loc, out, streams.comm,
                                      recv.getPeer(), recv.getMicroBatch(),
                                      sequence++);
        streams.fromComm.record(builder, loc, recv.getResult());
        streams.fromComm.bound(builder, loc, kCollectivesInFlight);
        buffers.map(recv.getResult(), out);
        continue;
      }
      if (isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp>(op)) {
        Value input = op.getOperand(0), result = op.getResult(0);
        streams.waitFor(builder, loc, input);
        Value source = buffers.lookup(input);
        Value out = dscrt::AllocOp::create(builder, loc,
                                           bufferType(result.getType()));
        if (isa<AllReduceOp, AllToAllOp>(op)) {
          // Copy, then reduce or exchange in place: the input buffer may
          // have other users.
          auto copy =
              dscrt::KernelOp::create(builder, loc, streams.compute, source, out);
          OpBuilder inner = OpBuilder::atBlockEnd(&copy.getBody().front());
          dscrt::YieldOp::create(inner, loc,
                                 copy.getBody().front().getArgument(0));
        }
        ensureStream(streams.comm, "comm");
        Value written = dscrt::RecordOp::create(builder, loc, streams.compute);
        dscrt::WaitOp::create(builder, loc, streams.comm, written);
        CollectiveGroup over = *getCollectiveGroup(&op);
        if (auto reduce = dyn_cast<AllReduceOp>(op))
          dscrt::AllReduceOp::create(builder, loc, out, streams.comm, sequence++,
                                     over, reduce.getMaximum())
              .setStagesAttr(reduce.getStagesAttr());
        else if (isa<AllToAllOp>(op))
          dscrt::AllToAllOp::create(builder, loc, out, streams.comm, sequence++,
                                    over);
        else if (isa<AllGatherOp>(op))
          dscrt::AllGatherOp::create(builder, loc, source, out, streams.comm,
                                     sequence++, over);
        else
          dscrt::ReduceScatterOp::create(builder, loc, source, out,
                                         streams.comm, sequence++, over);
        streams.fromComm.record(builder, loc, result);
        streams.fromComm.bound(builder, loc, kCollectivesInFlight);
        buffers.map(result, out);
        continue;
      }
      if (auto transfer = dyn_cast<TransferOp>(op)) {
        lowerTransfer(builder, transfer, streams, buffers, ensureStream);
        continue;
      }
      if (auto shard = dyn_cast<LocalShardOp>(op)) {
        streams.waitFor(builder, loc, shard.getInput());
        Value out =
            dscrt::AllocOp::create(builder, loc, bufferType(shard.getType()));
        dscrt::CopyShardOp::create(builder, loc,
                                   buffers.lookup(shard.getInput()), out,
                                   streams.compute, shard.getGroup());
        buffers.map(shard.getResult(), out);
        continue;
      }
      if (root.lookup(&op) != &op)
        continue; // emitted with its group's last op
      if (!op.getDialect() || !isa<DSCDialect>(op.getDialect()))
        return op.emitError() << "cannot lower '" << op.getName()
                              << "' to the runtime";
      // A kernel on host tensors runs on the host stream, once the copies
      // of its operands to the host have run.
      bool onHost = tiers->isHost(&op);
      if (onHost)
        ensureStream(streams.host, "host");
      std::optional<unsigned> nvmeGroup;
      if (auto it = nvme->groupOf.find(&op); it != nvme->groupOf.end()) {
        nvmeGroup = it->second;
        readUpTo(loc, *nvmeGroup); // when the read-ahead has not reached it
      }
      for (Operation *member : members[&op]) {
        if (onHost) {
          streams.toHost.waitFor(builder, loc, member->getOperands());
          streams.fromNvme.waitFor(builder, loc, member->getOperands());
        } else {
          streams.waitFor(builder, loc, member->getOperands());
        }
      }
      emitKernel(builder, onHost ? streams.host : streams.compute, members[&op],
                 buffers, typeOf,
                 [&](Value result, Location at) -> Value {
                   StoreOp store = inPlace.lookup(result);
                   if (!store)
                     return updatedTemporary(result, buffers);
                   if (Value staged = nvme->staging.lookup(store.getStateAttr()))
                     return staged;
                   // A copy may still read the state's old value.
                   if (!onHost)
                     streams.fromDevice.waitFor(builder, at, {}, /*all=*/true);
                   else
                     waitForCopiesOfParameter(store);
                   return dscrt::StateOp::create(
                       builder, at, typeOf(result),
                       stateIndex.lookup(store.getStateAttr().getAttr()),
                       store.getState());
                 });
      // Its NVMe states' new values go back to their files, and the
      // sub-group `depth` ahead is read into the memory they leave.
      if (nvmeGroup) {
        SmallVector<StoreOp> stores = nvmeStoresOf(&op);
        llvm::erase_if(stores, [&](StoreOp store) {
          return inPlace.lookup(store.getValue()) != store;
        });
        writeBack(loc, stores);
        readUpTo(loc, int64_t(*nvmeGroup) + nvme->depth);
      }
      llvm::erase_if(deferredStores, [&](StoreOp store) {
        if (!buffers.contains(store.getValue()))
          return false;
        emitStore(store);
        return true;
      });
    }
    func::ReturnOp::create(builder, graph.getLoc());
    graph.erase();
    return success();
  }

  /// A dsc.transfer: a copy on a copy stream into a new buffer of the
  /// other memory. To the host ("d2h"): after the work that wrote the
  /// source (on compute, or a collective on comm); host kernels wait for
  /// it, and compute before it reuses the source's memory or writes state.
  /// To the device ("h2d"): after the host kernel that wrote the source,
  /// and after compute's work so far (the new device buffer may take the
  /// memory of one compute was using); compute waits for it where it reads
  /// the result.
  static void lowerTransfer(OpBuilder &builder, TransferOp transfer,
                            Streams &streams, IRMapping &buffers,
                            llvm::function_ref<void(Value &, StringRef)> ensure) {
    Location loc = transfer.getLoc();
    Value input = transfer.getInput(), result = transfer.getResult();
    Value source = buffers.lookup(input);
    if (transfer.getTier() == MemoryTier::host) {
      ensure(streams.d2h, "d2h");
      for (PendingEvents *events : {&streams.fromComm, &streams.fromH2d})
        if (auto event = events->latest(input))
          dscrt::WaitOp::create(builder, loc, streams.d2h, event->second);
      dscrt::WaitOp::create(builder, loc, streams.d2h,
                            dscrt::RecordOp::create(builder, loc, streams.compute));
      Value out = dscrt::AllocOp::create(builder, loc, hostBufferType(result.getType()));
      dscrt::CopyOp::create(builder, loc, source, out, streams.d2h);
      Value copied = dscrt::RecordOp::create(builder, loc, streams.d2h);
      streams.toHost.add(result, copied);
      streams.fromDevice.add(input, copied);
      streams.fromDevice.bound(builder, loc, kTransfersInFlight);
      buffers.map(result, out);
      return;
    }
    ensure(streams.h2d, "h2d");
    ensure(streams.host, "host");
    streams.toHost.waitFor(builder, loc, input); // a tensor copied to the host and straight back
    if (Value read = streams.parameterReads.lookup(input)) // from NVMe
      dscrt::WaitOp::create(builder, loc, streams.h2d, read);
    dscrt::WaitOp::create(builder, loc, streams.h2d,
                          dscrt::RecordOp::create(builder, loc, streams.host));
    dscrt::WaitOp::create(builder, loc, streams.h2d,
                          dscrt::RecordOp::create(builder, loc, streams.compute));
    Value out = dscrt::AllocOp::create(builder, loc, bufferType(result.getType()));
    dscrt::CopyOp::create(builder, loc, source, out, streams.h2d);
    streams.fromH2d.record(builder, loc, result);
    buffers.map(result, out);
  }

  /// The buffer a multi-tensor update's `result` overwrites when it is not
  /// stored in place: that of the operand it updates, when that is a
  /// rank's shard copied for this op alone (ZeRO's parameter shard, which
  /// is gathered afterwards); null otherwise (a new buffer, which the
  /// library call fills from the operand first).
  static Value updatedTemporary(Value result, IRMapping &buffers) {
    auto update = result.getDefiningOp<MultiTensorUpdateOpInterface>();
    if (!update)
      return {};
    Value operand =
        update.getUpdatedOperand(cast<OpResult>(result).getResultNumber());
    if (!operand || !operand.hasOneUse() || !operand.getDefiningOp<LocalShardOp>())
      return {};
    return buffers.lookup(operand);
  }

  /// Where `op`'s kernel is emitted: at the last op of its fused group.
  static Operation *emittedAt(const DenseMap<Operation *, Operation *> &root,
                              Operation *op) {
    Operation *last = root.lookup(op);
    return last ? last : op;
  }

  /// The op (a group's root) after which every output of the graph has its
  /// final value; null when the outputs need no op (a state returned as is).
  Operation *lastOutputProducer(ArrayRef<Value> outputs,
                                const DenseMap<Operation *, Operation *> &root) {
    return lastProducer(outputs,
                        [&](Operation *op) { return emittedAt(root, op); });
  }

  /// The stores whose value its kernel writes straight into the state's
  /// memory, instead of a buffer the store then copies (an optimizer's
  /// parameters and moments, a gradient accumulator: a copy of every state
  /// each step otherwise). The value must be computed by an elementwise
  /// kernel, and every read of the state's old value must come before that
  /// kernel, or be inside it at the element it writes (an operand of the
  /// loop's own shape: each element is read before it is written). A read
  /// by a collective keeps the copy: the comm stream may still be reading
  /// when compute writes. Maps each such value to its store.
  DenseMap<Value, StoreOp>
  inPlaceStores(Block &body, const DenseMap<Operation *, Operation *> &root) {
    DenseMap<StringAttr, SmallVector<LoadOp>> loads;
    for (auto load : body.getOps<LoadOp>())
      loads[load.getStateAttr().getAttr()].push_back(load);
    DenseMap<Value, StoreOp> inPlace;
    for (auto store : body.getOps<StoreOp>()) {
      Value value = store.getValue();
      Operation *def = value.getDefiningOp();
      auto update = dyn_cast_or_null<MultiTensorUpdateOpInterface>(def);
      if (!def || def->getBlock() != &body ||
          !(isElementwise(def) || update) || inPlace.contains(value))
        continue;
      // A multi-tensor update reads, of the state it overwrites, the one
      // operand whose new value the stored result is, each element before
      // writing it.
      Value updated = update ? update.getUpdatedOperand(
                                   cast<OpResult>(value).getResultNumber())
                             : Value();
      Operation *kernelAt = emittedAt(root, def);
      ArrayRef<int64_t> shape = cast<RankedTensorType>(value.getType()).getShape();
      auto readsBefore = [&](OpOperand &use) {
        Operation *user = use.getOwner();
        if (isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
                LocalShardOp, TransferOp, PipelineSendOp>(user))
          return false;
        Operation *at = emittedAt(root, user);
        if (at == kernelAt && update)
          return user == def && use.get() == updated &&
                 llvm::count(def->getOperands(), updated) == 1;
        if (at == kernelAt)
          return isElementwise(user) &&
                 cast<RankedTensorType>(use.get().getType()).getShape() == shape;
        return at->isBeforeInBlock(kernelAt);
      };
      bool safe = true;
      SmallVector<Value> old;
      for (LoadOp load : loads.lookup(store.getStateAttr().getAttr()))
        old.push_back(load.getResult());
      while (safe && !old.empty()) {
        Value v = old.pop_back_val();
        for (OpOperand &use : v.getUses()) {
          if (auto view = dyn_cast<ReshapeOp>(use.getOwner())) {
            old.push_back(view.getResult()); // a view reads the same memory
            continue;
          }
          if (!readsBefore(use)) {
            safe = false;
            break;
          }
        }
      }
      if (safe)
        inPlace[value] = store;
    }
    return inPlace;
  }

  /// A store writes the state's memory in place, so every read of the old
  /// value (a use of a dsc.load of the state, at the position its kernel is
  /// emitted) must come before it, and no load may follow it.
  LogicalResult checkStoreOrder(Block &body,
                                const DenseMap<Operation *, Operation *> &root) {
    DenseMap<StringAttr, StoreOp> stores;
    for (auto store : body.getOps<StoreOp>())
      stores[store.getStateAttr().getAttr()] = store;
    if (stores.empty())
      return success();
    for (auto load : body.getOps<LoadOp>()) {
      StoreOp store = stores.lookup(load.getStateAttr().getAttr());
      if (!store)
        continue;
      if (store->isBeforeInBlock(load))
        return load.emitError() << "reads " << load.getStateAttr()
                                << " after it is stored; move the load before "
                                   "the dsc.store";
      for (Operation *user : load->getUsers()) {
        if (user != store && store->isBeforeInBlock(emittedAt(root, user)))
          return user->emitError()
                 << "reads the old value of " << load.getStateAttr()
                 << " after the dsc.store that overwrites it";
      }
    }
    return success();
  }

  /// One dscrt.kernel computing `group` (in program order). Its outputs
  /// are the last op's results and every other result of the group read
  /// outside it (stored: --dsc-form-kernels joins no other reader).
  void emitKernel(OpBuilder &builder, Value stream, ArrayRef<Operation *> group,
                  IRMapping &buffers,
                  llvm::function_ref<MemRefType(Value)> typeOf,
                  llvm::function_ref<Value(Value, Location)> stateFor) {
    Operation *last = group.back();
    llvm::SmallPtrSet<Operation *, 8> inGroup(group.begin(), group.end());
    llvm::SetVector<Value> inputs;
    for (Operation *op : group)
      for (Value operand : op->getOperands())
        if (!inGroup.contains(operand.getDefiningOp()))
          inputs.insert(operand);
    SmallVector<Value> results;
    for (Operation *op : group)
      for (Value result : op->getResults())
        if (op == last || llvm::any_of(result.getUsers(), [&](Operation *user) {
              return !inGroup.contains(user);
            }))
          results.push_back(result);
    SmallVector<Value> ins, outs;
    for (Value input : inputs)
      ins.push_back(buffers.lookup(input));
    for (Value result : results) {
      Value state = stateFor(result, last->getLoc());
      outs.push_back(state ? state
                           : dscrt::AllocOp::create(builder, last->getLoc(),
                                                    typeOf(result)));
    }
    auto kernel =
        dscrt::KernelOp::create(builder, last->getLoc(), stream, ins, outs);
    Block &block = kernel.getBody().front();
    OpBuilder inner = OpBuilder::atBlockEnd(&block);
    IRMapping values;
    for (auto [input, arg] : llvm::zip(inputs, block.getArguments()))
      values.map(input, arg);
    // The fusion decision is spent: the kernel is the group.
    for (Operation *op : group)
      inner.clone(*op, values)->removeAttr(DSCDialect::kFusionGroupAttrName);
    SmallVector<Value> yielded;
    for (Value result : results)
      yielded.push_back(values.lookup(result));
    dscrt::YieldOp::create(inner, last->getLoc(), yielded);
    for (auto [result, out] : llvm::zip(results, outs))
      buffers.map(result, out);
  }
};
} // namespace
