//===- LibraryGemm.cpp - dsc.matmul and dsc.linear as library calls -------===//
//
// One call per op: a batched dsc.matmul is one strided-batched product
// (dsc/kernels/Gemm.h); dsc.linear one product onto its bias.
//
//===----------------------------------------------------------------------===//

#include "LibraryCalls.h"

#include "KernelEmitter.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Dialect/DSCRT/IR/LibraryKernels.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::cpp;

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}

static LogicalResult emitMatmul(MatmulOp mm, LibraryCall &call) {
  ArrayRef<int64_t> a = shapeOf(mm.getLhs()), b = shapeOf(mm.getRhs());
  ArrayRef<int64_t> c = shapeOf(mm.getResult());
  int64_t m = c[c.size() - 2], n = c.back();
  int64_t k = mm.getTransposeLhs() ? a[a.size() - 2] : a.back();
  ArrayRef<int64_t> batch = c.drop_back(2);
  int64_t items = ShapedType::getNumElements(batch);
  if (items * m * n == 0)
    return success(); // nothing to write
  std::optional<int64_t> strideA = dscrt::matmulBatchStride(a, batch);
  std::optional<int64_t> strideB = dscrt::matmulBatchStride(b, batch);
  if (!strideA || !strideB)
    return mm.emitError("the library's batched GEMM cannot broadcast these "
                        "operands' batch dimensions");
  call.text += llvm::formatv(
      "  {{ dsc_kernels::GemmShape s; s.batch = {0}; s.m = {1}; s.n = {2}; "
      "s.k = {3};\n    s.transA = {4}; s.transB = {5}; s.strideA = {6}; "
      "s.strideB = {7}; s.strideC = {8};\n"
      "    dsc_kernels::batchedGemm(stream, s, {9}, {10}, {11}, 1.0f, 0.0f); }\n",
      items, m, n, k, mm.getTransposeLhs() ? "true" : "false",
      mm.getTransposeRhs() ? "true" : "false", *strideA, *strideB, m * n,
      call.in(mm.getLhs()), call.in(mm.getRhs()), call.out(0));
  return success();
}

static LogicalResult emitLinear(LinearOp l, LibraryCall &call) {
  ArrayRef<int64_t> w = shapeOf(l.getWeight());
  int64_t n = w[0], k = w[1];
  int64_t m = ShapedType::getNumElements(shapeOf(l.getResult())) / (n ? n : 1);
  std::string bias =
      l.getBias() ? call.in(l.getBias())
                  : "DSC_LIB(static_cast<const " +
                        cType(cast<ShapedType>(l.getType()).getElementType()) +
                        " *>(nullptr))";
  call.text += llvm::formatv(
      "  dsc_kernels::linear(stream, {0}, {1}, {2}, {3}, {4}, {5}, {6});\n",
      call.in(l.getInput()), call.in(l.getWeight()), bias, call.out(0), m, n, k);
  return success();
}

LogicalResult mlir::dsc::cpp::emitGemmCall(LibraryCall &call) {
  Operation *op = call.op();
  if (auto mm = dyn_cast<MatmulOp>(op))
    return emitMatmul(mm, call);
  return emitLinear(cast<LinearOp>(op), call);
}
