//===- LibraryOptimizer.cpp - multi-tensor updates as library calls -------===//
//
// dsc.adam_update, dsc.sgd_update and dsc.sum_squares are one call each
// into the multi-tensor optimizer kernels (dsc/kernels/Optimizer.h), over a
// table with one row per tensor: pointers and sizes, chunks numbered by the
// library's assignChunks. The table is built on every call (the pointers
// are the call's arguments), and on CUDA uploaded, by GeneratedCode.cuh's
// dsc_table_t, only when it differs from the last one (once: the step's
// buffers do not move). The library updates in place: a result whose
// buffer is not its operand's (a shard that is gathered afterwards) gets
// the operand's values first.
//
//===----------------------------------------------------------------------===//

#include "LibraryCalls.h"

#include "KernelEmitter.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Support/TensorSize.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::cpp;

static std::string scalarOr(LibraryCall &call, Value v) {
  return v ? call.in(v) : std::string("nullptr");
}

static int64_t numel(Value v) {
  return cast<ShapedType>(v.getType()).getNumElements();
}

/// The library's element type of the gradients `grads` (one for all).
static std::string gradType(ValueRange grads) {
  return "dsc_lib_type<" +
         cType(cast<ShapedType>(grads[0].getType()).getElementType()) + ">::type";
}

/// `const auto *table = ...`: the table `rows` of `entry` on the target.
static void emitTable(LibraryCall &call, StringRef entry,
                      ArrayRef<std::string> rows) {
  call.text += llvm::formatv("  using Entry = {0};\n  Entry rows[{1}] = {{\n",
                             entry, rows.size());
  for (const std::string &row : rows)
    call.text += "    {" + row + "},\n";
  call.text += llvm::formatv(
      "  };\n  const int64_t chunks = dsc::kernels::assignChunks(rows, {0});\n"
      "  static dsc_table_t<Entry, {0}> table;\n",
      rows.size());
}

/// Copies each updated operand into its result's buffer where they differ,
/// so that the library updates the result in place; returns, per result,
/// the buffer expression it updates.
static SmallVector<std::string> inPlaceResults(LibraryCall &call) {
  auto update = cast<MultiTensorUpdateOpInterface>(call.op());
  SmallVector<std::string> results;
  for (unsigned i = 0; i < call.op()->getNumResults(); ++i) {
    std::string out = call.out(i);
    results.push_back(out);
    Value operand = update.getUpdatedOperand(i);
    if (!operand)
      continue;
    auto type = cast<ShapedType>(operand.getType());
    call.text += llvm::formatv(
        "  if (static_cast<const void *>({0}) != static_cast<const void *>({1}))\n"
        "    dsc_kernels::copy(stream, {0}, {1}, {2});\n",
        call.in(operand), out,
        type.getNumElements() * bytesPerElement(type.getElementTypeBitWidth()));
  }
  return results;
}

static std::string stepScalars(LibraryCall &call, Value lr, Value step,
                               Value unscale, Value clipCoef, Value skip) {
  return llvm::formatv("  const dsc::kernels::OptimizerStep step{{{0}, {1}, {2}, "
                       "{3}, {4}};\n",
                       scalarOr(call, lr), scalarOr(call, step),
                       scalarOr(call, unscale), scalarOr(call, clipCoef),
                       scalarOr(call, skip));
}

