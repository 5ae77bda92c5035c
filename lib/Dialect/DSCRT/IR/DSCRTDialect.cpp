//===- DSCRTDialect.cpp - dsc's runtime-call level -------------------------===//

#include "dsc/Dialect/DSCRT/IR/DSCRTDialect.h"
#include "dsc/Dialect/DSCRT/IR/LibraryKernels.h"
#include "dsc/Support/TensorSize.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dscrt;

#include "dsc/Dialect/DSCRT/IR/DSCRTOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dsc/Dialect/DSCRT/IR/DSCRTOpsAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dsc/Dialect/DSCRT/IR/DSCRTOpsTypes.cpp.inc"

#define GET_OP_CLASSES
#include "dsc/Dialect/DSCRT/IR/DSCRTOps.cpp.inc"

void DSCRTDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dsc/Dialect/DSCRT/IR/DSCRTOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dsc/Dialect/DSCRT/IR/DSCRTOpsAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "dsc/Dialect/DSCRT/IR/DSCRTOpsTypes.cpp.inc"
      >();
}

bool DSCRTDialect::isHostMemory(MemRefType type) {
  return isa_and_nonnull<HostMemoryAttr>(type.getMemorySpace());
}

static std::optional<int64_t> bufferBytes(MemRefType type) {
  return mlir::dsc::checkedByteSize(
      type.getShape(), type.getElementType().getIntOrFloatBitWidth());
}

LogicalResult BufferOp::verify() {
  int64_t offset = getOffset();
  if (offset < 0 || offset % 256 != 0)
    return emitOpError() << "offset " << offset
                         << " must be a non-negative multiple of 256";
  std::optional<int64_t> bytes = bufferBytes(getType());
  if (!bytes)
    return emitOpError() << "buffer size overflows int64";
  bool host = DSCRTDialect::isHostMemory(getType());
  StringRef arenaName = host ? DSCRTDialect::kHostArenaBytesAttrName
                             : DSCRTDialect::kArenaBytesAttrName;
  auto func = (*this)->getParentOfType<FunctionOpInterface>();
  auto arena = func ? func->getAttrOfType<IntegerAttr>(arenaName) : IntegerAttr();
  if (!arena)
    return emitOpError() << "needs a '" << arenaName << "' on its function";
  if (offset > arena.getInt() - *bytes)
    return emitOpError() << "[" << offset << ", " << offset + *bytes
                         << ") extends past the " << (host ? "host " : "")
                         << "arena of " << arena.getInt() << " bytes";
  return success();
}

LogicalResult StepKeyOp::verify() {
  MemRefType type = getType();
  if (type.getShape() != ArrayRef<int64_t>{4} ||
      !type.getElementType().isInteger(64))
    return emitOpError() << "must be a memref<4xi64, #dscrt.host>, got " << type;
  // I64Attr's accessor is unsigned: the attribute's value is read signed.
  int64_t offset = getSampleOffsetAttr().getInt();
  if (offset < 0)
    return emitOpError() << "sample_offset must be >= 0, got " << offset;
  return success();
}

LogicalResult ConstantOp::verify() {
  auto type = cast<ShapedType>(getValue().getType());
  if (type.getShape() != getType().getShape() ||
      type.getElementType() != getType().getElementType())
    return emitOpError() << "value of type " << type
                         << " does not fit the buffer " << getType();
  return success();
}

LogicalResult ViewOp::verify() {
  MemRefType from = getSource().getType(), to = getType();
  if (from.getElementType() != to.getElementType() ||
      mlir::dsc::checkedNumElements(from.getShape()) !=
          mlir::dsc::checkedNumElements(to.getShape()))
    return emitOpError() << "cannot view " << from << " as " << to
                         << " (element type and count must match)";
  if (from.getMemorySpace() != to.getMemorySpace())
    return emitOpError() << "cannot view " << from << " as " << to
                         << " (a view stays in its buffer's memory)";
  return success();
}

void KernelOp::build(OpBuilder &builder, OperationState &state, Value stream,
                     ValueRange ins, ValueRange outs) {
  state.addOperands(stream);
  state.addOperands(ins);
  state.addOperands(outs);
  state.addAttribute(
      getOperandSegmentSizesAttrName(state.name),
      builder.getDenseI32ArrayAttr(
          {1, int32_t(ins.size()), int32_t(outs.size())}));
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (Value in : ins) {
    auto type = cast<MemRefType>(in.getType());
    block->addArgument(
        RankedTensorType::get(type.getShape(), type.getElementType()),
        state.location);
  }
}

