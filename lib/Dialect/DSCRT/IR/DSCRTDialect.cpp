//===- DSCRTDialect.cpp - dsc's runtime-call level -------------------------===//

#include "dsc/Dialect/DSCRT/IR/DSCRTDialect.h"
#include "dsc/Support/TensorSize.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::dscrt;

#include "dsc/Dialect/DSCRT/IR/DSCRTOpsDialect.cpp.inc"

#define GET_OP_CLASSES
#include "dsc/Dialect/DSCRT/IR/DSCRTOps.cpp.inc"

void DSCRTDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dsc/Dialect/DSCRT/IR/DSCRTOps.cpp.inc"
      >();
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
  auto func = (*this)->getParentOfType<FunctionOpInterface>();
  auto arena = func ? func->getAttrOfType<IntegerAttr>(
                          DSCRTDialect::kArenaBytesAttrName)
                    : IntegerAttr();
  if (!arena)
    return emitOpError() << "needs a '" << DSCRTDialect::kArenaBytesAttrName
                         << "' on its function";
  if (offset > arena.getInt() - *bytes)
    return emitOpError() << "[" << offset << ", " << offset + *bytes
                         << ") extends past the arena of " << arena.getInt()
                         << " bytes";
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
  return success();
}

void KernelOp::build(OpBuilder &builder, OperationState &state, ValueRange ins,
                     ValueRange outs) {
  state.addOperands(ins);
  state.addOperands(outs);
  state.addAttribute(
      getOperandSegmentSizesAttrName(state.name),
      builder.getDenseI32ArrayAttr({int32_t(ins.size()), int32_t(outs.size())}));
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
  return success();
}

LogicalResult EvalExitOp::verify() {
  for (Operation *op = getOperation()->getNextNode(); op; op = op->getNextNode()) {
    if (isa<OutputOp>(op))
      return emitOpError("must follow every dscrt.output: an evaluation "
                         "step would return before writing it");
    if (isa<EvalExitOp>(op))
      return emitOpError("appears twice in the step");
  }
  return success();
}
