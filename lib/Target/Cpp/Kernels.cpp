//===- Kernels.cpp - loops for dsc ops, static shapes, CPU or CUDA ---------===//
//
// The kernels the library does not compute (LibraryCalls.h has those):
// chains of elementwise ops fused into one loop, and the few forms
// docs/kernels.md lists under "what is still generated". Each is a host
// function launching loop functions whose shapes are compile-time
// constants in the emitted text, written against the macros of the
// runtime's dsc/runtime/GeneratedCode.h (.cuh on CUDA). A parallel loop
// computes one output element (or one independent row) per iteration; a
// serial loop runs in order on one thread (scatter-add, a summed loss). Reductions accumulate
// in double (float inputs) or int64 so results stay within fp32 tolerance
// of PyTorch's. Loop bodies use only what both compilers accept in device
// code: arithmetic, <cmath> functions, no allocation, no exceptions.
//
// 16-bit float tensors (bf16, f16) are arrays of dsc_bf16 / dsc_f16, 2-byte
// words that widen to float implicitly where they are read and round to
// nearest even where they are written (GeneratedCode.h and .cuh define
// them per target). So every loop below computes in float (or its double
// accumulators) for them too, and rounds once per op result, as PyTorch's
// 16-bit kernels do; literals are float literals, and GEMMs take 16-bit
// operands and accumulate in fp32.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"
#include "LibraryCalls.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::cpp;

std::string mlir::dsc::cpp::cType(Type t) {
  if (t.isF64()) return "double";
  if (t.isF32()) return "float";
  if (t.isBF16()) return "dsc_bf16";
  if (t.isF16()) return "dsc_f16";
  if (t.isInteger(64)) return "int64_t";
  if (t.isInteger(32)) return "int32_t";
  if (t.isInteger(1)) return "uint8_t";
  return "";
}

SmallVector<int64_t> mlir::dsc::cpp::stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

