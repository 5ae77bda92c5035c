//===- StepReport.cpp - per-rank memory and communication of a step -------===//

#include "dsc/Analysis/StepReport.h"

#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Support/TensorSize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/DebugStringHelper.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::dsc;

/// The runtime's MemoryPool counts every allocation at this multiple.
static constexpr int64_t kAllocatorAlignment = 256;

static int64_t roundUp(int64_t bytes) {
  return int64_t(llvm::alignTo(uint64_t(bytes), kAllocatorAlignment));
}

static int64_t elementBytes(Type element) {
  return bytesPerElement(element.getIntOrFloatBitWidth());
}

/// Bytes of a tensor type (verified modules: no overflow).
static int64_t tensorBytes(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return checkedByteSize(tensor.getShape(),
                         tensor.getElementType().getIntOrFloatBitWidth())
      .value_or(0);
}

int64_t mlir::dsc::collectiveBytesSent(StringRef kind, int64_t payload,
                                       int64_t world) {
  if (world <= 1)
    return 0;
  if (kind == "all_reduce")
    return 2 * (world - 1) * payload / world;
  return (world - 1) * payload; // all_gather, reduce_scatter, all_to_all
}

double mlir::dsc::collectiveBusBytes(StringRef kind, int64_t payload,
                                     int64_t world) {
  if (world <= 1)
    return 0;
  double n = double(world);
  // nccl-tests' size is the whole buffer for all_reduce, and the N-rank
  // total (N * the per-rank part) for all_gather and reduce_scatter.
  if (kind == "all_reduce")
    return double(payload) * 2 * (n - 1) / n;
  return double(payload) * n * (n - 1) / n;
}

/// Whether `gather` assembles stage-3 parameters: loaded shards, or a
/// bucket of them.
static bool gathersLoadedShards(Operation &gather) {
  Operation *input = gather.getOperand(0).getDefiningOp();
  if (auto concat = dyn_cast_or_null<ConcatOp>(input))
    return llvm::all_of(concat.getInputs(),
                        [](Value v) { return v.getDefiningOp<LoadOp>(); });
  return isa_and_nonnull<LoadOp>(input);
}

/// The most bytes of gathered parameters waiting, at one op, for their
/// first reader other than that op: stage-3 gathers issued ahead of use.
/// Reshapes and slices only view a gathered tensor; each member of a
/// bucketed gather (a slice of it) waits on its own.
static int64_t prefetchedBytes(Block &block) {
  DenseMap<Value, Operation *> pieceOf; // views of a gathered tensor
  DenseSet<Value> buckets;              // views of a bucketed gather
  llvm::SetVector<Operation *> waiting; // pieces not read yet
  auto bytes = [](Operation *piece) {
    return tensorBytes(piece->getResult(0).getType());
  };
  int64_t waitingBytes = 0, most = 0;
  auto issue = [&](Operation *piece) {
    pieceOf[piece->getResult(0)] = piece;
    waiting.insert(piece);
    waitingBytes += bytes(piece);
  };
  for (Operation &op : block) {
    if (isa<ReshapeOp, SliceOp>(op)) {
      Value input = op.getOperand(0);
      if (buckets.contains(input)) {
        if (isa<SliceOp>(op))
          issue(&op); // a member
        else
          buckets.insert(op.getResult(0));
        continue;
      }
      if (Operation *piece = pieceOf.lookup(input)) {
        pieceOf[op.getResult(0)] = piece;
        continue;
      }
    }
    llvm::SetVector<Operation *> read;
    for (Value operand : op.getOperands())
      if (Operation *piece = pieceOf.lookup(operand))
        if (waiting.contains(piece))
          read.insert(piece);
    int64_t readBytes = 0;
    for (Operation *piece : read)
      readBytes += bytes(piece);
    most = std::max(most, waitingBytes - readBytes);
    for (Operation *piece : read) {
      waiting.remove(piece);
      waitingBytes -= bytes(piece);
    }
    if (isa<AllGatherOp>(op) && gathersLoadedShards(op)) {
      if (op.hasAttr(DSCDialect::kBucketAttrName))
        buckets.insert(op.getResult(0));
      else
        issue(&op);
    }
  }
  return most;
}

