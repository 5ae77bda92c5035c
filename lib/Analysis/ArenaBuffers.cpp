//===- ArenaBuffers.cpp - the buffers of a lowered step and their lives ---===//

#include "dsc/Analysis/ArenaBuffers.h"
#include "dsc/Support/TensorSize.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::dsc;

/// Where a buffer that work on another stream than compute uses (a
/// collective, a copy to or from the host) may be reused. Compute, and
/// whatever it orders after itself, writes the buffers that take its
/// memory, so it stays live until compute's first wait for an event
/// recorded on that stream after the work (or to the end of the step).
static int64_t releasedAt(Operation *work,
                          const DenseMap<Operation *, int64_t> &position) {
  Value stream = dscrt::getAsyncStream(work);
  Operation *op = work;
  while ((op = op->getNextNode())) {
    auto wait = dyn_cast<dscrt::WaitOp>(op);
    auto record = wait ? wait.getEvent().getDefiningOp<dscrt::RecordOp>()
                       : dscrt::RecordOp();
    auto waiter = wait ? wait.getStream().getDefiningOp<dscrt::StreamOp>()
                       : dscrt::StreamOp();
    if (record && record.getStream() == stream && waiter &&
        waiter.getName() == dscrt::DSCRTDialect::kComputeStreamName &&
        position.lookup(record) > position.lookup(work))
      return position.lookup(wait);
  }
  return position.size();
}

/// The uses of `alloc`'s buffer, through views, in no particular order.
static SmallVector<OpOperand *> bufferUses(dscrt::AllocOp alloc) {
  SmallVector<OpOperand *> uses;
  SmallVector<Value> worklist = {alloc.getResult()};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      uses.push_back(&use);
      if (auto view = dyn_cast<dscrt::ViewOp>(use.getOwner()))
        worklist.push_back(view.getResult());
    }
  }
  return uses;
}

FailureOr<SmallVector<ArenaBuffer>>
mlir::dsc::collectArenaBuffers(func::FuncOp func, bool host) {
  Block &body = func.getBody().front();
  DenseMap<Operation *, int64_t> position;
  for (Operation &op : body)
    position[&op] = position.size();
  SmallVector<ArenaBuffer> buffers;
  for (auto alloc : body.getOps<dscrt::AllocOp>()) {
    if (dscrt::DSCRTDialect::isHostMemory(alloc.getType()) != host)
      continue;
    MemRefType type = alloc.getType();
    std::optional<int64_t> bytes = checkedByteSize(
        type.getShape(), type.getElementType().getIntOrFloatBitWidth());
    if (!bytes)
      return alloc.emitError() << "buffer size overflows int64";
    BufferRequest request;
    request.bytes = *bytes;
    request.firstUse = request.lastUse = position[alloc];
    if (host) {
      // Host buffers are written and read on the copy and host streams,
      // which compute does not wait for: each keeps its memory for the
      // whole step, as DeepSpeed keeps its pinned buffers. But for the
      // buffer of an NVMe state: the "nvme" stream reads it and, after the
      // host update, writes it back, in order, so a buffer read after
      // that write may take its memory (ZeRO-Infinity's swap buffers).
      SmallVector<OpOperand *> uses = bufferUses(alloc);
      bool swapped = llvm::any_of(uses, [](OpOperand *use) {
        return isa<dscrt::NvmeReadOp>(use->getOwner());
      });
      request.firstUse = swapped ? position[alloc] : 0;
      request.lastUse = swapped ? position[alloc] : int64_t(position.size());
      if (swapped)
        for (OpOperand *use : uses)
          request.lastUse = std::max(
              request.lastUse,
              position[body.findAncestorOpInBlock(*use->getOwner())]);
      buffers.push_back({alloc, request});
      continue;
    }
    for (OpOperand *use : bufferUses(alloc)) {
      Operation *top = body.findAncestorOpInBlock(*use->getOwner());
      request.lastUse = std::max(request.lastUse, position[top]);
      if (dscrt::getAsyncStream(top))
        request.lastUse = std::max(request.lastUse, releasedAt(top, position));
    }
    buffers.push_back({alloc, request});
  }
  return buffers;
}