LogicalResult KernelOp::verify() {
  // One memory for all buffers: a kernel runs on the device or on the host.
  std::optional<bool> host;
  for (Value buffer : llvm::concat<const Value>(getIns(), getOuts())) {
    bool here = DSCRTDialect::isHostMemory(cast<MemRefType>(buffer.getType()));
    if (host && *host != here)
      return emitOpError() << "reads or writes buffers in host and in device "
                              "memory; a kernel runs on one of them";
    host = here;
  }
  Block &block = getBody().front();
  if (block.getNumArguments() != getIns().size())
    return emitOpError() << "body has " << block.getNumArguments()
                         << " arguments for " << getIns().size() << " inputs";
  for (auto [in, arg] : llvm::zip(getIns(), block.getArguments())) {
    auto type = cast<MemRefType>(in.getType());
    auto tensor = dyn_cast<RankedTensorType>(arg.getType());
    if (!tensor || tensor.getShape() != type.getShape() ||
        tensor.getElementType() != type.getElementType())
      return emitOpError() << "body argument " << arg.getType()
                           << " does not match input " << type;
  }
  auto yield = cast<YieldOp>(block.getTerminator());
  if (yield.getValues().size() != getOuts().size())
    return emitOpError() << "yields " << yield.getValues().size()
                         << " values for " << getOuts().size() << " outputs";
  for (auto [out, value] : llvm::zip(getOuts(), yield.getValues())) {
    auto type = cast<MemRefType>(out.getType());
    auto tensor = cast<RankedTensorType>(value.getType());
    if (tensor.getShape() != type.getShape() ||
        tensor.getElementType() != type.getElementType())
      return emitOpError() << "yields " << tensor << " into output " << type;
  }
  if (std::optional<StringRef> library = getLibrary()) {
    if (!llvm::is_contained(libraryKernelNames(), *library))
      return emitOpError() << "names '" << *library
                           << "', which is not a kernel of the library";
    std::optional<StringRef> computes = matchLibraryKernel(block);
    if (computes != library)
      return emitOpError() << "names library kernel '" << *library
                           << "', but its body is computed by "
                           << (computes ? "'" + computes->str() + "'"
                                       : std::string("no library kernel"));
  }
  return success();
}

LogicalResult EvalExitOp::verify() {
  for (Operation *op = getOperation()->getNextNode(); op; op = op->getNextNode()) {
    // The outputs written once per optimizer step (gradient accumulation)
    // follow it: an evaluation computes no optimizer step.
    if (isa<MicroStepExitOp>(op))
      break;
    if (isa<OutputOp>(op))
      return emitOpError("must follow every dscrt.output: an evaluation "
                         "step would return before writing it");
    // The copy filling an output (its host buffer) must precede the exit as
    // well: the emitter synchronizes the streams and returns there.
    if (auto copy = dyn_cast<CopyOp>(op))
      if (copy.getTarget().getDefiningOp<OutputOp>())
        return emitOpError("must follow the dscrt.copy filling every "
                           "dscrt.output: an evaluation step would return "
                           "before writing it");
    if (isa<EvalExitOp>(op))
      return emitOpError("appears twice in the step");
  }
  return success();
}

LogicalResult MicroStepExitOp::verify() {
  for (Operation *op = getOperation()->getNextNode(); op; op = op->getNextNode())
    if (isa<EvalExitOp, MicroStepExitOp>(op))
      return emitOpError() << "is followed by a '" << op->getName()
                           << "': a step has one micro_step_exit, after its "
                              "eval_exit";
  return success();
}

LogicalResult CopyOp::verify() {
  MemRefType from = getSource().getType(), to = getTarget().getType();
  if (from.getShape() != to.getShape() ||
      from.getElementType() != to.getElementType())
    return emitOpError() << "cannot copy " << from << " to " << to
                         << " (shape and element type must match)";
  if (getSource() == getTarget())
    return emitOpError() << "copies a buffer onto itself";
  return success();
}

