//===- ConvertToRuntime.cpp - dsc graph -> dscrt buffers and kernels ------===//
//
// The conversion proper of the lowering: the graph, decomposed and ordered
// (--dsc-decompose-for-library) with its kernels formed (--dsc-form-kernels),
// becomes the step of runtime calls: buffers, kernels, collectives and
// copies, all on one stream in program order (a serial step, which
// --dscrt-assign-streams spreads over the streams that run beside compute).
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

namespace {
/// ZeRO-Infinity's static schedule of NVMe reads and writes. The host
/// updates that read NVMe states (the sub-groups of --dsc-offload) are
/// numbered in program order; the states of sub-group k are read into host
/// buffers once sub-group k - depth has been written back (the first
/// `depth` sub-groups when the read-ahead starts: once the step is sure to
/// reach the update, after its evaluation or micro-step exit), and written
/// back right after their update. --dscrt-assign-streams puts the reads and
/// writes on the "nvme" stream, which runs in order, so a read that
/// follows a write may reuse its buffer's memory: at
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
    // Every launch goes on one stream, in program order: a serial step,
    // which --dscrt-assign-streams spreads over the streams that run work
    // beside compute. Collectives, which the runtime runs on the stream it
    // binds its communicator to, go on "comm", created with the first.
    Value stream = dscrt::StreamOp::create(builder, graph.getLoc(),
                                           dscrt::DSCRTDialect::kComputeStreamName);
    Value comm;
    auto commStream = [&] {
      if (!comm) {
        OpBuilder after(stream.getDefiningOp());
        after.setInsertionPointAfter(stream.getDefiningOp());
        comm = dscrt::StreamOp::create(after, graph.getLoc(),
                                       dscrt::DSCRTDialect::kCollectiveStreamName);
      }
      return comm;
    };

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
      dscrt::CopyOp::create(builder, value.getLoc(), host, device, stream);
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
    // Reads the NVMe parameter loads up to `last` (in program order) into
    // new host buffers, which their copies to the device read.
    auto readParametersUpTo = [&](Location loc, int64_t last) {
      while (nvme->nextParamRead < nvme->paramLoads.size() &&
             int64_t(nvme->nextParamRead) <= last) {
        LoadOp load = nvme->paramLoads[nvme->nextParamRead++];
        Value buffer =
            dscrt::AllocOp::create(builder, loc, typeOf(load.getResult()));
        dscrt::NvmeReadOp::create(builder, loc,
                                  stateIndex.lookup(load.getStateAttr().getAttr()),
                                  load.getState(), buffer, stream);
        buffers.map(load.getResult(), buffer);
      }
    };
    // Reads sub-group `group`'s NVMe states into new host buffers, which
    // its update then reads and writes in place.
    auto readGroup = [&](Location loc, unsigned group) {
      for (LoadOp load : nvme->groups[group]) {
        Value buffer = dscrt::AllocOp::create(builder, loc, typeOf(load.getResult()));
        dscrt::NvmeReadOp::create(builder, loc,
                                  stateIndex.lookup(load.getStateAttr().getAttr()),
                                  load.getState(), buffer, stream);
        buffers.map(load.getResult(), buffer);
        nvme->staging[load.getStateAttr()] = buffer;
      }
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
      for (StoreOp store : stores)
        dscrt::NvmeWriteOp::create(
            builder, loc, nvme->staging.lookup(store.getStateAttr()),
            stateIndex.lookup(store.getStateAttr().getAttr()), store.getState(),
            stream);
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
    // Each output is a host buffer filled by a copy.
    auto emitOutputs = [&](Location loc, ArrayRef<Value> which) {
      for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
        if (!llvm::is_contained(which, value))
          continue;
        auto name = graph.getResultAttrOfType<StringAttr>(
            i, DSCDialect::kOutputAttrName);
        Value host = dscrt::OutputOp::create(
            builder, loc, hostBufferType(value.getType()), i,
            name ? name.getValue() : StringRef(""));
        dscrt::CopyOp::create(builder, loc, buffers.lookup(value), host,
                              stream);
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

    // Copied into the state's memory, after every read of the old value
    // (checkStoreOrder).
    SmallVector<StoreOp> deferredStores;
    auto emitStore = [&](StoreOp store) {
      Location loc = store.getLoc();
      if (NvmeSchedule::isNvmeParameter(module, store.getStateAttr())) {
        // Written to its file from the value's buffer (no copy).
        dscrt::NvmeWriteOp::create(
            builder, loc, buffers.lookup(store.getValue()),
            stateIndex.lookup(store.getStateAttr().getAttr()), store.getState(),
            stream);
        return;
      }
      bool toNvme = NvmeSchedule::onNvme(module, store.getStateAttr());
      Value target =
          toNvme ? nvme->staging.lookup(store.getStateAttr())
                 : dscrt::StateOp::create(
                       builder, loc, typeOf(store.getValue()),
                       stateIndex.lookup(store.getStateAttr().getAttr()),
                       store.getState());
      auto copy = dscrt::KernelOp::create(
          builder, loc, stream, buffers.lookup(store.getValue()), target);
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
                                             hostBufferType(key.getType()),
                                             key.getSampleOffset()));
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
        // A view touches no memory. (A replicate is the identity once
        // autodiff has read it.)
        Value input = op.getOperand(0), result = op.getResult(0);
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
        dscrt::PipelineSendOp::create(
            builder, loc, buffers.lookup(send.getInput()), commStream(),
            send.getPeer(), send.getMicroBatch(), sequence++);
        auto zeroType = cast<RankedTensorType>(send.getZero().getType());
        buffers.map(send.getZero(),
                    dscrt::ConstantOp::create(
                        builder, loc, bufferType(zeroType),
                        DenseElementsAttr::get(zeroType, 0.0f)));
        continue;
      }
      if (auto recv = dyn_cast<PipelineRecvOp>(op)) {
        Value out = dscrt::AllocOp::create(builder, loc,
                                           bufferType(recv.getType()));
        dscrt::PipelineRecvOp::create(builder, loc, out, commStream(),
                                      recv.getPeer(), recv.getMicroBatch(),
                                      sequence++);
        buffers.map(recv.getResult(), out);
        continue;
      }
      if (isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp>(op)) {
        Value input = op.getOperand(0), result = op.getResult(0);
        Value source = buffers.lookup(input);
        Value out = dscrt::AllocOp::create(builder, loc,
                                           bufferType(result.getType()));
        if (isa<AllReduceOp, AllToAllOp>(op)) {
          // Copy, then reduce or exchange in place: the input buffer may
          // have other users.
          auto copy =
              dscrt::KernelOp::create(builder, loc, stream, source, out);
          OpBuilder inner = OpBuilder::atBlockEnd(&copy.getBody().front());
          dscrt::YieldOp::create(inner, loc,
                                 copy.getBody().front().getArgument(0));
        }
        CollectiveGroup over = *getCollectiveGroup(&op);
        if (auto reduce = dyn_cast<AllReduceOp>(op))
          dscrt::AllReduceOp::create(builder, loc, out, commStream(), sequence++,
                                     over, reduce.getMaximum())
              .setStagesAttr(reduce.getStagesAttr());
        else if (isa<AllToAllOp>(op))
          dscrt::AllToAllOp::create(builder, loc, out, commStream(), sequence++,
                                    over);
        else if (isa<AllGatherOp>(op))
          dscrt::AllGatherOp::create(builder, loc, source, out, commStream(),
                                     sequence++, over);
        else
          dscrt::ReduceScatterOp::create(builder, loc, source, out,
                                         commStream(), sequence++, over);
        buffers.map(result, out);
        continue;
      }
      if (auto transfer = dyn_cast<TransferOp>(op)) {
        lowerTransfer(builder, transfer, stream, buffers);
        continue;
      }
      if (auto shard = dyn_cast<LocalShardOp>(op)) {
        Value out =
            dscrt::AllocOp::create(builder, loc, bufferType(shard.getType()));
        dscrt::CopyShardOp::create(builder, loc,
                                   buffers.lookup(shard.getInput()), out,
                                   stream, shard.getGroup());
        buffers.map(shard.getResult(), out);
        continue;
      }
      if (root.lookup(&op) != &op)
        continue; // emitted with its group's last op
      if (!op.getDialect() || !isa<DSCDialect>(op.getDialect()))
        return op.emitError() << "cannot lower '" << op.getName()
                              << "' to the runtime";
      std::optional<unsigned> nvmeGroup;
      if (auto it = nvme->groupOf.find(&op); it != nvme->groupOf.end()) {
        nvmeGroup = it->second;
        readUpTo(loc, *nvmeGroup); // when the read-ahead has not reached it
      }
      emitKernel(builder, stream, members[&op],
                 buffers, typeOf,
                 [&](Value result, Location at) -> Value {
                   StoreOp store = inPlace.lookup(result);
                   if (!store)
                     return updatedTemporary(result, buffers);
                   if (Value staged = nvme->staging.lookup(store.getStateAttr()))
                     return staged;
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

  /// A dsc.transfer: a copy into a new buffer of the other memory.
  static void lowerTransfer(OpBuilder &builder, TransferOp transfer,
                            Value stream, IRMapping &buffers) {
    Location loc = transfer.getLoc();
    Value result = transfer.getResult();
    bool toHost = transfer.getTier() == MemoryTier::host;
    Value out = dscrt::AllocOp::create(builder, loc,
                                       toHost ? hostBufferType(result.getType())
                                              : bufferType(result.getType()));
    dscrt::CopyOp::create(builder, loc, buffers.lookup(transfer.getInput()), out,
                          stream);
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
