//===- LibraryMoe.cpp - expert routing ops as library calls ----------------===//
//
// dsc.moe_slots, dsc.moe_dispatch, dsc.moe_combine and dsc.moe_route_dot
// (dsc/kernels/Moe.h): one call each, the layer's shape as a
// dsc::kernels::MoeShape literal {S, k, M, E, C}. An absent priority or
// weight operand is a null pointer (of the rows' type, so the template
// argument is deduced alike on both targets). The kernels check the
// experts and slots they read and take the target's index-fault record
// last (DSC_INDEX_FAULT: nothing on the CPU, whose kernels throw).
//
//===----------------------------------------------------------------------===//

#include "LibraryCalls.h"

#include "KernelEmitter.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::cpp;

static RankedTensorType tensorOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The MoeShape literal of routes `slots` ([S, k]) between token rows
/// `tokens` ([S, M]) and expert slots `slotted` ([E, C, M]).
static std::string shapeLiteral(Value tokens, Value slots, Value slotted) {
  ArrayRef<int64_t> t = tensorOf(tokens).getShape(), e = tensorOf(slotted).getShape();
  return llvm::formatv("dsc::kernels::MoeShape{{{0}, {1}, {2}, {3}, {4}}", t[0],
                       tensorOf(slots).getDimSize(1), t[1], e[0], e[1])
      .str();
}

/// `weights`'s argument, or a null pointer of the rows' type.
static std::string weightsArgument(LibraryCall &call, Value weights, Value rows) {
  if (weights)
    return call.in(weights);
  return "DSC_LIB(static_cast<const " + cType(tensorOf(rows).getElementType()) +
         " *>(nullptr))";
}

LogicalResult mlir::dsc::cpp::emitMoeCall(LibraryCall &call) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(call.op())
      .Case([&](MoeSlotsOp op) {
        RankedTensorType experts = tensorOf(op.getExperts());
        call.text += llvm::formatv(
            "  dsc_kernels::moeSlots(stream, {0}, {1}, {2}, {3}, "
            "dsc::kernels::MoeShape{{{4}, {5}, 0, {6}, {7}} DSC_INDEX_FAULT);\n",
            call.in(op.getExperts()),
            op.getPriority() ? call.in(op.getPriority()) : "nullptr",
            call.outFor(op.getSlots()), call.outFor(op.getCounts()), experts.getDimSize(0),
            experts.getDimSize(1), op.getNumExperts(), op.getCapacity());
        return success();
      })
      .Case([&](MoeDispatchOp op) {
        call.text += llvm::formatv(
            "  dsc_kernels::moeDispatch(stream, {0}, {1}, {2}, {3}, {4} DSC_INDEX_FAULT);\n",
            call.in(op.getInput()), call.in(op.getSlots()),
            weightsArgument(call, op.getWeights(), op.getInput()), call.out(0),
            shapeLiteral(op.getInput(), op.getSlots(), op.getResult()));
        return success();
      })
      .Case([&](MoeCombineOp op) {
        call.text += llvm::formatv(
            "  dsc_kernels::moeCombine(stream, {0}, {1}, {2}, {3}, {4} DSC_INDEX_FAULT);\n",
            call.in(op.getInput()), call.in(op.getSlots()),
            weightsArgument(call, op.getWeights(), op.getInput()), call.out(0),
            shapeLiteral(op.getResult(), op.getSlots(), op.getInput()));
        return success();
      })
      .Case([&](MoeRouteDotOp op) {
        call.text += llvm::formatv(
            "  dsc_kernels::moeRouteDot(stream, {0}, {1}, {2}, {3}, {4} DSC_INDEX_FAULT);\n",
            call.in(op.getTokens()), call.in(op.getSlotted()), call.in(op.getSlots()),
            call.out(0), shapeLiteral(op.getTokens(), op.getSlots(), op.getSlotted()));
        return success();
      })
      .Default([](Operation *op) {
        return op->emitError() << "no library call for '" << op->getName() << "'";
      });
}
