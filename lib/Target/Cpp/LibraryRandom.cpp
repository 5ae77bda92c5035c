//===- LibraryRandom.cpp - random ops as library calls ---------------------===//
//
// dsc.dropout (dsc/kernels/Random.h): one call, the site's constants as a
// dsc::kernels::DropoutSite literal {numel, perSample, p, seed} (and the
// part count, with the part's index as the last argument, for a part of
// each sample); p is printed with 17 significant digits, which read back
// the same double.
// dsc.random_ltd_indices: one call with a dsc::kernels::LtdSite literal
// {samples, length, kept, seed}. dsc.random_uniform: one call with a
// dsc::kernels::UniformSite literal {numel, perSample, low, high, seed},
// the bounds printed with 17 significant digits.
//
//===----------------------------------------------------------------------===//

#include "LibraryCalls.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::cpp;

LogicalResult mlir::dsc::cpp::emitRandomCall(LibraryCall &call) {
  if (auto ltd = dyn_cast_or_null<RandomLtdIndicesOp>(call.op())) {
    ArrayRef<int64_t> shape = ltd.getResult().getType().getShape();
    call.text += llvm::formatv(
        "  dsc_kernels::randomLtdIndices(stream, {0}, {1}, "
        "dsc::kernels::LtdSite{{{2}, {3}, {4}, {5}});\n",
        call.in(ltd.getKey()), call.out(0), shape[0], ltd.getLength(), shape[1],
        ltd.getSeed());
    return success();
  }
  if (auto uniform = dyn_cast_or_null<RandomUniformOp>(call.op())) {
    int64_t numel = uniform.getResult().getType().getNumElements();
    call.text += llvm::formatv(
        "  dsc_kernels::randomUniform(stream, {0}, {1}, "
        "dsc::kernels::UniformSite{{{2}, {3}, {4:e17}, {5:e17}, {6}});\n",
        call.in(uniform.getKey()), call.out(0), numel, numel / uniform.getSamples(),
        uniform.getLow().convertToDouble(), uniform.getHigh().convertToDouble(),
        uniform.getSeed());
    return success();
  }
  auto dropout = dyn_cast_or_null<DropoutOp>(call.op());
  if (!dropout)
    return failure();
  int64_t numel = dropout.getInput().getType().getNumElements();
  // A part of each sample: the part count in the site, the part's index
  // after it.
  std::string part;
  if (Value index = dropout.getPart())
    part = llvm::formatv(", {0}}, {1}", dropout.getParts(), call.in(index));
  else
    part = "}";
  call.text += llvm::formatv(
      "  dsc_kernels::dropout(stream, {0}, {1}, {2}, "
      "dsc::kernels::DropoutSite{{{3}, {4}, {5:e17}, {6}{7});\n",
      call.in(dropout.getInput()), call.in(dropout.getKey()), call.out(0), numel,
      numel / dropout.getSamples(), dropout.getP().convertToDouble(),
      dropout.getSeed(), part);
  return success();
}