LogicalResult StreamOp::verify() {
  if (getName().empty())
    return emitOpError() << "needs a name";
  for (Operation &op : *(*this)->getBlock()) {
    if (&op == getOperation())
      break;
    auto other = dyn_cast<StreamOp>(op);
    if (other && other.getName() == getName())
      return emitOpError() << "'" << getName()
                           << "' names a stream already created in this block";
  }
  return success();
}

/// The stream op behind `stream`, or null when it is not one (a block
/// argument).
static StreamOp streamOf(Value stream) {
  return stream.getDefiningOp<StreamOp>();
}

static std::string streamName(Value stream) {
  StreamOp op = streamOf(stream);
  return op ? "'" + op.getName().str() + "'" : std::string("<argument>");
}

LogicalResult WaitOp::verify() {
  auto record = getEvent().getDefiningOp<RecordOp>();
  if (!record || record->getBlock() != (*this)->getBlock())
    return emitOpError()
           << "waits for an event not recorded earlier in the same block";
  if (record.getStream() == getStream())
    return emitOpError() << "stream " << streamName(getStream())
                         << " waits for an event of its own";
  return success();
}

Value mlir::dscrt::getCollectiveStream(Operation *op) {
  auto user = dyn_cast<StreamUserOpInterface>(op);
  return user && user.isCollective() ? user.getStream() : Value();
}

Value mlir::dscrt::getWorkStream(Operation *op) {
  auto user = dyn_cast<StreamUserOpInterface>(op);
  return user ? user.getStream() : Value();
}

//===----------------------------------------------------------------------===//
// StreamUserOpInterface
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSCRT/IR/DSCRTInterfaces.cpp.inc"

void KernelOp::getBufferAccesses(SmallVectorImpl<Value> &reads,
                                 SmallVectorImpl<Value> &writes) {
  llvm::append_range(reads, getIns());
  llvm::append_range(writes, getOuts());
}

void CopyOp::getBufferAccesses(SmallVectorImpl<Value> &reads,
                               SmallVectorImpl<Value> &writes) {
  reads.push_back(getSource());
  writes.push_back(getTarget());
}

void CopyShardOp::getBufferAccesses(SmallVectorImpl<Value> &reads,
                                    SmallVectorImpl<Value> &writes) {
  reads.push_back(getSource());
  writes.push_back(getTarget());
}

void AllGatherOp::getBufferAccesses(SmallVectorImpl<Value> &reads,
                                    SmallVectorImpl<Value> &writes) {
  reads.push_back(getSource());
  writes.push_back(getTarget());
}

void ReduceScatterOp::getBufferAccesses(SmallVectorImpl<Value> &reads,
                                        SmallVectorImpl<Value> &writes) {
  reads.push_back(getSource());
  writes.push_back(getTarget());
}

void AllReduceOp::getBufferAccesses(SmallVectorImpl<Value> &reads,
                                    SmallVectorImpl<Value> &writes) {
  reads.push_back(getBuffer());
  writes.push_back(getBuffer());
}

void AllToAllOp::getBufferAccesses(SmallVectorImpl<Value> &reads,
                                   SmallVectorImpl<Value> &writes) {
  reads.push_back(getBuffer());
  writes.push_back(getBuffer());
}

void PipelineSendOp::getBufferAccesses(SmallVectorImpl<Value> &reads,
                                       SmallVectorImpl<Value> &) {
  reads.push_back(getBuffer());
}

void PipelineRecvOp::getBufferAccesses(SmallVectorImpl<Value> &,
                                       SmallVectorImpl<Value> &writes) {
  writes.push_back(getBuffer());
}

void NvmeReadOp::getBufferAccesses(SmallVectorImpl<Value> &,
                                   SmallVectorImpl<Value> &writes) {
  writes.push_back(getTarget());
}

void NvmeWriteOp::getBufferAccesses(SmallVectorImpl<Value> &reads,
                                    SmallVectorImpl<Value> &) {
  reads.push_back(getSource());
}

Value mlir::dscrt::getAsyncStream(Operation *op) {
  Value stream = getWorkStream(op);
  auto named = stream ? stream.getDefiningOp<StreamOp>() : StreamOp();
  if (named && named.getName() == DSCRTDialect::kComputeStreamName)
    return {};
  return stream;
}

