//===- LibraryLayout.cpp - lookups, layout and routing as library calls ---===//
//
// dsc.embedding (dsc/kernels/Embedding.h); dsc.transpose and dsc.permute
// (Permute.h); dsc.gather, dsc.scatter_add, dsc.top_k, dsc.cumsum and
// dsc.one_hot (Routing.h). Whole shapes travel as dsc::kernels::Dims
// literals; a reduction-like op along `dim` as its (outer, n, inner) view.
// The kernels that check indices take the target's index-fault record last
// (DSC_INDEX_FAULT: nothing on the CPU, whose kernels throw).
//
//===----------------------------------------------------------------------===//

#include "LibraryCalls.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::cpp;

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}

/// `shape` as a dsc::kernels::Dims literal.
static std::string dimsLiteral(ArrayRef<int64_t> shape) {
  std::string sizes;
  for (int64_t size : shape)
    sizes += (sizes.empty() ? "" : ", ") + std::to_string(size);
  return "dsc::kernels::Dims{" + std::to_string(shape.size()) + ", {" + sizes + "}}";
}

/// The (outer, n, inner) view of `shape` around `dim`, as call arguments.
static std::string aroundDim(ArrayRef<int64_t> shape, int64_t dim) {
  return llvm::formatv("{0}, {1}, {2}", ShapedType::getNumElements(shape.take_front(dim)),
                       shape[dim], ShapedType::getNumElements(shape.drop_front(dim + 1)))
      .str();
}

static LogicalResult emitPermute(LibraryCall &call, Value input, ArrayRef<int64_t> perm) {
  ArrayRef<int64_t> shape = shapeOf(input);
  int64_t rank = shape.size();
  // The last two dimensions swapped: a batch of matrix transposes.
  bool lastTwo = rank >= 2 && perm[rank - 1] == rank - 2 && perm[rank - 2] == rank - 1;
  for (int64_t d = 0; lastTwo && d + 2 < rank; ++d)
    lastTwo = perm[d] == d;
  if (lastTwo) {
    call.text += llvm::formatv("  dsc_kernels::transpose(stream, {0}, {1}, {2}, {3}, {4});\n",
                               call.in(input), call.out(0),
                               ShapedType::getNumElements(shape.drop_back(2)),
                               shape[rank - 2], shape[rank - 1]);
    return success();
  }
  call.text += llvm::formatv("  dsc_kernels::permute(stream, {0}, {1}, {2}, {3});\n",
                             call.in(input), call.out(0), dimsLiteral(shape),
                             dimsLiteral(perm));
  return success();
}

LogicalResult mlir::dsc::cpp::emitLayoutCall(LibraryCall &call) {
  Operation *op = call.op();
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](EmbeddingOp e) {
        ArrayRef<int64_t> table = shapeOf(e.getTable());
        call.text += llvm::formatv(
            "  dsc_kernels::embeddingForward(stream, {0}, {1}, {2}, {3}, {4}, {5} "
            "DSC_INDEX_FAULT);\n",
            call.in(e.getTable()), call.in(e.getIndices()), call.out(0),
            ShapedType::getNumElements(shapeOf(e.getIndices())), table[0], table[1]);
        return success();
      })
      .Case([&](TransposeOp t) {
        SmallVector<int64_t> perm =
            llvm::to_vector(llvm::seq<int64_t>(0, shapeOf(t.getInput()).size()));
        std::swap(perm[t.getDim0()], perm[t.getDim1()]);
        return emitPermute(call, t.getInput(), perm);
      })
      .Case([&](PermuteOp p) { return emitPermute(call, p.getInput(), p.getPermutation()); })
      .Case([&](GatherOp g) {
        call.text += llvm::formatv(
            "  dsc_kernels::gather(stream, {0}, {1}, {2}, {3}, {4}, {5} DSC_INDEX_FAULT);\n",
            call.in(g.getInput()), call.in(g.getIndex()), call.out(0),
            dimsLiteral(shapeOf(g.getInput())), dimsLiteral(shapeOf(g.getIndex())),
            g.getDim());
        return success();
      })
      .Case([&](ScatterAddOp s) {
        call.text += llvm::formatv(
            "  dsc_kernels::scatterAdd(stream, {0}, {1}, {2}, {3}, {4}, {5}, {6}, {7} "
            "DSC_INDEX_FAULT);\n",
            call.in(s.getInput()), call.in(s.getIndex()), call.in(s.getSrc()), call.out(0),
            dimsLiteral(shapeOf(s.getInput())), dimsLiteral(shapeOf(s.getIndex())),
            dimsLiteral(shapeOf(s.getSrc())), s.getDim());
        return success();
      })
      .Case([&](TopKOp t) {
        call.text += llvm::formatv("  dsc_kernels::topK(stream, {0}, {1}, {2}, {3}, {4});\n",
                                   call.in(t.getInput()), call.outFor(t.getValues()),
                                   call.outFor(t.getIndices()),
                                   aroundDim(shapeOf(t.getInput()), t.getDim()), t.getK());
        return success();
      })
      .Case([&](CumsumOp c) {
        call.text += llvm::formatv("  dsc_kernels::cumsum(stream, {0}, {1}, {2});\n",
                                   call.in(c.getInput()), call.out(0),
                                   aroundDim(shapeOf(c.getInput()), c.getDim()));
        return success();
      })
      .Case([&](OneHotOp o) {
        call.text += llvm::formatv("  dsc_kernels::oneHot(stream, {0}, {1}, {2}, {3});\n",
                                   call.in(o.getIndices()), call.out(0),
                                   ShapedType::getNumElements(shapeOf(o.getIndices())),
                                   o.getNumClasses());
        return success();
      })
      .Default([](Operation *op) {
        return op->emitError() << "no library call for '" << op->getName() << "'";
      });
}