StepReport StepReport::compute(ModuleOp module, int64_t arenaBytes) {
  StepReport report;
  report.worldSize = lookupWorldSize(module).value_or(1);
  report.tensorParallelSize = lookupTensorParallelSize(module);
  if (auto experts = module->getAttrOfType<IntegerAttr>(
          kExpertParallelSizeAttrName);
      experts && experts.getInt() >= 1) {
    report.expertParallelSize = experts.getInt();
    // The expert groups lie within a pipeline stage, along its data
    // dimension (the verifiers of the mesh's sizes have run).
    if (FailureOr<int64_t> replicas =
            lookupGroupSize(module, CollectiveGroup::expert_data);
        succeeded(replicas))
      report.expertDataSize = *replicas;
  }
  if (auto stage = module->getAttrOfType<IntegerAttr>(
          DSCDialect::kZeroStageAttrName))
    report.zeroStage = stage.getInt();
  if (auto accum = module->getAttrOfType<IntegerAttr>(
          DSCDialect::kGradAccumAttrName))
    report.gradAccum = accum.getInt();
  if (auto stages = module->getAttrOfType<IntegerAttr>(
          kPipelineParallelSizeAttrName))
    report.pipelineParallelSize = stages.getInt();
  if (auto stage = module->getAttrOfType<IntegerAttr>(kPipelineStageAttrName))
    report.pipelineStage = stage.getInt();
  if (auto micro = module->getAttrOfType<IntegerAttr>(
          kPipelineMicroBatchesAttrName))
    report.pipelineMicroBatches = micro.getInt();
  if (auto chunks = module->getAttrOfType<IntegerAttr>(kPipelineChunksAttrName))
    report.pipelineChunks = chunks.getInt();
  if (auto threshold = module->getAttrOfType<IntegerAttr>(
          DSCDialect::kZeroPersistenceThresholdAttrName))
    report.stage3.persistenceThreshold = threshold.getInt();
  if (auto flops = module->getAttrOfType<IntegerAttr>(
          DSCDialect::kTeacherFlopsAttrName))
    report.teacherFlops = flops.getInt();
  RankMemory &m = report.memory;
  m.activations = arenaBytes;

  func::FuncOp graph;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      graph = func;
  llvm::StringSet<> stored;
  if (graph)
    graph.walk([&](StoreOp store) {
      stored.insert(store.getStateAttr().getValue());
    });

  llvm::StringMap<int64_t> moduleElements;
  for (auto state : module.getOps<StateOp>()) {
    if (state.getRole() == StateRole::parameter) {
      int64_t &sum =
          moduleElements[state.getSymName().rsplit('.').first];
      sum += state.getWholeType().getNumElements();
      report.largestModuleElements =
          std::max(report.largestModuleElements, sum);
    }
    int64_t bytes = tensorBytes(state.getType());
    if (state.getTier() == MemoryTier::host) {
      m.hostStateAllocation += roundUp(bytes);
      (state.getRole() == StateRole::master      ? m.hostMaster
       : state.getRole() == StateRole::parameter ? m.hostParameters
       : state.getRole() == StateRole::teacher   ? m.hostTeacher
                                                 : m.hostOptimizer) += bytes;
    } else if (state.getTier() == MemoryTier::nvme) {
      // The store's layout (NvmeStore::addState): a state of a block or
      // more starts at a block boundary, a smaller one at the next page.
      constexpr int64_t kBlock = int64_t(1) << 20; // NvmeOptions::blockBytes
      constexpr int64_t kPage = 4096;              // kDirectAlignment
      int64_t align = bytes >= kBlock ? kBlock : kPage;
      m.nvmeFile = (m.nvmeFile + align - 1) / align * align +
                   (bytes + kPage - 1) / kPage * kPage;
      (state.getRole() == StateRole::master      ? m.nvmeMaster
       : state.getRole() == StateRole::parameter ? m.nvmeParameters
       : state.getRole() == StateRole::teacher   ? m.nvmeTeacher
                                                 : m.nvmeOptimizer) += bytes;
    } else {
      m.stateAllocation += roundUp(bytes);
    }
    // An expert's state: split over its expert group, and partitioned
    // further over its expert-data group by ZeRO.
    CollectiveGroup group = state.getPartitionGroup();
    bool expert = group == CollectiveGroup::expert ||
                  group == CollectiveGroup::expert_data;
    bool stateOfModel = state.getRole() != StateRole::buffer &&
                        state.getRole() != StateRole::teacher;
    if (expert)
      m.expertStates += bytes;
    if (group == CollectiveGroup::expert_data)
      m.expertStatesOverExpertData += bytes;
    if (!expert && state.getPartitionOf() && stateOfModel)
      m.worldStatesPartitioned += bytes;
    switch (state.getRole()) {
    case StateRole::parameter: {
      m.parameters += bytes;
      if (!stored.contains(state.getSymName()))
        break; // frozen: no gradient, no update
      // The reduced gradient the update reads: whole below stage 2, this
      // rank's shard of it from stage 2 on (--dsc-zero reduce-scatters).
      RankedTensorType whole = state.getWholeType();
      int64_t numel = whole.getNumElements();
      report.parameterElements += numel;
      if (report.stage3.persistenceThreshold >= 0 && !expert) {
        Stage3Parameters &p = report.stage3;
        if (state.getPartitionOf()) {
          ++p.partitioned;
          p.partitionedElements += numel;
        } else {
          ++p.whole;
          p.wholeElements += numel;
          p.underThreshold += numel <= p.persistenceThreshold;
        }
      }
      // An expert's gradient is its rank's experts only, from stage 2 on
      // its shard over the expert-data group.
      int64_t ranks = report.worldSize;
      if (expert) {
        FailureOr<int64_t> experts =
            lookupGroupSize(state, CollectiveGroup::expert);
        FailureOr<int64_t> replicas =
            lookupGroupSize(state, CollectiveGroup::expert_data);
        if (succeeded(experts) && succeeded(replicas)) {
          numel /= *experts;
          ranks = *replicas;
        }
      }
      if (report.stage3.persistenceThreshold >= 0 && expert) {
        Stage3Parameters &p = report.stage3;
        ++p.experts;
        if (group == CollectiveGroup::expert_data)
          ++p.expertsPartitioned;
        else
          p.expertsUnderThreshold += numel <= p.persistenceThreshold;
      }
      // A tensor-parallel weight's gradient is its slice (numel / T), from
      // stage 2 on its shard over the data group, as any other state's
      // under tensor parallelism (ZeRO partitions over `data`).
      if (report.tensorParallelSize > 1 && !expert) {
        bool slice = group == CollectiveGroup::tensor ||
                     (group == CollectiveGroup::data &&
                      state.getPartitionBlocks());
        if (slice)
          numel /= report.tensorParallelSize;
        ranks = report.worldSize / report.tensorParallelSize;
      }
      int64_t perRank = report.zeroStage >= 2 ? shardSize(numel, ranks) : numel;
      // The gradient has the parameter's element type (16-bit in mixed
      // precision: autodiff differentiates the 16-bit parameter).
      int64_t gradientBytes = perRank * elementBytes(whole.getElementType());
      m.gradients += gradientBytes;
      bool scattered = report.zeroStage >= 2 && ranks > 1;
      if (expert)
        m.expertStates += gradientBytes;
      if (expert && scattered)
        m.expertStatesOverExpertData += gradientBytes;
      if (!expert && scattered)
        m.worldStatesPartitioned += gradientBytes;
      break;
    }
    case StateRole::buffer:
      m.buffers += bytes;
      break;
    case StateRole::teacher:
      m.teacher += bytes;
      break;
    case StateRole::optimizer:
      m.optimizer += bytes;
      break;
    case StateRole::gradient: // accumulators of gradient accumulation
      m.gradients += bytes;
      break;
    case StateRole::master: // fp32 master weights (mixed precision)
      m.master += bytes;
      break;
    }
  }

  if (!graph)
    return report;
  for (Type type : graph.getArgumentTypes())
    m.io += roundUp(tensorBytes(type));
  for (Type type : graph.getResultTypes())
    m.io += roundUp(tensorBytes(type));
  // Behind the boundary of gradient accumulation: once per update.
  DenseSet<Operation *> perUpdate;
  graph.walk([&](Operation *op) {
    if (isa<OptimizerBoundaryOp>(op) ||
        llvm::any_of(op->getOperands(), [&](Value v) {
          return v.getDefiningOp() && perUpdate.contains(v.getDefiningOp());
        }))
      perUpdate.insert(op);
  });
  graph.walk([&](Operation *op) {
    // A pipeline stage's transfers: each op is one call per step (the
    // micro-batches are unrolled into the stage's program), the whole
    // payload sent to, or received from, one neighbouring stage. dsc-run
    // counts a receive's bytes as none sent.
    if (isa<PipelineSendOp, PipelineRecvOp>(op)) {
      bool send = isa<PipelineSendOp>(op);
      Type type =
          send ? op->getOperand(0).getType() : op->getResult(0).getType();
      CollectiveReport c;
      c.kind = send ? "send" : "recv";
      c.group = stringifyCollectiveGroup(CollectiveGroup::pipeline).str();
      FailureOr<int64_t> stages =
          lookupGroupSize(op, CollectiveGroup::pipeline);
      c.groupSize = succeeded(stages) ? *stages : 1;
      Type element = cast<RankedTensorType>(type).getElementType();
      c.element = debugString(element);
      c.elementBytes = elementBytes(element);
      c.location = debugString(op->getLoc());
      c.payloadBytes = tensorBytes(type);
      c.bytesSent = send ? c.payloadBytes : 0;
      c.busBytes = double(c.bytesSent);
      report.collectives.push_back(std::move(c));
      return;
    }
    StringRef kind;
    Value payload;
    int64_t blocks = 1; // the payload is 1 / blocks of the value
    if (auto allReduce = dyn_cast<AllReduceOp>(op)) {
      kind = "all_reduce";
      payload = allReduce.getInput();
    } else if (auto allGather = dyn_cast<AllGatherOp>(op)) {
      kind = "all_gather";
      payload = allGather.getInput(); // this rank's contribution
    } else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
      kind = "reduce_scatter";
      payload = scatter.getResult(); // this rank's share
    } else if (auto exchange = dyn_cast<AllToAllOp>(op)) {
      kind = "all_to_all";
      payload = exchange.getInput(); // one block per rank of the group
    } else {
      return;
    }
    CollectiveReport c;
    c.kind = kind.str();
    CollectiveGroup over = *getCollectiveGroup(op);
    c.group = stringifyCollectiveGroup(over).str();
    FailureOr<int64_t> ranks = over == CollectiveGroup::world
                                   ? FailureOr<int64_t>(report.worldSize)
                                   : lookupGroupSize(op, over);
    c.groupSize = succeeded(ranks) ? *ranks : 1;
    // A sum over some stages of the pipeline (a tied weight's): the group
    // of those stages, named as dsc-run names it ("pipeline[0,3]").
    if (auto reduce = dyn_cast<AllReduceOp>(op); reduce && reduce.getStages()) {
      ArrayRef<int64_t> stages = *reduce.getStages();
      c.group += "[";
      llvm::raw_string_ostream os(c.group);
      llvm::interleave(stages, os, ",");
      os << "]";
      c.groupSize = stages.size();
    }
    if (kind == "all_to_all")
      blocks = c.groupSize;
    Type element = cast<RankedTensorType>(payload.getType()).getElementType();
    c.element = debugString(element);
    c.elementBytes = elementBytes(element);
    c.location = debugString(op->getLoc());
    c.callsPerUpdate = perUpdate.contains(op) ? 1 : report.gradAccum;
    c.payloadBytes = tensorBytes(payload.getType()) / blocks;
    c.bytesSent = collectiveBytesSent(kind, c.payloadBytes, c.groupSize);
    c.busBytes = collectiveBusBytes(kind, c.payloadBytes, c.groupSize);
    if (auto members =
            op->getAttrOfType<IntegerAttr>(DSCDialect::kBucketAttrName)) {
      c.members = members.getInt();
      m.buckets = std::max(m.buckets, tensorBytes(op->getOperand(0).getType()) +
                                          tensorBytes(op->getResult(0).getType()));
    }
    report.collectives.push_back(std::move(c));
  });
  if (graph.getBody().hasOneBlock())
    m.prefetch = prefetchedBytes(graph.getBody().front());
  return report;
}