static int64_t numel(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

static RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

std::string mlir::dsc::cpp::computeType(Type t) {
  return t.isBF16() || t.isF16() ? "float" : cType(t);
}

std::string mlir::dsc::cpp::literal(double value, Type t) {
  std::string ty = computeType(t);
  if (std::isinf(value))
    return std::string(value < 0 ? "-" : "") + "DSC_INF(" + ty + ")";
  if (std::isnan(value))
    return "DSC_NAN(" + ty + ")";
  if (!isa<FloatType>(t))
    return std::to_string(int64_t(value));
  std::string s = llvm::formatv("{0:e17}", value).str();
  return ty == "float" ? s + "f" : s;
}

/// Index expression of an operand of shape `in`, broadcast (NumPy rules) to
/// the coordinates c0..c{rank-1} of shape `out`.
static std::string broadcastIndex(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  SmallVector<int64_t> strides = stridesOf(in);
  int64_t offset = int64_t(out.size()) - int64_t(in.size());
  std::string expr;
  for (int64_t d = 0; d < int64_t(in.size()); ++d) {
    if (in[d] == 1)
      continue;
    if (!expr.empty())
      expr += " + ";
    expr += "c" + std::to_string(d + offset) + " * " + std::to_string(strides[d]);
  }
  return expr.empty() ? "0" : expr;
}

/// sum_d coord[d] * strides[d]; dimensions of size 1 contribute nothing.
static std::string linear(ArrayRef<std::string> coords, ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides = stridesOf(shape);
  std::string e;
  for (size_t d = 0; d < coords.size(); ++d) {
    if (shape[d] == 1)
      continue;
    if (!e.empty())
      e += " + ";
    e += "(" + coords[d] + ") * " + std::to_string(strides[d]);
  }
  return e.empty() ? "0" : e;
}

static SmallVector<std::string> coords(int64_t rank, StringRef prefix = "c") {
  SmallVector<std::string> c;
  for (int64_t d = 0; d < rank; ++d)
    c.push_back(prefix.str() + std::to_string(d));
  return c;
}

/// outer x n x inner view of `shape` around `dim`.
static void split(ArrayRef<int64_t> shape, int64_t dim, int64_t &outer,
                  int64_t &n, int64_t &inner) {
  outer = numel(shape.take_front(dim));
  n = shape[dim];
  inner = numel(shape.drop_front(dim + 1));
}

/// The runtime has GEMMs over these (DSC_GEMM).
static bool hasGemm(Type t) { return t.isF32() || t.isBF16() || t.isF16(); }

namespace {
class Emitter {
public:
  explicit Emitter(dscrt::KernelOp kernel) : kernel(kernel) {}

  LogicalResult run(StringRef name, llvm::raw_ostream &os) {
    kernelName = name.str();
    Block &block = kernel.getBody().front();
    FailureOr<std::string> params = kernelParameters(kernel);
    if (failed(params))
      return failure();
    paramList = *params;
    SmallVector<std::string> args;
    for (auto [i, arg] : llvm::enumerate(block.getArguments())) {
      args.push_back("in" + std::to_string(i));
      ptr[arg] = "in" + std::to_string(i);
    }
    auto yield = cast<dscrt::YieldOp>(block.getTerminator());
    for (unsigned i = 0; i < yield.getValues().size(); ++i)
      args.push_back("out" + std::to_string(i));
    argList = llvm::join(args, ", ");
    if (failed(emitBody(block, yield)))
      return failure();
    flushLoop();
    // The stream is the launches' and GEMMs' on CUDA (DSC_LAUNCH, DSC_GEMM).
    os << loops << "static void " << name << "(dsc_stream_t stream, "
       << paramList << ") {\n  (void)stream;\n" << host << "}\n\n";
    return success();
  }

private:
  // --- loop functions ------------------------------------------------------

  /// Starts a loop function over i in [0, n) with coordinates c0.. of
  /// `shape` (whose element count is n) decoded from i.
  void beginLoop(ArrayRef<int64_t> shape, bool parallel = true) {
    beginLoop(numel(shape), parallel);
    SmallVector<int64_t> strides = stridesOf(shape);
    for (int64_t d = 0; d < int64_t(shape.size()); ++d)
      body << "    const int64_t c" << d << " = (i / " << strides[d] << ") % "
           << shape[d] << "; (void)c" << d << ";\n";
  }
  void beginLoop(int64_t n, bool parallel = true) {
    flushLoop();
    std::string fn = kernelName + "_" + std::to_string(loopCount++);
    header = "DSC_GLOBAL void " + fn + "(" + paramList + ") {\n  " +
             (parallel ? "DSC_FOR" : "DSC_SERIAL_FOR") + "(i, " +
             std::to_string(n) + ") {\n";
    launch = parallel ? "  DSC_LAUNCH(" + fn + ", " + std::to_string(n) + ", " +
                            argList + ");\n"
                      : "  DSC_LAUNCH_SERIAL(" + fn + ", " + argList + ");\n";
    open = true;
  }
  void flushLoop() {
    if (!open)
      return;
    loops += header + bodyText + "  }\n}\n\n";
    host += launch;
    bodyText.clear();
    open = false;
  }
  void hostLine(const std::string &line) {
    flushLoop();
    host += line;
  }

  // --- bodies --------------------------------------------------------------

  LogicalResult emitBody(Block &block, dscrt::YieldOp yield) {
    SmallVector<Operation *> ops;
    for (Operation &op : block.without_terminator())
      ops.push_back(&op);
    // A kernel that yields its inputs is the library's copy (any type).
    assert(!ops.empty() && "copies are library kernels");
    if (llvm::all_of(ops, [](Operation *op) { return isElementwise(op); }))
      return emitElementwise(ops, yield);
    if (ops.size() != 1)
      return ops.front()->emitError(
          "cannot emit a fused kernel of non-elementwise ops");
    return emitSingle(ops.front());
  }

  LogicalResult emitElementwise(ArrayRef<Operation *> ops, dscrt::YieldOp yield) {
    ArrayRef<int64_t> shape = tensorOf(yield.getValues().front()).getShape();
    beginLoop(shape);
    for (Operation *op : ops) {
      std::string expr;
      if (failed(scalarExpr(op, shape, expr)))
        return failure();
      std::string var = "t" + std::to_string(scalar.size());
      Type elem = tensorOf(op->getResult(0)).getElementType();
      body << "    const " << cType(elem) << " " << var << " = " << expr << ";\n";
      scalar[op->getResult(0)] = var;
    }
    for (auto [k, v] : llvm::enumerate(yield.getValues()))
      body << "    out" << k << "[i] = " << scalar[v] << ";\n";
    return success();
  }

  /// The value of `v` at the loop's output position.
  std::string at(Value v, ArrayRef<int64_t> outShape) {
    auto it = scalar.find(v);
    if (it != scalar.end())
      return it->second;
    ArrayRef<int64_t> in = tensorOf(v).getShape();
    if (in == outShape)
      return ptr[v] + "[i]";
    return ptr[v] + "[" + broadcastIndex(in, outShape) + "]";
  }

  LogicalResult scalarExpr(Operation *op, ArrayRef<int64_t> shape, std::string &e) {
    auto a = [&](unsigned i) { return "(" + at(op->getOperand(i), shape) + ")"; };
    Type elem = tensorOf(op->getResult(0)).getElementType();
    std::string ty = cType(elem);
    std::string one = literal(1.0, elem);
    if (isa<AddOp>(op)) e = a(0) + " + " + a(1);
    else if (isa<SubOp>(op)) e = a(0) + " - " + a(1);
    else if (isa<MulOp>(op)) e = a(0) + " * " + a(1);
    else if (isa<DivOp>(op)) e = a(0) + " / " + a(1);
    else if (isa<PowOp>(op)) e = "pow(" + a(0) + ", " + a(1) + ")";
    else if (isa<MaximumOp>(op)) e = "dsc_max(" + a(0) + ", " + a(1) + ")";
    else if (isa<MinimumOp>(op)) e = "dsc_min(" + a(0) + ", " + a(1) + ")";
    else if (isa<NegOp>(op)) e = "-" + a(0);
    else if (isa<ReluOp>(op)) e = a(0) + " < 0 ? " + ty + "(0) : " + a(0);
    else if (isa<SiluOp>(op)) e = a(0) + " / (" + one + " + exp(-" + a(0) + "))";
    else if (isa<SigmoidOp>(op)) e = one + " / (" + one + " + exp(-" + a(0) + "))";
    else if (isa<TanhOp>(op)) e = "tanh(" + a(0) + ")";
    else if (isa<ExpOp>(op)) e = "exp(" + a(0) + ")";
    else if (isa<CosOp>(op)) e = "cos(" + a(0) + ")";
    else if (isa<SinOp>(op)) e = "sin(" + a(0) + ")";
    else if (isa<LogOp>(op)) e = "log(" + a(0) + ")";
    else if (isa<SqrtOp>(op)) e = "sqrt(" + a(0) + ")";
    else if (isa<RsqrtOp>(op)) e = one + " / sqrt(" + a(0) + ")";
    else if (auto gelu = dyn_cast<GeluOp>(op)) {
      std::string x = a(0);
      if (gelu.getApproximation() == GeluApproximation::erf)
        e = literal(0.5, elem) + " * " + x + " * (" + one + " + erf(" + x +
            " * " + literal(M_SQRT1_2, elem) + "))";
      else
        e = literal(0.5, elem) + " * " + x + " * (" + one + " + tanh(" +
            literal(std::sqrt(2.0 / M_PI), elem) + " * (" + x + " + " +
            literal(0.044715, elem) + " * " + x + " * " + x + " * " + x + ")))";
    } else if (auto gg = dyn_cast<GeluGradOp>(op)) {
      // PyTorch's GeluBackward formulas.
      std::string x = a(0), half = literal(0.5, elem);
      if (gg.getApproximation() == GeluApproximation::erf) {
        e = half + " * (" + one + " + erf(" + x + " * " + literal(M_SQRT1_2, elem) +
            ")) + " + x + " * " + literal(M_2_SQRTPI * M_SQRT1_2 * 0.5, elem) +
            " * exp(-" + half + " * " + x + " * " + x + ")";
      } else {
        std::string k = literal(M_SQRT2 * M_2_SQRTPI * 0.5, elem);
        std::string t = "tanh(" + k + " * (" + x + " + " + literal(0.044715, elem) +
                        " * " + x + " * " + x + " * " + x + "))";
        e = half + " * (" + one + " + " + t + ") + " + half + " * " + x + " * (" +
            one + " - " + t + " * " + t + ") * " + k + " * (" + one + " + " +
            literal(3 * 0.044715, elem) + " * " + x + " * " + x + ")";
      }
    } else if (isa<ConvertOp>(op)) {
      e = elem.isInteger(1) ? "uint8_t(" + a(0) + " != 0)"
                            : "static_cast<" + ty + ">(" + a(0) + ")";
    } else if (auto cmp = dyn_cast<CompareOp>(op)) {
      static const char *ops[] = {"==", "!=", "<", "<=", ">", ">="};
      e = "uint8_t(" + a(0) + " " + ops[int(cmp.getDirection())] + " " + a(1) + ")";
    } else if (isa<SelectOp>(op)) {
      e = a(0) + " ? " + a(1) + " : " + a(2);
    } else {
      return op->emitError() << "no elementwise form for '" << op->getName() << "'";
    }
    return success();
  }

  std::string in(Operation *op, unsigned i) { return ptr[op->getOperand(i)]; }

  LogicalResult emitSingle(Operation *op) {
    ArrayRef<int64_t> outShape = tensorOf(op->getResult(0)).getShape();
    Type outElem = tensorOf(op->getResult(0)).getElementType();
    std::string oty = cType(outElem);
    if (oty.empty())
      return op->emitError() << "the CPU and CUDA targets do not support "
                             << outElem << " yet";

    if (auto e = dyn_cast<EmbeddingOp>(op)) {
      ArrayRef<int64_t> t = tensorOf(e.getTable()).getShape();
      beginLoop(numel(outShape));
      body << llvm::formatv(
          "    const int64_t row = static_cast<int64_t>({0}[i / {1}]);\n"
          "    if (row < 0 || row >= {2}) DSC_INDEX_ERROR(\"dsc.embedding\", row, {2});\n"
          "    out0[i] = {3}[row * {1} + i % {1}];\n",
          in(op, 1), t[1], t[0], in(op, 0));
      return success();
    }
    // dsc.linear is the library's GEMM (f32, bf16, f16 data) only.
    if (isa<LinearOp>(op))
      return op->emitError("dsc.linear needs f32, bf16 or f16 on the CPU and CUDA targets");
    if (auto mm = dyn_cast<MatmulOp>(op))
      return emitMatmul(mm, outShape);
    // Only the kernel library computes attention (LibraryAttention.cpp);
    // --dscrt-select-library picks it for f32, bf16 and f16 data.
    if (isa<AttentionOp, AttentionGradOp>(op))
      return op->emitError() << "'" << op->getName()
                             << "' runs as the library kernel 'attention' "
                                "only: f32, bf16 or f16 data, after "
                                "--dscrt-select-library";
    if (auto ln = dyn_cast<LayerNormOp>(op)) {
      int64_t inner = numel(outShape.take_back(ln.getNormalizedRank()));
      unsigned next = 1;
      std::string w = ln.getWeight() ? in(op, next++) : "";
      std::string b = ln.getBias() ? in(op, next++) : "";
      beginLoop(numel(outShape) / inner);
      body << llvm::formatv(
          "    const {3} *x = {1} + i * {0};\n"
          "    double mean = 0, var = 0;\n"
          "    for (int64_t j = 0; j < {0}; ++j) mean += x[j];\n"
          "    mean /= {0};\n"
          "    for (int64_t j = 0; j < {0}; ++j) var += (x[j] - mean) * (x[j] - mean);\n"
          "    const double rstd = 1.0 / sqrt(var / {0} + {2});\n"
          "    for (int64_t j = 0; j < {0}; ++j) {{\n"
          "      double y = (x[j] - mean) * rstd;\n",
          inner, in(op, 0),
          literal(ln.getEpsilon().convertToDouble(), Float64Type::get(op->getContext())),
          oty);
      if (!w.empty())
        body << "      y *= " << w << "[j];\n";
      if (!b.empty())
        body << "      y += " << b << "[j];\n";
      body << "      out0[i * " << inner << " + j] = static_cast<" << oty << ">(y);\n    }\n";
      return success();
    }
    if (isa<SoftmaxOp, LogSoftmaxOp>(op)) {
      int64_t dim = isa<SoftmaxOp>(op) ? int64_t(cast<SoftmaxOp>(op).getDim())
                                       : int64_t(cast<LogSoftmaxOp>(op).getDim());
      int64_t outer, n, inner;
      split(outShape, dim, outer, n, inner);
      beginLoop(outer * inner);
      body << llvm::formatv(
          "    const int64_t o = i / {1}, q = i % {1};\n"
          "    const {3} *x = {2} + o * {0} * {1} + q;\n"
          "    {3} *y = out0 + o * {0} * {1} + q;\n"
          "    {3} m = -DSC_INF({4});\n"
          "    for (int64_t j = 0; j < {0}; ++j) m = x[j * {1}] > m ? x[j * {1}] : m;\n"
          "    double sum = 0;\n"
          "    for (int64_t j = 0; j < {0}; ++j) sum += exp(x[j * {1}] - m);\n",
          n, inner, in(op, 0), oty, computeType(outElem));
      if (isa<LogSoftmaxOp>(op))
        body << "    const double lse = log(sum);\n"
             << "    for (int64_t j = 0; j < " << n << "; ++j) y[j * " << inner
             << "] = static_cast<" << oty << ">(x[j * " << inner << "] - m - lse);\n";
      else
        body << "    for (int64_t j = 0; j < " << n << "; ++j) y[j * " << inner
             << "] = static_cast<" << oty << ">(exp(x[j * " << inner
             << "] - m) / sum);\n";
      return success();
    }
    if (auto g = dyn_cast<GatherOp>(op)) {
      ArrayRef<int64_t> inShape = tensorOf(g.getInput()).getShape();
      int64_t size = inShape[g.getDim()];
      SmallVector<std::string> c = coords(outShape.size());
      c[g.getDim()] = "j";
      beginLoop(outShape);
      body << "    const int64_t j = static_cast<int64_t>(" << in(op, 1) << "[i]);\n"
           << "    if (j < 0 || j >= " << size << ") DSC_INDEX_ERROR(\"dsc.gather\", j, "
           << size << ");\n"
           << "    out0[i] = " << in(op, 0) << "[" << linear(c, inShape) << "];\n";
      return success();
    }
    if (auto s = dyn_cast<ScatterAddOp>(op)) {
      ArrayRef<int64_t> idxShape = tensorOf(s.getIndex()).getShape();
      ArrayRef<int64_t> srcShape = tensorOf(s.getSrc()).getShape();
      int64_t size = outShape[s.getDim()];
      beginLoop(numel(outShape));
      body << "    out0[i] = " << in(op, 0) << "[i];\n";
      // Several positions may add into one element: in order, one thread.
      SmallVector<std::string> c = coords(idxShape.size());
      SmallVector<std::string> oc = c;
      oc[s.getDim()] = "j";
      beginLoop(idxShape, /*parallel=*/false);
      std::string target = "out0[" + linear(oc, outShape) + "]";
      // A 16-bit element has no +=: widen, add, round.
      body << "    const int64_t j = static_cast<int64_t>(" << in(op, 1) << "[i]);\n"
           << "    if (j < 0 || j >= " << size << ") DSC_INDEX_ERROR(\"dsc.scatter_add\", j, "
           << size << ");\n"
           << "    " << target << (computeType(outElem) == oty ? " += " : " = " + target + " + ")
           << in(op, 2) << "[" << linear(c, srcShape) << "];\n";
      return success();
    }
    if (isa<OneHotOp>(op)) {
      int64_t classes = outShape.back();
      beginLoop(numel(outShape));
      body << "    out0[i] = static_cast<" << oty << ">(" << in(op, 0) << "[i / "
           << classes << "] == i % " << classes << ");\n";
      return success();
    }
    if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(op))
      return emitReduce(op);
    if (auto ce = dyn_cast<CrossEntropyOp>(op))
      return emitCrossEntropy(ce);
    // Dropout has a library kernel only (dsc/kernels/Random.h).
    if (isa<DropoutOp>(op))
      return op->emitError("dsc.dropout needs f32, bf16 or f16 on the CPU and "
                           "CUDA targets");
    // The routing ops have library kernels only (dsc/kernels/Moe.h).
    if (isa<MoeDispatchOp, MoeCombineOp, MoeRouteDotOp>(op))
      return op->emitError() << op->getName()
                             << " needs f32, bf16 or f16 on the CPU and CUDA targets";
    // Everything else (layout, top-k, cumsum, ...) is a library kernel for
    // every type it takes (the lowering has top-k write both its results).
    return op->emitError() << "'" << op->getName()
                           << "' runs as a library kernel only, after "
                              "--dscrt-select-library";
  }

  LogicalResult emitMatmul(MatmulOp mm, ArrayRef<int64_t> outShape) {
    if (!hasGemm(tensorOf(mm.getResult()).getElementType()))
      return mm.emitError("dsc.matmul needs f32, bf16 or f16 on the CPU and CUDA targets");
    ArrayRef<int64_t> a = tensorOf(mm.getLhs()).getShape();
    ArrayRef<int64_t> b = tensorOf(mm.getRhs()).getShape();
    int64_t m = outShape[outShape.size() - 2], n = outShape.back();
    int64_t k = mm.getTransposeLhs() ? a[a.size() - 2] : a.back();
    ArrayRef<int64_t> batch = outShape.drop_back(2);
    // Batch offsets of each operand, broadcast to the output's batch; one
    // GEMM call per output batch item, from the host.
    std::string text = llvm::formatv(
        "  {{ dsc::rt::cpu::GemmShape s; s.m = {0}; s.n = {1}; s.k = {2};"
        " s.transA = {3}; s.transB = {4};\n"
        "    for (int64_t i = 0; i < {5}; ++i) {{\n",
        m, n, k, mm.getTransposeLhs() ? "true" : "false",
        mm.getTransposeRhs() ? "true" : "false", numel(batch));
    SmallVector<int64_t> strides = stridesOf(batch);
    for (int64_t d = 0; d < int64_t(batch.size()); ++d)
      text += "      const int64_t c" + std::to_string(d) + " = (i / " +
              std::to_string(strides[d]) + ") % " + std::to_string(batch[d]) +
              "; (void)c" + std::to_string(d) + ";\n";
    text += "      DSC_GEMM(s, " + in(mm, 0) + " + (" +
            broadcastIndex(a.drop_back(2), batch) + ") * " + std::to_string(m * k) +
            ", " + in(mm, 1) + " + (" + broadcastIndex(b.drop_back(2), batch) +
            ") * " + std::to_string(k * n) + ", out0 + i * " +
            std::to_string(m * n) + ", 1.0f, 0.0f);\n    }\n  }\n";
    hostLine(text);
    return success();
  }

  /// One iteration per output element, looping over the reduced
  /// coordinates: no scratch memory, the same on both targets.
  LogicalResult emitReduce(Operation *op) {
    ArrayRef<int64_t> inShape = tensorOf(op->getOperand(0)).getShape();
    ArrayRef<int64_t> dims;
    if (auto r = dyn_cast<ReduceSumOp>(op)) dims = r.getDims();
    if (auto r = dyn_cast<ReduceMeanOp>(op)) dims = r.getDims();
    if (auto r = dyn_cast<ReduceMaxOp>(op)) dims = r.getDims();
    Type elem = tensorOf(op->getResult(0)).getElementType();
    std::string oty = cType(elem);
    bool isMax = isa<ReduceMaxOp>(op);
    std::string acc = isMax ? oty : (isa<FloatType>(elem) ? "double" : "int64_t");
    SmallVector<int64_t> kept, reduced;
    for (int64_t d = 0; d < int64_t(inShape.size()); ++d)
      (llvm::is_contained(dims, d) ? reduced : kept).push_back(inShape[d]);
    // Coordinates: kept dims from i (k0..), reduced dims from r (r0..).
    SmallVector<std::string> c;
    int64_t ki = 0, ri = 0;
    for (int64_t d = 0; d < int64_t(inShape.size()); ++d)
      c.push_back(llvm::is_contained(dims, d) ? "r" + std::to_string(ri++)
                                              : "k" + std::to_string(ki++));
    beginLoop(numel(kept));
    SmallVector<int64_t> ks = stridesOf(kept), rs = stridesOf(reduced);
    for (size_t d = 0; d < kept.size(); ++d)
      body << "    const int64_t k" << d << " = (i / " << ks[d] << ") % " << kept[d]
           << "; (void)k" << d << ";\n";
    body << "    " << acc << " a = "
         << (isMax ? (isa<FloatType>(elem) ? "-DSC_INF(" + computeType(elem) + ")"
                                           : "DSC_LOWEST(" + oty + ")")
                   : acc + "(0)")
         << ";\n    for (int64_t r = 0; r < " << numel(reduced) << "; ++r) {\n";
    for (size_t d = 0; d < reduced.size(); ++d)
      body << "      const int64_t r" << d << " = (r / " << rs[d] << ") % "
           << reduced[d] << "; (void)r" << d << ";\n";
    body << "      const " << oty << " v = " << in(op, 0) << "[" << linear(c, inShape)
         << "];\n";
    if (isMax)
      body << "      a = v > a || v != v ? v : a;\n";
    else
      body << "      a += v;\n";
    body << "    }\n    out0[i] = static_cast<" << oty << ">(a"
         << (isa<ReduceMeanOp>(op) ? " / " + std::to_string(numel(reduced)) + ".0" : "")
         << ");\n";
    return success();
  }

  LogicalResult emitCrossEntropy(CrossEntropyOp ce) {
    ArrayRef<int64_t> l = tensorOf(ce.getLogits()).getShape();
    int64_t classes = l.back(), rows = numel(l) / classes;
    std::string oty = cType(tensorOf(ce.getResult()).getElementType());
    std::string rowLoss = llvm::formatv(
        "      const {3} *x = {0} + r * {1};\n"
        "      double m = x[0];\n"
        "      for (int64_t j = 1; j < {1}; ++j) if (x[j] > m) m = x[j];\n"
        "      double sum = 0;\n"
        "      for (int64_t j = 0; j < {1}; ++j) sum += exp(x[j] - m);\n"
        "      loss = m + log(sum) - x[t];\n",
        in(ce, 0), classes, "", oty);
    std::string target = llvm::formatv(
        "      const int64_t t = static_cast<int64_t>({0}[r]);\n", in(ce, 1));
    std::string check = llvm::formatv(
        "      if (t < 0 || t >= {0}) DSC_INDEX_ERROR(\"dsc.cross_entropy\", t, {0});\n",
        classes);
    int64_t ignore = ce.getIgnoreIndex();
    if (ce.getReduction() == LossReduction::none) {
      beginLoop(rows);
      body << "    const int64_t r = i;\n    {\n" << target << "      double loss = 0;\n"
           << "      if (t != " << ignore << ") {\n" << check << rowLoss << "      }\n"
           << "      out0[r] = static_cast<" << oty << ">(loss);\n    }\n";
      return success();
    }
    // The sum over rows, in order on one thread: the same total as PyTorch's
    // up to rounding, identical on every run.
    beginLoop(1, /*parallel=*/false);
    body << "    double total = 0; int64_t count = 0;\n"
         << "    for (int64_t r = 0; r < " << rows << "; ++r) {\n" << target
         << "      if (t == " << ignore << ") continue;\n" << check
         << "      double loss;\n" << rowLoss << "      total += loss; ++count;\n    }\n";
    if (ce.getReduction() == LossReduction::sum)
      body << "    out0[0] = static_cast<" << oty << ">(total);\n";
    else
      body << "    out0[0] = static_cast<" << oty
           << ">(total / static_cast<double>(count));\n";
    return success();
  }

  dscrt::KernelOp kernel;
  std::string kernelName, paramList, argList;
  std::string loops, host, header, launch, bodyText;
  llvm::raw_string_ostream body{bodyText};
  int loopCount = 0;
  bool open = false;
  llvm::DenseMap<Value, std::string> ptr;    // tensor in memory
  llvm::DenseMap<Value, std::string> scalar; // value inside a fused loop
};
} // namespace

