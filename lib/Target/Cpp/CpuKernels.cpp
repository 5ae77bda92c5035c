//===- CpuKernels.cpp - C++ loops for dsc ops, static shapes ---------------===//
//
// Every kernel is a function of raw pointers whose shapes are compile-time
// constants in the emitted text. Reductions accumulate in double (float
// inputs) or int64 so results stay within fp32 tolerance of PyTorch's.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "dsc/Conversion/Passes.h"

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

/// A C literal of `value` in type `t`.
static std::string literal(double value, Type t) {
  if (std::isinf(value))
    return (value < 0 ? "-" : "") +
           std::string("std::numeric_limits<") + cType(t) + ">::infinity()";
  if (std::isnan(value))
    return "std::numeric_limits<" + cType(t) + ">::quiet_NaN()";
  if (!isa<FloatType>(t))
    return std::to_string(int64_t(value));
  std::string s = llvm::formatv("{0:e17}", value).str();
  return t.isF32() ? s + "f" : s;
}

/// Index expression of an operand of shape `in`, broadcast (NumPy rules) to
/// the output coordinates c0..c{rank-1}.
static std::string broadcastIndex(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  SmallVector<int64_t> strides = stridesOf(in);
  int64_t offset = int64_t(out.size()) - int64_t(in.size());
  std::string expr;
  for (int64_t d = 0; d < int64_t(in.size()); ++d) {
    if (in[d] == 1 || strides[d] == 0)
      continue;
    if (!expr.empty())
      expr += " + ";
    expr += "c" + std::to_string(d + offset) + " * " + std::to_string(strides[d]);
  }
  return expr.empty() ? "0" : expr;
}

namespace {
/// Emits the body of one kernel. Parameters are named in0.. / out0..; every
/// value of the body has a C expression (a pointer for tensors read from
/// memory, a scalar variable inside fused elementwise loops).
class Emitter {
public:
  Emitter(dscrt::KernelOp kernel, llvm::raw_ostream &os) : kernel(kernel), os(os) {}

  LogicalResult run(StringRef name) {
    Block &body = kernel.getBody().front();
    SmallVector<std::string> params;
    for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
      std::string ty = cType(tensorOf(arg).getElementType());
      if (ty.empty())
        return kernel.emitError() << "the CPU target does not support "
                                  << tensorOf(arg).getElementType() << " yet";
      params.push_back("const " + ty + " *__restrict in" + std::to_string(i));
      ptr[arg] = "in" + std::to_string(i);
    }
    auto yield = cast<dscrt::YieldOp>(body.getTerminator());
    for (auto [i, v] : llvm::enumerate(yield.getValues())) {
      std::string ty = cType(tensorOf(v).getElementType());
      if (ty.empty())
        return kernel.emitError() << "the CPU target does not support "
                                  << tensorOf(v).getElementType() << " yet";
      params.push_back(ty + " *__restrict out" + std::to_string(i));
    }
    os << "static void " << name << "(" << llvm::join(params, ", ") << ") {\n";
    LogicalResult result = emitBody(body, yield);
    os << "}\n\n";
    return result;
  }

private:
  LogicalResult emitBody(Block &body, dscrt::YieldOp yield) {
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    // A kernel that yields a block argument is a copy.
    if (ops.empty()) {
      for (auto [i, v] : llvm::enumerate(yield.getValues()))
        os << "  std::memcpy(out" << i << ", " << ptr[v] << ", "
           << numel(tensorOf(v).getShape()) << " * sizeof(*out" << i << "));\n";
      return success();
    }
    if (llvm::all_of(ops, [](Operation *op) { return isElementwise(op); }))
      return emitElementwise(ops, yield);
    if (ops.size() != 1)
      return ops.front()->emitError("cannot emit a fused kernel of non-elementwise ops");
    return emitSingle(ops.front());
  }

  // --- fused elementwise loops ---------------------------------------------