int64_t StepReport::bytesSentPerStep() const {
  int64_t total = 0;
  for (const CollectiveReport &c : collectives)
    total += c.bytesSent * c.callsPerUpdate;
  return total;
}

double StepReport::volumeInPsi() const {
  if (worldSize <= 1 || parameterElements == 0)
    return 0;
  double elements = 0;
  // ZeRO's volume is the collectives' traffic in parameters; a pipeline's
  // transfers carry activations, whose size follows the batch, not Psi.
  for (const CollectiveReport &c : collectives)
    if (!c.isTransfer())
      elements +=
          double(c.bytesSent * c.callsPerUpdate) / double(c.elementBytes);
  double n = double(worldSize);
  return elements / ((n - 1) / n) /
         double(parameterElements);
}

DeepSpeedEstimate StepReport::estimate() const {
  // DeepSpeed truncates the per-rank share to an integer, as here.
  int64_t psi = parameterElements, n = worldSize;
  int64_t largest = 4 * largestModuleElements; // its 16-bit params + grads
  DeepSpeedEstimate e;
  e.zero2 = 2 * psi + 18 * psi / n;
  e.zero2OffloadOptimizer = 2 * psi;
  e.zero3 = largest + 18 * psi / n;
  e.zero3OffloadOptimizer = largest + 2 * psi / n;
  e.zero3OffloadAll = largest;
  return e;
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

/// 1234567 -> "1,234,567".
static std::string grouped(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

/// Decimal gigabytes, as the ZeRO paper counts them.
static std::string gigabytes(double bytes) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.2f GB", bytes / 1e9);
  return text;
}

namespace {
/// A collective kind's calls of one element type, per update.
struct CollectiveTally {
  std::string kind, element; // kind: "all_reduce", or "all_reduce[expert]" off the world
  int64_t calls = 0, payloadBytes = 0, bytesSent = 0;
  double busBytes = 0;
};
} // namespace

static std::vector<CollectiveTally> tallyCollectives(const StepReport &r) {
  std::vector<CollectiveTally> groups;
  for (const CollectiveReport &c : r.collectives) {
    std::string kind =
        c.group == "world" ? c.kind : c.kind + "[" + c.group + "]";
    auto it = llvm::find_if(groups, [&](const CollectiveTally &g) {
      return g.kind == kind && g.element == c.element;
    });
    if (it == groups.end()) {
      groups.push_back({kind, c.element});
      it = std::prev(groups.end());
    }
    it->calls += c.callsPerUpdate;
    it->payloadBytes += c.payloadBytes * c.callsPerUpdate;
    it->bytesSent += c.bytesSent * c.callsPerUpdate;
    it->busBytes += c.busBytes * double(c.callsPerUpdate);
  }
  return groups;
}

/// Binary gigabytes with two decimals, as DeepSpeed's estimator prints.
static std::string gibibytes(int64_t bytes) {
  std::string text;
  llvm::raw_string_ostream(text)
      << llvm::format("%.2f GiB", double(bytes) / double(1ll << 30));
  return text;
}

/// The largest groups of buffers alive at the arena's busiest point, one a
/// line, and what the others add up to.
static void printArenaPeak(llvm::raw_ostream &os, const ArenaPeak &peak) {
  if (peak.groups.empty())
    return;
  constexpr size_t kShown = 8;
  os << "activations at their peak: " << grouped(peak.liveBytes)
     << " bytes live at op " << grouped(peak.position) << " of "
     << grouped(peak.positions) << " of the lowered step\n";
  for (const LiveBufferGroup &g : ArrayRef(peak.groups).take_front(kShown))
    os << llvm::format("  %20s  %10s", grouped(g.bytes).c_str(),
                       gigabytes(g.bytes).c_str())
       << "  " << g.buffers << " x " << g.type << ", written by " << g.writer
       << ", last read by " << g.lastReader << " (ops " << grouped(g.firstUse)
       << " to " << grouped(g.lastUse) << ")\n";
  int64_t restBytes = 0, restBuffers = 0;
  for (const LiveBufferGroup &g : ArrayRef(peak.groups).drop_front(
           std::min(kShown, peak.groups.size()))) {
    restBytes += g.bytes;
    restBuffers += g.buffers;
  }
  if (restBuffers)
    os << llvm::format("  %20s  %10s", grouped(restBytes).c_str(),
                       gigabytes(restBytes).c_str())
       << "  " << restBuffers << " other buffers\n";
}

void StepReport::printText(llvm::raw_ostream &os, Parts parts) const {
  int64_t microBatches = gradAccum * pipelineMicroBatches;
  os << "dsc report: world size " << worldSize;
  // Megatron's mesh: rank r at tensor index r % T, data index r / T; with
  // P stages of W / P ranks each, data index (r % (W / P)) / T and stage
  // r / (W / P).
  if (pipelineParallelSize > 1) {
    int64_t stageRanks = worldSize / pipelineParallelSize;
    std::string stageRank = "r % " + std::to_string(stageRanks);
    os << " (mesh: tensor " << tensorParallelSize << " x data "
       << stageRanks / tensorParallelSize << " x pipeline "
       << pipelineParallelSize << ", tensor innermost, then data: rank r at ";
    if (tensorParallelSize > 1)
      os << "tensor r % " << tensorParallelSize << ", data (" << stageRank
         << ") / " << tensorParallelSize << ", ";
    else if (stageRanks > 1)
      os << "data " << stageRank << ", ";
    os << "stage r / " << stageRanks << ")";
  } else if (tensorParallelSize > 1) {
    os << " (mesh: tensor " << tensorParallelSize << " x data "
       << worldSize / tensorParallelSize
       << ", tensor innermost: rank r at tensor r % " << tensorParallelSize
       << ", data r / " << tensorParallelSize << ")";
  }
  // Expert groups run along the data dimension, within a stage.
  if (expertParallelSize > 1)
    os << ", experts split over groups of " << expertParallelSize
       << " data-parallel ranks"
       << (pipelineParallelSize > 1 ? " of a stage" : "")
       << " (expert index: data index % " << expertParallelSize << ")";
  if (pipelineParallelSize > 1)
    os << ", pipeline stage " << pipelineStage << " of "
       << pipelineParallelSize;
  if (pipelineChunks > 1)
    os << " (" << pipelineChunks << " model chunks, interleaved)";
  os << ", ZeRO stage " << zeroStage
     << ", " << grouped(parameterElements) << " trained parameters (Psi), "
     << microBatches << " micro-batch" << (microBatches == 1 ? "" : "es")
     << " per update";
  // A stage's program runs all of a step's micro-batches in one call.
  if (pipelineParallelSize > 1)
    os << " (" << gradAccum << " call" << (gradAccum == 1 ? "" : "s")
       << " of the stage's step)";
  os << "\n";
  auto row = [&](StringRef name, int64_t bytes, StringRef note = "") {
    os << llvm::format("  %-18s %20s  %10s", name.str().c_str(),
                       grouped(bytes).c_str(), gigabytes(bytes).c_str());
    if (!note.empty())
      os << "  " << note;
    os << "\n";
  };
  if (parts.memory) {
    const RankMemory &m = memory;
    os << "memory per rank, bytes (every rank of " << worldSize
       << " the same)\n";
    row("parameters", m.parameters);
    row("gradients", m.gradients);
    row("master weights", m.master);
    row("optimizer state", m.optimizer);
    row("model states", m.modelStates(),
        "(parameters + gradients + master + optimizer)");
    if (m.expertStates) {
      row("  of experts", m.expertStates,
          "(this rank's experts: split over its expert group)");
      row("    partitioned", m.expertStatesOverExpertData,
          "(by ZeRO, over the expert_data group of " +
              std::to_string(expertDataSize) + " rank(s))");
      row("  of the others", m.modelStates() - m.expertStates);
    }
    // The data groups: the world's ranks of one tensor index and stage.
    const int64_t meshed = tensorParallelSize * pipelineParallelSize;
    if (m.worldStatesPartitioned)
      row(m.expertStates ? "    partitioned" : "  partitioned",
          m.worldStatesPartitioned,
          meshed > 1
              ? "(by ZeRO, over data groups of " +
                    std::to_string(worldSize / meshed) + " ranks)"
              : "(by ZeRO, over the world of " + std::to_string(worldSize) +
                    " ranks)");
    row("buffers", m.buffers);
    if (m.teacher)
      row("teacher weights", m.teacher,
          "(frozen: no gradient, master or optimizer state; its forward: " +
              std::to_string(teacherFlops) +
              " FLOPs of matrix products per micro-batch)");
    row("buckets", m.buckets);
    row("prefetch", m.prefetch);
    row("states allocated", m.stateAllocation, "(every state, 256-byte rounded)");
    row("activations", m.activations,
        "(the memory plan's arena; gradients live there until reduced)");
    row("inputs/outputs", m.io);
    row("peak", m.peak(), "(states allocated + activations + inputs/outputs)");
    if (m.pinned()) {
      os << "on the host (ZeRO-Offload), pinned memory per rank, bytes\n";
      row("master weights", m.hostMaster, "(of the model states above)");
      row("optimizer state", m.hostOptimizer, "(of the model states above)");
      if (m.hostParameters)
        row("parameters", m.hostParameters, "(of the model states above)");
      if (m.hostTeacher)
        row("teacher weights", m.hostTeacher, "(of the teacher weights above)");
      row("states allocated", m.hostStateAllocation,
          "(not in the device's states allocated)");
      row("host arena", m.hostArena, "(copies of gradients and updated parameters)");
      row("pinned", m.pinned());
    }
    if (m.nvmeFile) {
      os << "on NVMe (ZeRO-Infinity), this rank's file, bytes\n";
      row("master weights", m.nvmeMaster, "(of the model states above)");
      row("optimizer state", m.nvmeOptimizer, "(of the model states above)");
      if (m.nvmeParameters)
        row("parameters", m.nvmeParameters, "(of the model states above)");
      if (m.nvmeTeacher)
        row("teacher weights", m.nvmeTeacher, "(of the teacher weights above)");
      row("file", m.nvmeFile,
          "(states of 1 MiB or more 1 MiB-aligned, smaller ones 4 KiB-aligned)");
      os << "NVMe per update: reads " << transfers.nvmeReads << " ("
         << grouped(transfers.nvmeReadBytes) << " bytes), writes "
         << transfers.nvmeWrites << " (" << grouped(transfers.nvmeWriteBytes)
         << " bytes)\n";
    }
    os << "copies per update: device to host " << transfers.d2hCalls << " ("
       << grouped(transfers.d2hBytes) << " bytes), host to device "
       << transfers.h2dCalls << " (" << grouped(transfers.h2dBytes)
       << " bytes)\n";
    if (stage3.persistenceThreshold >= 0) {
      const Stage3Parameters &p = stage3;
      os << "stage 3 partitions " << p.partitioned << " of "
         << p.partitioned + p.whole << " trained parameters ("
         << grouped(p.partitionedElements) << " elements); " << p.whole
         << " stay whole on every rank (" << grouped(p.wholeElements)
         << " elements: " << p.underThreshold
         << " under the persistence threshold of "
         << grouped(p.persistenceThreshold) << " elements";
      if (p.whole > p.underThreshold)
        os << ", " << p.whole - p.underThreshold << " by the unshard budget";
      os << ")\n";
      if (p.experts)
        os << "  and of the " << p.experts
           << " experts' parameters (this rank's experts), "
           << p.expertsPartitioned
           << " partitioned over the expert_data group; "
           << p.experts - p.expertsPartitioned << " stay whole ("
           << p.expertsUnderThreshold
           << " under the persistence threshold)\n";
    }
    printArenaPeak(os, arenaPeak);
  }
  if (parts.comm) {
    os << "communication per update, per rank\n";
    os << llvm::format("  %-27s %-5s %8s %20s %20s %20s\n", "collective",
                       "type", "calls", "payload bytes", "bytes sent",
                       "bus bytes");
    int64_t calls = 0, payload = 0, sent = 0;
    double bus = 0;
    for (const CollectiveTally &g : tallyCollectives(*this)) {
      os << llvm::format("  %-27s %-5s %8lld %20s %20s %20s\n",
                         g.kind.c_str(), g.element.c_str(),
                         (long long)g.calls, grouped(g.payloadBytes).c_str(),
                         grouped(g.bytesSent).c_str(),
                         grouped(int64_t(g.busBytes + 0.5)).c_str());
      calls += g.calls;
      payload += g.payloadBytes;
      sent += g.bytesSent;
      bus += g.busBytes;
    }
    os << llvm::format("  %-27s %-5s %8lld %20s %20s %20s\n", "total", "",
                       (long long)calls, grouped(payload).c_str(),
                       grouped(sent).c_str(),
                       grouped(int64_t(bus + 0.5)).c_str());
    os << llvm::format("  volume: %.3f Psi elements per rank", volumeInPsi())
       << " (ZeRO: 2 Psi for data parallelism and stages 1-2, 3 Psi for "
          "stage 3)\n";
  }
  if (parts.estimate) {
    DeepSpeedEstimate e = estimate();
    os << "DeepSpeed's estimate of GPU model-state memory per rank "
          "(Psi = "
       << grouped(parameterElements) << ", largest module "
       << grouped(largestModuleElements) << " parameters, " << worldSize
       << " ranks)\n";
    auto line = [&](StringRef what, int64_t bytes) {
      os << llvm::format("  %-40s %20s  %12s\n", what.str().c_str(),
                         grouped(bytes).c_str(), gibibytes(bytes).c_str());
    };
    line("ZeRO-2", e.zero2);
    line("ZeRO-2, optimizer offloaded", e.zero2OffloadOptimizer);
    line("ZeRO-3", e.zero3);
    line("ZeRO-3, optimizer offloaded", e.zero3OffloadOptimizer);
    line("ZeRO-3, parameters and optimizer offloaded", e.zero3OffloadAll);
  }
}

void StepReport::printJson(llvm::raw_ostream &os, Parts parts) const {
  llvm::json::Object root{{"world_size", worldSize},
                          {"tensor_parallel_size", tensorParallelSize},
                          {"zero_stage", zeroStage},
                          {"grad_accum", gradAccum},
                          {"parameters", parameterElements}};
  if (teacherFlops)
    root["teacher_flops"] = teacherFlops;
  if (expertParallelSize > 1) {
    root["expert_parallel_size"] = expertParallelSize;
    root["expert_data_size"] = expertDataSize;
  }
  if (pipelineParallelSize > 1) {
    root["pipeline_parallel_size"] = pipelineParallelSize;
    root["pipeline_stage"] = pipelineStage;
    root["pipeline_micro_batches"] = pipelineMicroBatches;
    if (pipelineChunks > 1)
      root["pipeline_chunks"] = pipelineChunks;
  }
  if (parts.memory) {
    const RankMemory &m = memory;
    llvm::json::Array ranks;
    for (int64_t rank = 0; rank < worldSize; ++rank) {
      llvm::json::Object entry{
          {"rank", rank},
          {"parameters", m.parameters},
          {"gradients", m.gradients},
          {"master_weights", m.master},
          {"optimizer_state", m.optimizer},
          {"model_states", m.modelStates()},
          {"expert_states", m.expertStates},
          {"expert_states_over_expert_data", m.expertStatesOverExpertData},
          {"world_states_partitioned", m.worldStatesPartitioned},
          {"buffers", m.buffers},
          {"teacher_weights", m.teacher},
          {"buckets", m.buckets},
          {"prefetch", m.prefetch},
          {"states_allocated", m.stateAllocation},
          {"activations", m.activations},
          {"io", m.io},
          {"peak", m.peak()},
          {"host", llvm::json::Object{
                       {"master_weights", m.hostMaster},
                       {"optimizer_state", m.hostOptimizer},
                       {"parameters", m.hostParameters},
                       {"teacher_weights", m.hostTeacher},
                       {"states_allocated", m.hostStateAllocation},
                       {"arena", m.hostArena},
                       {"pinned", m.pinned()}}},
          {"transfers_per_update",
           llvm::json::Object{{"d2h_calls", transfers.d2hCalls},
                              {"d2h_bytes", transfers.d2hBytes},
                              {"h2d_calls", transfers.h2dCalls},
                              {"h2d_bytes", transfers.h2dBytes}}}};
      // ZeRO-Infinity's figures, in the reports of steps that have them.
      if (m.nvmeFile) {
        entry["nvme"] = llvm::json::Object{{"master_weights", m.nvmeMaster},
                                           {"optimizer_state", m.nvmeOptimizer},
                                           {"parameters", m.nvmeParameters},
                                           {"teacher_weights", m.nvmeTeacher},
                                           {"file", m.nvmeFile}};
        llvm::json::Object &perUpdate =
            *entry.getObject("transfers_per_update");
        perUpdate["nvme_reads"] = transfers.nvmeReads;
        perUpdate["nvme_read_bytes"] = transfers.nvmeReadBytes;
        perUpdate["nvme_writes"] = transfers.nvmeWrites;
        perUpdate["nvme_write_bytes"] = transfers.nvmeWriteBytes;
      }
      ranks.push_back(std::move(entry));
    }
    if (stage3.persistenceThreshold >= 0) {
      llvm::json::Object parameters{
          {"partitioned", stage3.partitioned},
          {"partitioned_elements", stage3.partitionedElements},
          {"whole", stage3.whole},
          {"whole_elements", stage3.wholeElements},
          {"under_persistence_threshold", stage3.underThreshold},
          {"persistence_threshold", stage3.persistenceThreshold}};
      if (stage3.experts) {
        parameters["experts"] = stage3.experts;
        parameters["experts_partitioned"] = stage3.expertsPartitioned;
        parameters["experts_under_persistence_threshold"] =
            stage3.expertsUnderThreshold;
      }
      root["stage3_parameters"] = std::move(parameters);
    }
    root["memory"] = std::move(ranks);
    llvm::json::Array groups;
    for (const LiveBufferGroup &g : arenaPeak.groups)
      groups.push_back(llvm::json::Object{{"type", g.type},
                                          {"writer", g.writer},
                                          {"last_reader", g.lastReader},
                                          {"buffers", g.buffers},
                                          {"bytes", g.bytes},
                                          {"first_op", g.firstUse},
                                          {"last_op", g.lastUse}});
    root["activations_peak"] =
        llvm::json::Object{{"live_bytes", arenaPeak.liveBytes},
                           {"op", arenaPeak.position},
                           {"ops", arenaPeak.positions},
                           {"buffers", std::move(groups)}};
  }
  if (parts.comm) {
    llvm::json::Array calls;
    for (const CollectiveReport &c : collectives)
      calls.push_back(llvm::json::Object{{"kind", c.kind},
                                         {"group", c.group},
                                         {"group_size", c.groupSize},
                                         {"type", c.element},
                                         {"loc", c.location},
                                         {"payload_bytes", c.payloadBytes},
                                         {"bytes_sent", c.bytesSent},
                                         {"bus_bytes", c.busBytes},
                                         {"members", c.members},
                                         {"calls_per_update", c.callsPerUpdate}});
    llvm::json::Array kinds;
    for (const CollectiveTally &g : tallyCollectives(*this))
      kinds.push_back(llvm::json::Object{{"kind", g.kind},
                                         {"type", g.element},
                                         {"calls", g.calls},
                                         {"payload_bytes", g.payloadBytes},
                                         {"bytes_sent", g.bytesSent},
                                         {"bus_bytes", g.busBytes}});
    root["comm"] = llvm::json::Object{
        {"per_call", std::move(calls)},
        {"per_update", std::move(kinds)},
        {"bytes_sent_per_update", bytesSentPerStep()},
        {"volume_psi", volumeInPsi()}};
  }
  if (parts.estimate) {
    DeepSpeedEstimate e = estimate();
    root["deepspeed_estimate"] = llvm::json::Object{
        {"largest_module_parameters", largestModuleElements},
        {"zero2", e.zero2},
        {"zero2_offload_optimizer", e.zero2OffloadOptimizer},
        {"zero3", e.zero3},
        {"zero3_offload_optimizer", e.zero3OffloadOptimizer},
        {"zero3_offload_all", e.zero3OffloadAll}};
  }
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}