/// "bf16 12288x49152".
static std::string describeType(MemRefType type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type.getElementType() << " ";
  llvm::interleave(type.getShape(), os, "x");
  if (type.getRank() == 0)
    os << "scalar";
  return text;
}

/// The op a use of a buffer stands for: in a kernel, the dsc op of its body
/// that computes the output (a write) or first reads the input (a read);
/// elsewhere the runtime op itself.
static std::string describeUse(OpOperand &use) {
  Operation *owner = use.getOwner();
  auto kernel = dyn_cast<dscrt::KernelOp>(owner);
  if (!kernel)
    return owner->getName().getStringRef().str();
  Block &kernelBody = kernel.getBody().front();
  unsigned index = use.getOperandNumber();
  // Operand groups: the stream, ins, outs.
  auto [insBegin, insSize] = kernel.getODSOperandIndexAndLength(1);
  auto [outsBegin, outsSize] = kernel.getODSOperandIndexAndLength(2);
  if (index >= outsBegin && index < outsBegin + outsSize) {
    Value yielded = kernelBody.getTerminator()->getOperand(index - outsBegin);
    if (Operation *def = yielded.getDefiningOp())
      return def->getName().getStringRef().str();
  } else if (index >= insBegin && index < insBegin + insSize) {
    BlockArgument argument = kernelBody.getArgument(index - insBegin);
    Operation *first = nullptr;
    for (Operation *user : argument.getUsers())
      if (!first || user->isBeforeInBlock(first))
        first = user;
    if (first)
      return first->getName().getStringRef().str();
  }
  return owner->getName().getStringRef().str();
}

ArenaPeak mlir::dsc::describeBusiestPoint(func::FuncOp func,
                                          ArrayRef<ArenaBuffer> buffers,
                                          const BufferPlan &plan) {
  Block &body = func.getBody().front();
  DenseMap<Operation *, int64_t> position;
  for (Operation &op : body)
    position[&op] = position.size();
  ArenaPeak peak;
  peak.position = plan.busiestPosition;
  peak.positions = position.size();
  peak.liveBytes = plan.maxLiveBytes;
  llvm::StringMap<size_t> index;
  for (const ArenaBuffer &buffer : buffers) {
    const BufferRequest &r = buffer.request;
    if (r.firstUse > peak.position || r.lastUse < peak.position)
      continue;
    // The writer is the first use that is not a view; the last reader the
    // last one (not the wait that ends a collective's buffer's life).
    OpOperand *first = nullptr, *last = nullptr;
    for (OpOperand *use : bufferUses(buffer.alloc)) {
      if (isa<dscrt::ViewOp>(use->getOwner()))
        continue;
      int64_t p = position.lookup(body.findAncestorOpInBlock(*use->getOwner()));
      if (!first ||
          p < position.lookup(body.findAncestorOpInBlock(*first->getOwner())))
        first = use;
      if (!last ||
          p >= position.lookup(body.findAncestorOpInBlock(*last->getOwner())))
        last = use;
    }
    LiveBufferGroup key;
    dscrt::AllocOp alloc = buffer.alloc;
    key.type = describeType(alloc.getType());
    key.writer = first ? describeUse(*first) : "nothing";
    key.lastReader = last ? describeUse(*last) : "nothing";
    auto [it, inserted] = index.try_emplace(
        key.type + "\n" + key.writer + "\n" + key.lastReader,
        peak.groups.size());
    if (inserted) {
      key.firstUse = r.firstUse;
      key.lastUse = r.lastUse;
      peak.groups.push_back(key);
    }
    LiveBufferGroup &group = peak.groups[it->second];
    group.buffers += 1;
    group.bytes += llvm::alignTo(r.bytes, kArenaAlignment);
    group.firstUse = std::min(group.firstUse, r.firstUse);
    group.lastUse = std::max(group.lastUse, r.lastUse);
  }
  // Most bytes first; ties in the order the step allocates them.
  llvm::sort(peak.groups, [](const LiveBufferGroup &a,
                             const LiveBufferGroup &b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.firstUse < b.firstUse;
  });
  return peak;
}
