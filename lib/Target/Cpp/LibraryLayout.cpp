//===- LibraryLayout.cpp - lookups, layout and routing as library calls ---===//
//
// dsc.embedding (dsc/kernels/Embedding.h); dsc.transpose and dsc.permute
// (Permute.h); dsc.slice, dsc.concat (one call per input), dsc.broadcast
// and dsc.causal_mask (Layout.h); dsc.gather, dsc.scatter_add, dsc.top_k,
// dsc.cumsum and dsc.one_hot (Routing.h). Whole shapes travel as dsc::kernels::Dims
// literals; a reduction-like op along `dim` as its (outer, n, inner) view.
// The kernels that check indices take the target's index-fault record last
// (DSC_INDEX_FAULT: nothing on the CPU, whose kernels throw).
//
//===----------------------------------------------------------------------===//

#include "LibraryCalls.h"

#include "KernelEmitter.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>

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

/// Shapes the library takes whole (dsc::kernels::Dims) have this rank at
/// most.
constexpr size_t kMaxRank = 6; // dsc::kernels::kMaxRank

/// Fails on an op whose `shape` the library cannot take whole.
static LogicalResult checkRank(Operation *op, ArrayRef<int64_t> shape) {
  if (shape.size() <= kMaxRank)
    return success();
  return op->emitError() << "'" << op->getName() << "' of rank " << shape.size()
                         << " exceeds the kernel library's rank limit " << kMaxRank;
}

static LogicalResult emitPermute(LibraryCall &call, Value input,
                                 ArrayRef<int64_t> fullPerm) {
  // Dimensions of size 1 move nothing: dropped here, so that only the
  // dimensions that move count against the library's rank.
  ArrayRef<int64_t> fullShape = shapeOf(input);
  SmallVector<int64_t> shape, perm, newIndex(fullShape.size(), -1);
  for (auto [d, size] : llvm::enumerate(fullShape))
    if (size != 1) {
      newIndex[d] = shape.size();
      shape.push_back(size);
    }
  for (int64_t d : fullPerm)
    if (newIndex[d] >= 0)
      perm.push_back(newIndex[d]);
  if (shape.empty())
    shape = {1}, perm = {0};
  if (failed(checkRank(call.op(), shape)))
    return failure();
  int64_t rank = shape.size();
  // The last two dimensions swapped: a batch of matrix transposes.
  bool lastTwo = rank >= 2 && perm[rank - 1] == rank - 2 && perm[rank - 2] == rank - 1;
  for (int64_t d = 0; lastTwo && d + 2 < rank; ++d)
    lastTwo = perm[d] == d;
  if (lastTwo) {
    call.text += llvm::formatv("  dsc_kernels::transpose(stream, {0}, {1}, {2}, {3}, {4});\n",
                               call.in(input), call.out(0),
                               ShapedType::getNumElements(ArrayRef<int64_t>(shape).drop_back(2)),
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
      .Case([&](SliceOp sl) {
        ArrayRef<int64_t> in = shapeOf(sl.getInput());
        int64_t dim = sl.getDim();
        call.text += llvm::formatv(
            "  dsc_kernels::slice(stream, {0}, {1}, {2}, {3}, {4}, {5});\n",
            call.in(sl.getInput()), call.out(0), aroundDim(in, dim), int64_t(sl.getStart()),
            int64_t(sl.getStep()), shapeOf(sl.getResult())[dim]);
        return success();
      })
      .Case([&](ConcatOp c) {
        ArrayRef<int64_t> out = shapeOf(c.getResult());
        int64_t dim = c.getDim(), offset = 0;
        for (Value part : c.getInputs()) {
          call.text += llvm::formatv(
              "  dsc_kernels::concatPart(stream, {0}, {1}, {2}, {3}, {4});\n", call.in(part),
              call.out(0), aroundDim(shapeOf(part), dim), out[dim], offset);
          offset += shapeOf(part)[dim];
        }
        return success();
      })
      .Case([&](BroadcastOp b) {
        // NumPy rules align the shapes at the right: the input gets leading
        // 1s. Result dimensions of size 1 are dropped (both sides have 1
        // there), so only those that hold elements count against the rank.
        ArrayRef<int64_t> fullOut = shapeOf(b.getResult());
        SmallVector<int64_t> fullIn(fullOut.size() - shapeOf(b.getInput()).size(), 1);
        llvm::append_range(fullIn, shapeOf(b.getInput()));
        SmallVector<int64_t> in, out;
        for (auto [i, o] : llvm::zip(fullIn, fullOut))
          if (o != 1)
            in.push_back(i), out.push_back(o);
        if (out.empty())
          in = out = {1};
        if (failed(checkRank(b, out)))
          return failure();
        call.text += llvm::formatv("  dsc_kernels::broadcast(stream, {0}, {1}, {2}, {3});\n",
                                   call.in(b.getInput()), call.out(0), dimsLiteral(in),
                                   dimsLiteral(out));
        return success();
      })
      .Case([&](CausalMaskOp m) {
        ArrayRef<int64_t> shape = shapeOf(m.getResult());
        int64_t rows = shape[shape.size() - 2], cols = shape.back();
        double fill = m.getFillValue() ? m.getFillValue()->convertToDouble()
                                       : -std::numeric_limits<double>::infinity();
        call.text += llvm::formatv(
            "  dsc_kernels::causalMask(stream, {0}, {1}, {2}, {3}, {4}, {5});\n",
            call.in(m.getInput()), call.out(0),
            ShapedType::getNumElements(shape.drop_back(2)), rows, cols,
            literal(fill, Float64Type::get(m.getContext())));
        return success();
      })
      .Case([&](GatherOp g) {
        if (failed(checkRank(g, shapeOf(g.getInput()))))
          return failure();
        call.text += llvm::formatv(
            "  dsc_kernels::gather(stream, {0}, {1}, {2}, {3}, {4}, {5} DSC_INDEX_FAULT);\n",
            call.in(g.getInput()), call.in(g.getIndex()), call.out(0),
            dimsLiteral(shapeOf(g.getInput())), dimsLiteral(shapeOf(g.getIndex())),
            g.getDim());
        return success();
      })
      .Case([&](ScatterAddOp s) {
        if (failed(checkRank(s, shapeOf(s.getInput()))))
          return failure();
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