LogicalResult mlir::dsc::cpp::emitOptimizerCall(LibraryCall &call) {
  Operation *op = call.op();
  if (auto sum = dyn_cast<SumSquaresOp>(op)) {
    SmallVector<std::string> rows;
    for (Value input : sum.getInputs())
      rows.push_back(llvm::formatv("{0}, {1}, 0", call.in(input), numel(input)));
    emitTable(call, "dsc::kernels::GradTensor<" + gradType(sum.getInputs()) + ">",
              rows);
    call.text += llvm::formatv(
        "  static dsc_workspace_t workspace;\n"
        "  void *scratch = workspace.get(dsc::kernels::sumSquaresWorkspaceBytes({0}, "
        "chunks));\n"
        "  dsc_kernels::multiTensorSumSquares(stream, table.get(rows, stream), {0}, "
        "chunks, {1}, {2}, nullptr, scratch);\n",
        rows.size(), scalarOr(call, sum.getScale()), call.out(0));
    return success();
  }
  SmallVector<std::string> out = inPlaceResults(call);
  if (auto adam = dyn_cast<AdamUpdateOp>(op)) {
    size_t n = adam.getParams().size();
    bool copies = !adam.getNewCopies().empty();
    SmallVector<std::string> rows;
    for (size_t i = 0; i < n; ++i)
      rows.push_back(llvm::formatv("{0}, {1}, {2}, {3}, {4}, {5}, 0", out[i],
                                   call.in(adam.getGrads()[i]), out[n + i],
                                   out[2 * n + i],
                                   copies ? out[3 * n + i] : "nullptr",
                                   numel(adam.getParams()[i])));
    emitTable(call, "dsc::kernels::AdamTensor<" + gradType(adam.getGrads()) + ">",
              rows);
    std::optional<double> constantLr;
    if (adam.getConstantLrAttr())
      constantLr = adam.getConstantLrAttr().getValueAsDouble();
    call.text += llvm::formatv(
        "  const dsc::kernels::AdamConfig config = dsc::kernels::adamConfig("
        "{0}, {1}, {2}, {3}, {4}, {5});\n",
        llvm::formatv("{0:e17}", adam.getBeta1().convertToDouble()),
        llvm::formatv("{0:e17}", adam.getBeta2().convertToDouble()),
        llvm::formatv("{0:e17}", adam.getEps().convertToDouble()),
        llvm::formatv("{0:e17}", adam.getWeightDecay().convertToDouble()),
        adam.getDecoupled() ? "true" : "false",
        constantLr ? llvm::formatv("{0:e17}", *constantLr).str() : "-1");
    call.text += stepScalars(call, adam.getLr(), adam.getStep(), adam.getUnscale(),
                             adam.getClipCoef(), adam.getSkip());
    call.text += llvm::formatv("  dsc_kernels::adamUpdate(stream, table.get(rows, "
                               "stream), {0}, chunks, config, step);\n",
                               n);
    return success();
  }
  auto sgd = cast<SgdUpdateOp>(op);
  size_t n = sgd.getParams().size();
  bool momentum = !sgd.getMomentumBuffers().empty();
  bool copies = !sgd.getNewCopies().empty();
  size_t copyAt = momentum ? 2 * n : n;
  SmallVector<std::string> rows;
  for (size_t i = 0; i < n; ++i)
    rows.push_back(llvm::formatv("{0}, {1}, {2}, {3}, {4}, 0", out[i],
                                 call.in(sgd.getGrads()[i]),
                                 momentum ? out[n + i] : "nullptr",
                                 copies ? out[copyAt + i] : "nullptr",
                                 numel(sgd.getParams()[i])));
  emitTable(call, "dsc::kernels::SgdTensor<" + gradType(sgd.getGrads()) + ">", rows);
  call.text += llvm::formatv(
      "  const dsc::kernels::SgdConfig config = dsc::kernels::sgdConfig({0}, {1});\n",
      llvm::formatv("{0:e17}", sgd.getMomentum().convertToDouble()),
      llvm::formatv("{0:e17}", sgd.getWeightDecay().convertToDouble()));
  call.text += stepScalars(call, sgd.getLr(), Value(), sgd.getUnscale(),
                           sgd.getClipCoef(), sgd.getSkip());
  call.text += llvm::formatv("  dsc_kernels::sgdUpdate(stream, table.get(rows, "
                             "stream), {0}, chunks, config, step);\n",
                             n);
  return success();
}