/// The runtime binds its communicator to one stream, and collectives on a
/// stream of kernels could not overlap them.
static LogicalResult verifyCollectiveStream(Operation *collective) {
  Value stream = getCollectiveStream(collective);
  Operation *first = nullptr;
  for (Operation &op : *collective->getBlock()) {
    if (getCollectiveStream(&op)) {
      first = first ? first : &op;
      continue;
    }
    if (getWorkStream(&op) == stream) {
      InFlightDiagnostic diag = collective->emitOpError()
                                << "runs on stream " << streamName(stream)
                                << ", which also runs a '" << op.getName()
                                << "': collectives have a stream of their own";
      diag.attachNote(op.getLoc()) << "the '" << op.getName() << "'";
      return diag;
    }
  }
  if (getCollectiveStream(first) != stream) {
    InFlightDiagnostic diag =
        collective->emitOpError()
        << "runs on stream " << streamName(stream)
        << ", but the first collective of the block runs on "
        << streamName(getCollectiveStream(first))
        << ": collectives run on one stream";
    diag.attachNote(first->getLoc()) << "the first collective";
    return diag;
  }
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (auto stages = getStagesAttr()) {
    if (getMaximum())
      return emitOpError("takes the maximum over stages; only sums name them");
    if (dsc::lookupWorldSize(*this) &&
        failed(dsc::verifyPipelineStages(*this, getGroup(),
                                         stages.asArrayRef())))
      return failure();
  }
  return verifyCollectiveStream(*this);
}

/// A transfer between stages of a module that has them.
static LogicalResult verifyPipelineTransfer(Operation *op, int64_t microBatch) {
  if (microBatch < 0)
    return op->emitOpError() << "micro_batch " << microBatch
                             << " is negative";
  if (dsc::lookupWorldSize(op) && dsc::lookupPipelineParallelSize(op) < 2)
    return op->emitOpError()
           << "moves data between pipeline stages, but the module has none";
  return verifyCollectiveStream(op);
}

LogicalResult PipelineSendOp::verify() {
  return verifyPipelineTransfer(*this, getMicroBatch());
}

LogicalResult PipelineRecvOp::verify() {
  return verifyPipelineTransfer(*this, getMicroBatch());
}

/// `shard` and `whole` of one element type, `whole` holding W times the
/// elements of `shard` (W the size of `group`, when the module says it).
static LogicalResult verifyShardOfWhole(Operation *op, MemRefType shard,
                                        MemRefType whole,
                                        dsc::CollectiveGroup group) {
  if (shard.getElementType() != whole.getElementType())
    return op->emitOpError() << "moves " << shard.getElementType() << " to "
                             << whole.getElementType()
                             << ": element types differ";
  int64_t s = shard.getNumElements(), w = whole.getNumElements();
  std::optional<int64_t> ranks;
  if (dsc::lookupWorldSize(op)) {
    FailureOr<int64_t> size = dsc::lookupGroupSize(op, group);
    if (failed(size))
      return failure();
    ranks = *size;
  }
  if (s == 0 || w % s != 0 || (ranks && w != *ranks * s))
    return op->emitOpError()
           << "relates a whole of " << w << " elements to shards of " << s
           << (ranks ? " over " + std::to_string(*ranks) + " ranks"
                     : std::string())
           << ": the whole must be the shards of every rank";
  return success();
}

LogicalResult AllGatherOp::verify() {
  if (failed(verifyShardOfWhole(*this, getSource().getType(),
                                getTarget().getType(), getGroup())))
    return failure();
  return verifyCollectiveStream(*this);
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyShardOfWhole(*this, getTarget().getType(),
                                getSource().getType(), getGroup())))
    return failure();
  return verifyCollectiveStream(*this);
}

LogicalResult AllToAllOp::verify() {
  if (dsc::lookupWorldSize(*this)) {
    FailureOr<int64_t> ranks = dsc::lookupGroupSize(*this, getGroup());
    if (failed(ranks))
      return failure();
    MemRefType type = getBuffer().getType();
    if (type.getRank() == 0 || type.getDimSize(0) % *ranks != 0)
      return emitOpError() << "exchanges one block of its leading dimension "
                              "with each of "
                           << *ranks << " ranks, but its buffer is " << type;
  }
  return verifyCollectiveStream(*this);
}

LogicalResult CopyShardOp::verify() {
  return verifyShardOfWhole(*this, getTarget().getType(), getSource().getType(),
                            getGroup());
}