  LogicalResult emitElementwise(ArrayRef<Operation *> ops, dscrt::YieldOp yield) {
    Value root = yield.getValues().front();
    ArrayRef<int64_t> shape = tensorOf(root).getShape();
    int64_t rank = shape.size();
    os << "  #pragma omp parallel for\n";
    os << "  for (int64_t i = 0; i < " << numel(shape) << "; ++i) {\n";
    SmallVector<int64_t> strides = stridesOf(shape);
    for (int64_t d = 0; d < rank; ++d)
      os << "    const int64_t c" << d << " = (i / " << strides[d] << ") % "
         << shape[d] << "; (void)c" << d << ";\n";
    for (Operation *op : ops) {
      std::string expr;
      if (failed(scalarExpr(op, shape, expr)))
        return failure();
      std::string var = "t" + std::to_string(scalar.size());
      Type elem = tensorOf(op->getResult(0)).getElementType();
      os << "    const " << cType(elem) << " " << var << " = " << expr << ";\n";
      scalar[op->getResult(0)] = var;
    }
    for (auto [i, v] : llvm::enumerate(yield.getValues()))
      os << "    out" << i << "[i] = " << scalar[v] << ";\n";
    os << "  }\n";
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
    else if (isa<PowOp>(op)) e = "std::pow(" + a(0) + ", " + a(1) + ")";
    else if (isa<MaximumOp>(op)) e = "dsc_max(" + a(0) + ", " + a(1) + ")";
    else if (isa<MinimumOp>(op)) e = "dsc_min(" + a(0) + ", " + a(1) + ")";
    else if (isa<NegOp>(op)) e = "-" + a(0);
    else if (isa<ReluOp>(op)) e = a(0) + " < 0 ? " + ty + "(0) : " + a(0);
    else if (isa<SiluOp>(op)) e = a(0) + " / (" + one + " + std::exp(-" + a(0) + "))";
    else if (isa<SigmoidOp>(op)) e = one + " / (" + one + " + std::exp(-" + a(0) + "))";
    else if (isa<TanhOp>(op)) e = "std::tanh(" + a(0) + ")";
    else if (isa<ExpOp>(op)) e = "std::exp(" + a(0) + ")";
    else if (isa<LogOp>(op)) e = "std::log(" + a(0) + ")";
    else if (isa<SqrtOp>(op)) e = "std::sqrt(" + a(0) + ")";
    else if (isa<RsqrtOp>(op)) e = one + " / std::sqrt(" + a(0) + ")";
    else if (auto gelu = dyn_cast<GeluOp>(op)) {
      std::string x = a(0);
      if (gelu.getApproximation() == GeluApproximation::erf)
        e = literal(0.5, elem) + " * " + x + " * (" + one + " + std::erf(" + x +
            " * " + literal(M_SQRT1_2, elem) + "))";
      else
        e = literal(0.5, elem) + " * " + x + " * (" + one + " + std::tanh(" +
            literal(std::sqrt(2.0 / M_PI), elem) + " * (" + x + " + " +
            literal(0.044715, elem) + " * " + x + " * " + x + " * " + x + ")))";
    } else if (isa<ConvertOp>(op)) {
      e = elem.isInteger(1) ? "uint8_t(" + a(0) + " != 0)"
                            : "static_cast<" + ty + ">(" + a(0) + ")";
    } else if (auto cmp = dyn_cast<CompareOp>(op)) {
      static const char *ops[] = {"==", "!=", "<", "<=", ">", ">="};
      e = "uint8_t(" + a(0) + " " + ops[int(cmp.getDirection())] + " " + a(1) + ")";
    } else if (isa<SelectOp>(op)) {
      e = a(0) + " ? " + a(1) + " : " + a(2);
    } else {
      return op->emitError() << "no elementwise C++ form for '" << op->getName() << "'";
    }
    return success();
  }

  // --- single ops ------------------------------------------------------------

