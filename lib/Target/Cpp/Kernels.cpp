//===- Kernels.cpp - loops for dsc ops, static shapes, CPU or CUDA ---------===//
//
// The kernels the library does not compute (LibraryCalls.h has those):
// chains of elementwise ops fused into one loop, the generated functors
// of the step. Each is a host function launching one loop function whose
// shapes are compile-time constants in the emitted text, written against
// the macros of the runtime's dsc/runtime/GeneratedCode.h (.cuh on CUDA);
// an iteration computes one output element. Loop bodies use only what
// both compilers accept in device code: arithmetic, <cmath> functions, no
// allocation, no exceptions. A non-elementwise op without a library kernel
// is an error with its location.
//
// 16-bit float tensors (bf16, f16) are arrays of dsc_bf16 / dsc_f16, 2-byte
// words that widen to float implicitly where they are read and round to
// nearest even where they are written (GeneratedCode.h and .cuh define
// them per target). So every loop below computes in float for them too,
// and rounds once per op result, as PyTorch's 16-bit kernels do; literals
// are float literals.
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
    // The stream is the launch's on CUDA (DSC_LAUNCH).
    os << header << bodyText << "  }\n}\n\n"
       << "static void " << name << "(dsc_stream_t stream, " << paramList
       << ") {\n  (void)stream;\n" << launch << "}\n\n";
    return success();
  }

private:
  // --- loop functions ------------------------------------------------------

  /// Starts the loop function over i in [0, numel(shape)) with coordinates
  /// c0.. of `shape` decoded from i.
  void beginLoop(ArrayRef<int64_t> shape) {
    std::string fn = kernelName + "_0";
    int64_t n = numel(shape);
    header = "DSC_GLOBAL void " + fn + "(" + paramList + ") {\n  DSC_FOR(i, " +
             std::to_string(n) + ") {\n";
    launch = "  DSC_LAUNCH(" + fn + ", " + std::to_string(n) + ", " + argList + ");\n";
    SmallVector<int64_t> strides = stridesOf(shape);
    for (int64_t d = 0; d < int64_t(shape.size()); ++d)
      body << "    const int64_t c" << d << " = (i / " << strides[d] << ") % "
           << shape[d] << "; (void)c" << d << ";\n";
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
    return nonElementwiseError(ops.front());
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
    else if (isa<TanhOp>(op)) e = "dsc_tanh(" + a(0) + ")";
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
        e = literal(0.5, elem) + " * " + x + " * (" + one + " + dsc_tanh(" +
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
        std::string t = "dsc_tanh(" + k + " * (" + x + " + " + literal(0.044715, elem) +
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

  /// Every non-elementwise op is a library kernel: a kernel of one such op
  /// reaches here only when --dscrt-select-library found no library kernel
  /// for its form (element types, mostly), an error with its location.
  LogicalResult nonElementwiseError(Operation *op) {
    Type elem = tensorOf(op->getResult(0)).getElementType();
    if (cType(elem).empty())
      return op->emitError() << "the CPU and CUDA targets do not support " << elem
                             << " yet";
    if (isa<LinearOp, MatmulOp, DropoutOp, MoeDispatchOp, MoeCombineOp, MoeRouteDotOp>(op))
      return op->emitError() << op->getName()
                             << " needs f32, bf16 or f16 on the CPU and CUDA targets";
    if (isa<AttentionOp, AttentionGradOp>(op))
      return op->emitError() << "'" << op->getName()
                             << "' runs as the library kernel 'attention' "
                                "only: f32, bf16 or f16 data, after "
                                "--dscrt-select-library";
    return op->emitError() << "'" << op->getName()
                           << "' runs as a library kernel only, after "
                              "--dscrt-select-library";
  }

  dscrt::KernelOp kernel;
  std::string kernelName, paramList, argList;
  std::string header, launch, bodyText;
  llvm::raw_string_ostream body{bodyText};
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
