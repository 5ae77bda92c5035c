//===- SequenceLength.cpp - --dsc-sequence-length --------------------------===//
//
// Curriculum learning's sequence-length warmup as a rewrite: the forward
// graph runs on the first S tokens of every sequence. The graph inputs keep
// their full shape (the data loader's batch), and the graph cuts them first,
// so that every variant of an artifact reads the same inputs. Values the
// inputs do not flow into but that meet them elementwise (the position
// embedding table, mask buffers) are cut to their first S positions too,
// which is what the model computes on a batch of S tokens.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Transforms/Passes.h"

#include "SequenceRetype.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::dsc {
#define GEN_PASS_DEF_SEQUENCELENGTH
#include "dsc/Transforms/Passes.h.inc"
} // namespace mlir::dsc

using namespace mlir;
using namespace mlir::dsc;

/// `value` cut to `shape` (each dimension to its first entries).
static Value cutPrefix(OpBuilder &b, Location loc, Value value,
                       ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(value.getType());
  for (auto [d, size] : llvm::enumerate(shape))
    if (size != type.getDimSize(d))
      value = SliceOp::create(b, loc, value, d, 0, size, 1);
  return value;
}

/// Erases the ops of `cloned` (in program order) that nothing reads any
/// more, last first.
static void eraseDead(ArrayRef<Operation *> cloned) {
  for (Operation *op : llvm::reverse(cloned))
    if (op->use_empty())
      op->erase();
}

namespace {
struct SequenceLengthPass
    : public dsc::impl::SequenceLengthBase<SequenceLengthPass> {
  using SequenceLengthBase::SequenceLengthBase;

  LogicalResult shorten(func::FuncOp func) {
    // The sequence dimension is the inputs' second: [batch, seq, ...].
    int64_t full = 0;
    SmallVector<BlockArgument> sequences;
    for (BlockArgument arg : func.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!func.getArgAttr(arg.getArgNumber(), "dsc.input") || !type ||
          type.getRank() < 2)
        continue;
      if (full == 0)
        full = type.getDimSize(1);
      if (type.getDimSize(1) == full)
        sequences.push_back(arg);
    }
    if (sequences.empty())
      return func.emitError("--dsc-sequence-length: no graph input has a "
                            "sequence dimension ([batch, seq, ...])");
    if (length > full)
      return func.emitError() << "--dsc-sequence-length: length " << int64_t(length)
                              << " exceeds the inputs' sequence length "
                              << full;
    if (length == full)
      return success();
    auto fit = [&](OpBuilder &b, Operation *user, Value operand,
                   ArrayRef<int64_t> shape) -> FailureOr<Value> {
      for (auto [size, wanted] :
           llvm::zip(cast<RankedTensorType>(operand.getType()).getShape(), shape))
        if (size != wanted && wanted != length)
          return user->emitError("cannot cut this operand to the sequence "
                                 "length");
      return cutPrefix(b, user->getLoc(), operand, shape);
    };
    SequenceRetyper retyper(fit);
    Block &body = func.getBody().front();
    Operation *firstOp = &body.front();
    OpBuilder b = OpBuilder::atBlockBegin(&body);
    for (BlockArgument arg : sequences) {
      SmallVector<int64_t> shape(cast<RankedTensorType>(arg.getType()).getShape());
      shape[1] = length;
      retyper.map(arg, cutPrefix(b, arg.getLoc(), arg, shape));
    }
    SmallVector<Operation *> originals;
    // From the graph's first op on: the cuts before it read the full inputs.
    for (Operation &op : llvm::make_early_inc_range(
             llvm::make_range(firstOp->getIterator(), body.end()))) {
      if (isa<func::ReturnOp>(op)) {
        for (OpOperand &operand : op.getOpOperands())
          if (Value shortened = retyper.lookup(operand.get())) {
            if (shortened.getType() != operand.get().getType())
              return op.emitError("a graph output depends on the sequence "
                                  "length: cannot shorten it");
            operand.set(shortened);
          }
        continue;
      }
      FailureOr<Operation *> clone = retyper.retype(&op);
      if (failed(clone))
        return failure();
      if (*clone)
        originals.push_back(&op);
    }
    eraseDead(originals);
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (length < 1) {
      module.emitError() << "--dsc-sequence-length: length must be at least "
                            "1, got "
                         << int64_t(length);
      return signalPassFailure();
    }
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && failed(shorten(func)))
        return signalPassFailure();
  }
};
} // namespace