  /// Nested loops over `shape` with coordinates c0.. and the flat index i.
  void openLoops(ArrayRef<int64_t> shape, bool parallel = true) {
    if (parallel && !shape.empty())
      os << "  #pragma omp parallel for\n";
    os << "  for (int64_t i = 0; i < " << numel(shape) << "; ++i) {\n";
    SmallVector<int64_t> strides = stridesOf(shape);
    for (int64_t d = 0; d < int64_t(shape.size()); ++d)
      os << "    const int64_t c" << d << " = (i / " << strides[d] << ") % "
         << shape[d] << "; (void)c" << d << ";\n";
  }
  void closeLoops() { os << "  }\n"; }

  /// sum_d coord[d] * strides[d] where coord[d] is the string in `coords`.
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
  static SmallVector<std::string> coords(int64_t rank) {
    SmallVector<std::string> c;
    for (int64_t d = 0; d < rank; ++d)
      c.push_back("c" + std::to_string(d));
    return c;
  }

  /// outer x n x inner view of `shape` around `dim`.
  static void split(ArrayRef<int64_t> shape, int64_t dim, int64_t &outer,
                    int64_t &n, int64_t &inner) {
    outer = numel(shape.take_front(dim));
    n = shape[dim];
    inner = numel(shape.drop_front(dim + 1));
  }

  std::string in(Operation *op, unsigned i) { return ptr[op->getOperand(i)]; }

