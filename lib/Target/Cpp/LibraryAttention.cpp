//===- LibraryAttention.cpp - dsc.attention(_grad) as library calls --------===//
//
// One call of the flash-style kernels (dsc/kernels/Attention.h on the CPU,
// dsc/kernels/cuda/Attention.cuh on CUDA) per op, shapes as literals. The
// mask's NumPy broadcast to [B, H, T, S] becomes four element strides (0
// where it broadcasts); no mask is a null pointer of the data's type.
//
//===----------------------------------------------------------------------===//

#include "LibraryCalls.h"

#include "KernelEmitter.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::cpp;

static RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

namespace {
/// What the forward and the backward calls share.
struct AttentionArgs {
  std::string type, maskType, mask, dims;
};
} // namespace

static AttentionArgs attentionArgs(LibraryCall &call, Value q, Value k,
                                   Value v, Value mask, double scale,
                                   bool causal) {
  AttentionArgs args;
  args.type = cType(tensorOf(q).getElementType());
  args.maskType = args.type;
  int64_t strides[4] = {0, 0, 0, 0};
  std::string pointer = "DSC_LIB(static_cast<const " + args.type + " *>(nullptr))";
  if (mask) {
    ArrayRef<int64_t> shape = tensorOf(mask).getShape();
    SmallVector<int64_t> own = stridesOf(shape);
    int64_t lead = 4 - int64_t(shape.size());
    for (int64_t d = 0; d < int64_t(shape.size()); ++d)
      strides[lead + d] = shape[d] == 1 ? 0 : own[d];
    args.maskType = cType(tensorOf(mask).getElementType());
    pointer = call.in(mask);
  }
  args.mask = llvm::formatv("{0}, {1}, {2}, {3}, {4}", pointer, strides[0],
                            strides[1], strides[2], strides[3]);
  ArrayRef<int64_t> qs = tensorOf(q).getShape(), ks = tensorOf(k).getShape(),
                    vs = tensorOf(v).getShape();
  args.dims = llvm::formatv(
      "{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}", qs[0], qs[1], qs[2], ks[2],
      qs[3], vs[3], literal(scale, Float64Type::get(q.getContext())),
      causal ? "true" : "false");
  return args;
}

LogicalResult mlir::dsc::cpp::emitAttentionCall(LibraryCall &call) {
  Operation *op = call.op();
  // The template arguments are deduced from the (DSC_LIB-converted)
  // pointers: the CUDA side takes CUDA's 16-bit types.
  if (auto fwd = dyn_cast<AttentionOp>(op)) {
    AttentionArgs a = attentionArgs(call, fwd.getQuery(), fwd.getKey(),
                                    fwd.getValue(), fwd.getMask(),
                                    fwd.getScale().convertToDouble(),
                                    fwd.getCausal());
    call.text += llvm::formatv(
        "  dsc_kernels::attentionForward(stream, {0}, {1}, {2}, {3}, {4}, "
        "{5}, {6});\n",
        call.in(fwd.getQuery()), call.in(fwd.getKey()), call.in(fwd.getValue()),
        a.mask, call.out(0), call.out(1), a.dims);
    return success();
  }
  auto bwd = cast<AttentionGradOp>(op);
  AttentionArgs a = attentionArgs(call, bwd.getQuery(), bwd.getKey(),
                                  bwd.getValue(), bwd.getMask(),
                                  bwd.getScale().convertToDouble(),
                                  bwd.getCausal());
  call.text += llvm::formatv(
      "  dsc_kernels::attentionBackward(stream, {0}, {1}, {2}, {3}, {4}, {5}, "
      "{6}, {7}, {8}, {9}, {10});\n",
      call.in(bwd.getQuery()), call.in(bwd.getKey()), call.in(bwd.getValue()),
      call.in(bwd.getResult()), call.in(bwd.getResultGrad()),
      call.in(bwd.getLogsumexp()), a.mask, call.out(0), call.out(1),
      call.out(2), a.dims);
  return success();
}