/// Whether an output of `kernel` is the memory of one of its inputs: a
/// state it updates in place (the lowering writes a stored value straight
/// into the state). Its pointers must then not be __restrict.
static bool updatesInPlace(dscrt::KernelOp kernel) {
  auto stateIndex = [](Value buffer) -> std::optional<int64_t> {
    if (auto state = buffer.getDefiningOp<dscrt::StateOp>())
      return state.getIndex();
    return std::nullopt;
  };
  for (Value out : kernel.getOuts()) {
    if (llvm::is_contained(kernel.getIns(), out))
      return true; // a temporary updated in place
    if (std::optional<int64_t> written = stateIndex(out))
      for (Value in : kernel.getIns())
        if (stateIndex(in) == written)
          return true;
  }
  return false;
}

FailureOr<std::string> mlir::dsc::cpp::kernelParameters(dscrt::KernelOp kernel) {
  Block &block = kernel.getBody().front();
  SmallVector<std::string> params;
  std::string restrict = updatesInPlace(kernel) ? " *" : " *__restrict ";
  auto add = [&](Value v, StringRef qualifier, StringRef name) -> LogicalResult {
    Type elem = tensorOf(v).getElementType();
    std::string ty = cType(elem);
    if (ty.empty())
      return kernel.emitError() << "the CPU and CUDA targets do not support "
                                << elem << " yet";
    params.push_back((qualifier + ty + restrict + name).str());
    return success();
  };
  for (auto [i, arg] : llvm::enumerate(block.getArguments()))
    if (failed(add(arg, "const ", "in" + std::to_string(i))))
      return failure();
  auto yield = cast<dscrt::YieldOp>(block.getTerminator());
  for (auto [i, v] : llvm::enumerate(yield.getValues()))
    if (failed(add(v, "", "out" + std::to_string(i))))
      return failure();
  return llvm::join(params, ", ");
}

LogicalResult mlir::dsc::cpp::emitKernel(dscrt::KernelOp kernel, StringRef name,
                                         llvm::raw_ostream &os) {
  if (kernel.getLibrary())
    return emitLibraryCall(kernel, name, os);
  return Emitter(kernel).run(name, os);
}