  LogicalResult emitSingle(Operation *op) {
    ArrayRef<int64_t> outShape = tensorOf(op->getResult(0)).getShape();
    Type outElem = tensorOf(op->getResult(0)).getElementType();
    std::string oty = cType(outElem);
    if (oty.empty())
      return op->emitError() << "the CPU target does not support " << outElem << " yet";

    if (auto e = dyn_cast<EmbeddingOp>(op)) {
      ArrayRef<int64_t> t = tensorOf(e.getTable()).getShape();
      int64_t rows = numel(tensorOf(e.getIndices()).getShape());
      os << llvm::formatv(
          "  #pragma omp parallel for\n"
          "  for (int64_t r = 0; r < {0}; ++r) {{\n"
          "    const int64_t row = static_cast<int64_t>({1}[r]);\n"
          "    if (row < 0 || row >= {2}) dsc_index_error(\"dsc.embedding\", row, {2});\n"
          "    std::memcpy(out0 + r * {3}, {4} + row * {3}, {3} * sizeof(*out0));\n"
          "  }\n",
          rows, in(op, 1), t[0], t[1], in(op, 0));
      return success();
    }
    if (auto l = dyn_cast<LinearOp>(op)) {
      ArrayRef<int64_t> w = tensorOf(l.getWeight()).getShape();
      int64_t m = numel(outShape) / w[0];
      if (!outElem.isF32())
        return op->emitError("dsc.linear on the CPU target needs f32");
      os << llvm::formatv(
          "  {{ dsc::rt::cpu::GemmShape s; s.m = {0}; s.n = {1}; s.k = {2}; "
          "s.transB = true;\n    dsc::rt::cpu::gemmF32(s, {3}, {4}, out0); }\n",
          m, w[0], w[1], in(op, 0), in(op, 1));
      if (l.getBias())
        os << llvm::formatv(
            "  #pragma omp parallel for\n"
            "  for (int64_t r = 0; r < {0}; ++r)\n"
            "    for (int64_t j = 0; j < {1}; ++j) out0[r * {1} + j] += {2}[j];\n",
            m, w[0], in(op, 2));
      return success();
    }
    if (auto mm = dyn_cast<MatmulOp>(op))
      return emitMatmul(mm, outShape);
    if (auto ln = dyn_cast<LayerNormOp>(op)) {
      int64_t inner = numel(outShape.take_back(ln.getNormalizedRank()));
      int64_t rows = numel(outShape) / inner;
      unsigned next = 1;
      std::string w = ln.getWeight() ? in(op, next++) : "";
      std::string b = ln.getBias() ? in(op, next++) : "";
      os << llvm::formatv(
          "  #pragma omp parallel for\n"
          "  for (int64_t r = 0; r < {0}; ++r) {{\n"
          "    const {4} *x = {2} + r * {1};\n"
          "    double mean = 0, var = 0;\n"
          "    for (int64_t j = 0; j < {1}; ++j) mean += x[j];\n"
          "    mean /= {1};\n"
          "    for (int64_t j = 0; j < {1}; ++j) var += (x[j] - mean) * (x[j] - mean);\n"
          "    const double rstd = 1.0 / std::sqrt(var / {1} + {3});\n"
          "    for (int64_t j = 0; j < {1}; ++j) {{\n"
          "      double y = (x[j] - mean) * rstd;\n",
          rows, inner, in(op, 0), literal(ln.getEpsilon().convertToDouble(), Float64Type::get(op->getContext())), oty);
      if (!w.empty())
        os << "      y *= " << w << "[j];\n";
      if (!b.empty())
        os << "      y += " << b << "[j];\n";
      os << "      out0[r * " << inner << " + j] = static_cast<" << oty << ">(y);\n    }\n  }\n";
      return success();
    }
    if (isa<SoftmaxOp, LogSoftmaxOp>(op)) {
      int64_t dim = isa<SoftmaxOp>(op) ? int64_t(cast<SoftmaxOp>(op).getDim())
                                       : int64_t(cast<LogSoftmaxOp>(op).getDim());
      int64_t outer, n, inner;
      split(outShape, dim, outer, n, inner);
      bool log = isa<LogSoftmaxOp>(op);
      os << llvm::formatv(
          "  #pragma omp parallel for\n"
          "  for (int64_t r = 0; r < {0}; ++r) {{\n"
          "    const int64_t o = r / {2}, q = r % {2};\n"
          "    const {4} *x = {3} + o * {1} * {2} + q;\n"
          "    {4} *y = out0 + o * {1} * {2} + q;\n"
          "    {4} m = -std::numeric_limits<{4}>::infinity();\n"
          "    for (int64_t j = 0; j < {1}; ++j) m = x[j * {2}] > m ? x[j * {2}] : m;\n"
          "    double sum = 0;\n"
          "    for (int64_t j = 0; j < {1}; ++j) sum += std::exp(x[j * {2}] - m);\n",
          outer * inner, n, inner, in(op, 0), oty);
      if (log)
        os << "    const double lse = std::log(sum);\n"
              "    for (int64_t j = 0; j < " << n << "; ++j) y[j * " << inner
           << "] = static_cast<" << oty << ">(x[j * " << inner << "] - m - lse);\n  }\n";
      else
        os << "    for (int64_t j = 0; j < " << n << "; ++j) y[j * " << inner
           << "] = static_cast<" << oty << ">(std::exp(x[j * " << inner
           << "] - m) / sum);\n  }\n";
      return success();
    }
    if (auto cm = dyn_cast<CausalMaskOp>(op)) {
      int64_t q = outShape[outShape.size() - 2], k = outShape.back();
      double fill = cm.getFillValue() ? cm.getFillValue()->convertToDouble()
                                      : -std::numeric_limits<double>::infinity();
      openLoops(outShape);
      int64_t r = outShape.size();
      os << "    out0[i] = c" << r - 1 << " > c" << r - 2 << " + " << (k - q)
         << " ? " << literal(fill, outElem) << " : " << in(op, 0) << "[i];\n";
      closeLoops();
      return success();
    }
    if (auto t = dyn_cast<TransposeOp>(op)) {
      SmallVector<int64_t> perm;
      for (int64_t d = 0; d < int64_t(outShape.size()); ++d)
        perm.push_back(d);
      std::swap(perm[t.getDim0()], perm[t.getDim1()]);
      return emitPermute(op, perm);
    }
    if (auto p = dyn_cast<PermuteOp>(op))
      return emitPermute(op, p.getPermutation());
    if (auto s = dyn_cast<SliceOp>(op)) {
      ArrayRef<int64_t> inShape = tensorOf(s.getInput()).getShape();
      SmallVector<std::string> c = coords(outShape.size());
      c[s.getDim()] = std::to_string(int64_t(s.getStart())) + " + c" +
                      std::to_string(int64_t(s.getDim())) + " * " +
                      std::to_string(int64_t(s.getStep()));
      openLoops(outShape);
      os << "    out0[i] = " << in(op, 0) << "[" << linear(c, inShape) << "];\n";
      closeLoops();
      return success();
    }
    if (auto c = dyn_cast<ConcatOp>(op)) {
      int64_t dim = c.getDim(), start = 0;
      for (Value input : c.getInputs()) {
        ArrayRef<int64_t> inShape = tensorOf(input).getShape();
        SmallVector<std::string> oc = coords(inShape.size());
        oc[dim] = "c" + std::to_string(dim) + " + " + std::to_string(start);
        openLoops(inShape);
        os << "    out0[" << linear(oc, outShape) << "] = " << ptr[input] << "[i];\n";
        closeLoops();
        start += inShape[dim];
      }
      return success();
    }
    if (isa<BroadcastOp>(op)) {
      openLoops(outShape);
      os << "    out0[i] = " << in(op, 0) << "["
         << broadcastIndex(tensorOf(op->getOperand(0)).getShape(), outShape) << "];\n";
      closeLoops();
      return success();
    }
    if (auto g = dyn_cast<GatherOp>(op)) {
      ArrayRef<int64_t> inShape = tensorOf(g.getInput()).getShape();
      SmallVector<std::string> c = coords(outShape.size());
      c[g.getDim()] = "j";
      openLoops(outShape);
      os << "    const int64_t j = static_cast<int64_t>(" << in(op, 1) << "[i]);\n"
         << "    if (j < 0 || j >= " << inShape[g.getDim()]
         << ") dsc_index_error(\"dsc.gather\", j, " << inShape[g.getDim()] << ");\n"
         << "    out0[i] = " << in(op, 0) << "[" << linear(c, inShape) << "];\n";
      closeLoops();
      return success();
    }
    if (auto s = dyn_cast<ScatterAddOp>(op)) {
      ArrayRef<int64_t> idxShape = tensorOf(s.getIndex()).getShape();
      ArrayRef<int64_t> srcShape = tensorOf(s.getSrc()).getShape();
      os << "  std::memcpy(out0, " << in(op, 0) << ", " << numel(outShape)
         << " * sizeof(*out0));\n";
      SmallVector<std::string> c = coords(idxShape.size());
      SmallVector<std::string> oc = c;
      oc[s.getDim()] = "j";
      openLoops(idxShape, /*parallel=*/false);
      os << "    const int64_t j = static_cast<int64_t>(" << in(op, 1) << "[i]);\n"
         << "    if (j < 0 || j >= " << outShape[s.getDim()]
         << ") dsc_index_error(\"dsc.scatter_add\", j, " << outShape[s.getDim()] << ");\n"
         << "    out0[" << linear(oc, outShape) << "] += " << in(op, 2) << "["
         << linear(c, srcShape) << "];\n";
      closeLoops();
      return success();
    }
    if (auto tk = dyn_cast<TopKOp>(op)) {
      ArrayRef<int64_t> inShape = tensorOf(tk.getInput()).getShape();
      int64_t outer, n, inner;
      split(inShape, tk.getDim(), outer, n, inner);
      int64_t k = tk.getK();
      os << llvm::formatv(
          "  #pragma omp parallel for\n"
          "  for (int64_t r = 0; r < {0}; ++r) {{\n"
          "    const int64_t o = r / {2}, q = r % {2};\n"
          "    const {5} *x = {3} + o * {1} * {2} + q;\n"
          "    std::vector<int64_t> order({1});\n"
          "    for (int64_t j = 0; j < {1}; ++j) order[j] = j;\n"
          "    // Descending; ties keep the lower index first (dsc.top_k).\n"
          "    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {{\n"
          "      return x[a * {2}] > x[b * {2}]; });\n"
          "    for (int64_t j = 0; j < {4}; ++j) {{\n"
          "      out0[o * {4} * {2} + j * {2} + q] = x[order[j] * {2}];\n"
          "      out1[o * {4} * {2} + j * {2} + q] = order[j];\n"
          "    }\n  }\n",
          outer * inner, n, inner, in(op, 0), k, oty);
      return success();
    }
    if (auto cs = dyn_cast<CumsumOp>(op)) {
      int64_t outer, n, inner;
      split(outShape, cs.getDim(), outer, n, inner);
      os << llvm::formatv(
          "  for (int64_t r = 0; r < {0}; ++r) {{\n"
          "    const int64_t o = r / {2}, q = r % {2};\n"
          "    {4} acc = 0;\n"
          "    for (int64_t j = 0; j < {1}; ++j) {{\n"
          "      acc += {3}[o * {1} * {2} + j * {2} + q];\n"
          "      out0[o * {1} * {2} + j * {2} + q] = acc;\n"
          "    }\n  }\n",
          outer * inner, n, inner, in(op, 0), oty);
      return success();
    }
    if (isa<OneHotOp>(op)) {
      int64_t classes = outShape.back();
      os << llvm::formatv(
          "  for (int64_t r = 0; r < {0}; ++r)\n"
          "    for (int64_t j = 0; j < {1}; ++j)\n"
          "      out0[r * {1} + j] = static_cast<{3}>({2}[r] == j);\n",
          numel(outShape) / classes, classes, in(op, 0), oty);
      return success();
    }
    if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(op))
      return emitReduce(op);
    if (auto ce = dyn_cast<CrossEntropyOp>(op)) {
      ArrayRef<int64_t> l = tensorOf(ce.getLogits()).getShape();
      int64_t classes = l.back(), rows = numel(l) / classes;
      os << llvm::formatv(
          "  double total = 0; int64_t count = 0;\n"
          "  for (int64_t r = 0; r < {0}; ++r) {{\n"
          "    const int64_t t = static_cast<int64_t>({3}[r]);\n"
          "    double loss = 0;\n"
          "    if (t != {4}) {{\n"
          "      if (t < 0 || t >= {1}) dsc_index_error(\"dsc.cross_entropy\", t, {1});\n"
          "      const {5} *x = {2} + r * {1};\n"
          "      double m = x[0];\n"
          "      for (int64_t j = 1; j < {1}; ++j) m = x[j] > m ? x[j] : m;\n"
          "      double sum = 0;\n"
          "      for (int64_t j = 0; j < {1}; ++j) sum += std::exp(x[j] - m);\n"
          "      loss = m + std::log(sum) - x[t];\n"
          "      total += loss; ++count;\n"
          "    }\n",
          rows, classes, in(op, 0), in(op, 1), int64_t(ce.getIgnoreIndex()), oty);
      switch (ce.getReduction()) {
      case LossReduction::none:
        os << "    out0[r] = static_cast<" << oty << ">(loss);\n  }\n";
        break;
      case LossReduction::sum:
        os << "  }\n  out0[0] = static_cast<" << oty << ">(total);\n";
        break;
      case LossReduction::mean:
        os << "  }\n  out0[0] = static_cast<" << oty
           << ">(total / static_cast<double>(count));\n";
        break;
      }
      return success();
    }
    if (auto d = dyn_cast<DropoutOp>(op)) {
      if (d.getP().convertToDouble() == 0.0) {
        os << "  std::memcpy(out0, " << in(op, 0) << ", " << numel(outShape)
           << " * sizeof(*out0));\n";
        return success();
      }
      return op->emitError("dsc.dropout with p > 0 is not supported by the CPU "
                           "target yet (it needs the runtime's step generator)");
    }
    return op->emitError() << "the CPU target cannot emit '" << op->getName() << "' yet";
  }

  LogicalResult emitPermute(Operation *op, ArrayRef<int64_t> perm) {
    ArrayRef<int64_t> outShape = tensorOf(op->getResult(0)).getShape();
    ArrayRef<int64_t> inShape = tensorOf(op->getOperand(0)).getShape();
    // Output dimension d is input dimension perm[d].
    SmallVector<std::string> c(inShape.size());
    for (size_t d = 0; d < perm.size(); ++d)
      c[perm[d]] = "c" + std::to_string(d);
    openLoops(outShape);
    os << "    out0[i] = " << in(op, 0) << "[" << linear(c, inShape) << "];\n";
    closeLoops();
    return success();
  }

  LogicalResult emitMatmul(MatmulOp mm, ArrayRef<int64_t> outShape) {
    if (!tensorOf(mm.getResult()).getElementType().isF32())
      return mm.emitError("dsc.matmul on the CPU target needs f32");
    ArrayRef<int64_t> a = tensorOf(mm.getLhs()).getShape();
    ArrayRef<int64_t> b = tensorOf(mm.getRhs()).getShape();
    int64_t m = outShape[outShape.size() - 2], n = outShape.back();
    int64_t k = mm.getTransposeLhs() ? a[a.size() - 2] : a.back();
    ArrayRef<int64_t> batch = outShape.drop_back(2);
    // Batch offsets of each operand, broadcast to the output's batch.
    std::string aOff = broadcastIndex(a.drop_back(2), batch);
    std::string bOff = broadcastIndex(b.drop_back(2), batch);
    os << llvm::formatv("  dsc::rt::cpu::GemmShape s; s.m = {0}; s.n = {1}; s.k = {2};"
                        " s.transA = {3}; s.transB = {4};\n",
                        m, n, k, mm.getTransposeLhs() ? "true" : "false",
                        mm.getTransposeRhs() ? "true" : "false");
    openLoops(batch, /*parallel=*/false);
    os << "    dsc::rt::cpu::gemmF32(s, " << in(mm, 0) << " + (" << aOff << ") * "
       << m * k << ", " << in(mm, 1) << " + (" << bOff << ") * " << k * n
       << ", out0 + i * " << m * n << ");\n";
    closeLoops();
    return success();
  }

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
    // Output position of an input element: its coordinates without the
    // reduced dimensions.
    SmallVector<int64_t> kept;
    SmallVector<std::string> c;
    for (int64_t d = 0; d < int64_t(inShape.size()); ++d)
      if (!llvm::is_contained(dims, d)) {
        kept.push_back(inShape[d]);
        c.push_back("c" + std::to_string(d));
      }
    int64_t outCount = numel(kept), reduced = numel(inShape) / std::max<int64_t>(outCount, 1);
    os << "  std::vector<" << acc << "> acc(" << outCount << ", "
       << (isMax ? "-std::numeric_limits<" + oty + ">::infinity()" : acc + "(0)")
       << ");\n";
    if (isMax && !isa<FloatType>(elem))
      os << "  std::fill(acc.begin(), acc.end(), std::numeric_limits<" << oty
         << ">::lowest());\n";
    openLoops(inShape, /*parallel=*/false);
    os << "    " << acc << " &a = acc[" << linear(c, kept) << "];\n";
    if (isMax)
      os << "    a = " << in(op, 0) << "[i] > a ? " << in(op, 0) << "[i] : a;\n";
    else
      os << "    a += " << in(op, 0) << "[i];\n";
    closeLoops();
    os << "  for (int64_t j = 0; j < " << outCount << "; ++j) out0[j] = static_cast<"
       << oty << ">(acc[j]" << (isa<ReduceMeanOp>(op) ? " / " + std::to_string(reduced) + ".0" : "")
       << ");\n";
    return success();
  }

  dscrt::KernelOp kernel;
  llvm::raw_ostream &os;
  llvm::DenseMap<Value, std::string> ptr;    // tensor in memory
  llvm::DenseMap<Value, std::string> scalar; // value inside a fused loop
};
} // namespace

LogicalResult mlir::dsc::cpp::emitKernel(dscrt::KernelOp kernel, StringRef name,
                                         llvm::raw_ostream &os) {
  return Emitter(kernel, os).run(name);
}
