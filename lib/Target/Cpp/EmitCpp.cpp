//===- EmitCpp.cpp - dscrt module -> C++ artifact source -------------------===//

#include "dsc/Target/Cpp.h"

#include "KernelEmitter.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/InitAll.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::dsc;

static const char *kCommonPreamble = R"cpp(
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>
)cpp";

// Kernels are written once against these macros (see KernelEmitter.h).
static const char *kCpuPreamble = R"cpp(
#define DSC_GLOBAL static
#define DSC_FOR(i, n) _Pragma("omp parallel for") for (int64_t i = 0; i < (n); ++i)
#define DSC_SERIAL_FOR(i, n) for (int64_t i = 0; i < (n); ++i)
#define DSC_LAUNCH(f, n, ...) f(__VA_ARGS__)
#define DSC_LAUNCH_SERIAL(f, ...) f(__VA_ARGS__)
#define DSC_GEMM(s, a, b, c, alpha, beta) dsc::rt::cpu::gemmF32(s, a, b, c, alpha, beta)
#define DSC_INF(T) std::numeric_limits<T>::infinity()
#define DSC_NAN(T) std::numeric_limits<T>::quiet_NaN()
#define DSC_LOWEST(T) std::numeric_limits<T>::lowest()
#define DSC_INDEX_ERROR(op, index, size) dsc_index_error(op, index, size)
#define DSC_HD

namespace {
using dsc::rt::ElementType;
// Unqualified math calls pick the float overloads for float arguments.
using std::erf; using std::exp; using std::log; using std::pow; using std::sqrt;
using std::tanh;

[[noreturn]] void dsc_index_error(const char *op, int64_t index, int64_t size) {
  throw std::out_of_range(std::string(op) + ": index " + std::to_string(index) +
                          " is outside [0, " + std::to_string(size) + ")");
}
)cpp";

static const char *kCudaPreamble = R"cpp(
#include <cuda_runtime.h>

#define DSC_GLOBAL static __global__
#define DSC_FOR(i, n) for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)
#define DSC_SERIAL_FOR(i, n) for (int64_t i = 0; i < (n); ++i)
#define DSC_LAUNCH(f, n, ...) f<<<dsc_blocks(n), 256>>>(__VA_ARGS__)
#define DSC_LAUNCH_SERIAL(f, ...) f<<<1, 1>>>(__VA_ARGS__)
#define DSC_GEMM(s, a, b, c, alpha, beta) dsc::rt::cuda::gemmF32(s, a, b, c, alpha, beta, nullptr)
#define DSC_INF(T) static_cast<T>(INFINITY)
#define DSC_NAN(T) static_cast<T>(NAN)
#define DSC_LOWEST(T) std::numeric_limits<T>::lowest()
#define DSC_INDEX_ERROR(op, index, size) \
  do { printf("%s: index %lld is outside [0, %lld)\n", op, (long long)(index), (long long)(size)); __trap(); } while (0)
#define DSC_HD __host__ __device__

// The runtime's cuBLASLt GEMM, resolved when dsc-run loads the artifact.
#include "dsc/runtime/CudaGemm.h"

namespace {
using dsc::rt::ElementType;

inline unsigned dsc_blocks(int64_t n) {
  int64_t blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}
inline void dsc_check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}
template <typename T> const T *dsc_upload(const T *host, size_t bytes) {
  void *device = nullptr;
  dsc_check(cudaMalloc(&device, bytes), "cudaMalloc of a constant");
  dsc_check(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy of a constant");
  return static_cast<const T *>(device);
}
)cpp";

static const char *kMinMax = R"cpp(
// NaN-propagating maximum and minimum, as torch.maximum / torch.minimum.
template <typename T> DSC_HD inline T dsc_max(T a, T b) { return a != a || a > b ? a : b; }
template <typename T> DSC_HD inline T dsc_min(T a, T b) { return a != a || a < b ? a : b; }

)cpp";

static std::string elementTypeEnum(Type t) {
  if (t.isF64()) return "ElementType::F64";
  if (t.isF32()) return "ElementType::F32";
  if (t.isF16()) return "ElementType::F16";
  if (t.isBF16()) return "ElementType::BF16";
  if (t.isInteger(64)) return "ElementType::I64";
  if (t.isInteger(32)) return "ElementType::I32";
  return "ElementType::I1";
}

static std::string cString(StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

namespace {
class ModuleEmitter {
public:
  ModuleEmitter(ModuleOp module, llvm::raw_ostream &os, cpp::Target target)
      : module(module), os(os), target(target) {}

  LogicalResult run() {
    func::FuncOp step = module.lookupSymbol<func::FuncOp>("step");
    if (!step || step.isExternal())
      return module.emitError("expected a lowered @step function "
                              "(run --dsc-lower-to-runtime --dsc-plan-memory)");
    auto arena = step->getAttrOfType<IntegerAttr>(
        dscrt::DSCRTDialect::kArenaBytesAttrName);
    if (!arena)
      return step.emitError("the arena is not planned (run --dsc-plan-memory)");
    os << "// Generated by dsc-translate --dscrt-to-"
       << (cuda() ? "cuda" : "cpp") << ". Do not edit.\n"
       << "#include \"dsc/runtime/Artifact.h\"\n"
       << "#include \"dsc/runtime/CpuGemm.h\"\n"
       << kCommonPreamble << (cuda() ? kCudaPreamble : kCpuPreamble) << kMinMax;
    if (failed(emitTables(step, arena.getInt())) || failed(emitKernels(step)))
      return failure();
    os << "} // namespace\n\n";
    os << "extern \"C\" const dsc::rt::ArtifactInfo *dsc_artifact_info(void) "
          "{ return &kInfo; }\n\n";
    return emitStep(step);
  }

private:
  std::string shapeArray(ArrayRef<int64_t> shape) {
    std::string name = "kShape" + std::to_string(shapes++);
    os << "const int64_t " << name << "[] = {"
       << (shape.empty() ? "0" : llvm::join(llvm::map_range(shape, [](int64_t d) {
                                   return std::to_string(d);
                                 }), ", "))
       << "};\n";
    return name;
  }

  std::string tensorDesc(StringRef name, ShapedType type) {
    std::string shape = shapeArray(type.getShape());
    return "{" + cString(name) + ", " + elementTypeEnum(type.getElementType()) +
           ", " + std::to_string(type.getRank()) + ", " + shape + "}";
  }

  static std::string runtimeRole(StateRole role) {
    switch (role) {
    case StateRole::parameter:
      return "Parameter";
    case StateRole::buffer:
      return "Buffer";
    case StateRole::optimizer:
      return "Optimizer";
    }
    llvm_unreachable("unknown state role");
  }

  LogicalResult emitTables(func::FuncOp step, int64_t arenaBytes) {
    SmallVector<std::string> states, inputs, outputs;
    for (auto state : module.getOps<StateOp>())
      states.push_back("{" + tensorDesc(state.getSymName(), state.getTensorType()) +
                       ", dsc::rt::StateRole::" + runtimeRole(state.getRole()) +
                       "}");
    SmallVector<std::pair<int64_t, std::string>> in, out;
    for (auto input : step.getOps<dscrt::InputOp>())
      in.push_back({input.getIndex(), tensorDesc(input.getName(), input.getType())});
    for (auto output : step.getOps<dscrt::OutputOp>())
      out.push_back({output.getIndex(),
                     tensorDesc(output.getName(),
                                cast<MemRefType>(output.getSource().getType()))});
    llvm::sort(in);
    llvm::sort(out);
    auto table = [&](StringRef type, StringRef name, ArrayRef<std::string> rows) {
      os << "const " << type << " " << name << "[] = {\n";
      for (const std::string &row : rows)
        os << "  " << row << ",\n";
      if (rows.empty())
        os << "  {}\n";
      os << "};\n";
    };
    table("dsc::rt::StateDesc", "kStates", states);
    table("dsc::rt::TensorDesc", "kInputs",
          llvm::to_vector(llvm::map_range(in, [](auto &p) { return p.second; })));
    table("dsc::rt::TensorDesc", "kOutputs",
          llvm::to_vector(llvm::map_range(out, [](auto &p) { return p.second; })));
    auto world = module->getAttrOfType<IntegerAttr>("dsc.world_size");
    auto model = module->getAttrOfType<StringAttr>("dsc.model");
    os << "const dsc::rt::ArtifactInfo kInfo = {dsc::rt::kArtifactAbiVersion, \""
       << (cuda() ? "cuda" : "cpu") << "\", "
       << cString(model ? model.getValue() : "") << ", "
       << (world ? world.getInt() : 1) << ", " << arenaBytes << ", "
       << states.size() << ", kStates, " << in.size() << ", kInputs, "
       << out.size() << ", kOutputs};\n\n";
    return success();
  }

  LogicalResult emitKernels(func::FuncOp step) {
    for (Operation &op : step.getBody().front()) {
      if (auto cst = dyn_cast<dscrt::ConstantOp>(op)) {
        std::string name = "kConst" + std::to_string(constNames.size());
        constNames[&op] = name;
        if (failed(emitConstant(cst, name)))
          return failure();
      }
      if (auto kernel = dyn_cast<dscrt::KernelOp>(op)) {
        std::string name = "kernel" + std::to_string(kernelNames.size());
        kernelNames[&op] = name;
        if (failed(cpp::emitKernel(kernel, name, os)))
          return failure();
      }
    }
    return success();
  }

  LogicalResult emitConstant(dscrt::ConstantOp cst, StringRef name) {
    Type elem = cst.getType().getElementType();
    std::string ty = cpp::cType(elem);
    auto dense = dyn_cast<DenseElementsAttr>(cst.getValue());
    if (ty.empty() || !dense)
      return cst.emitError() << "the CPU and CUDA targets cannot hold constant " << cst.getValue();
    os << "alignas(64) const " << ty << " " << name << "[] = {";
    int64_t n = cst.getType().getNumElements();
    auto write = [&](auto values, auto print) {
      for (int64_t i = 0; i < n; ++i)
        os << (i ? ", " : "") << print(values[dense.isSplat() ? 0 : i]);
    };
    if (isa<FloatType>(elem))
      write(dense.getValues<APFloat>(), [&](const APFloat &v) {
        return cpp::literal(v.convertToDouble(), elem);
      });
    else
      write(dense.getValues<APInt>(), [&](const APInt &v) -> std::string {
        if (elem.isInteger(1))
          return std::to_string(v.getZExtValue());
        if (v.isMinSignedValue()) // there is no literal for INT64_MIN
          return "(" + std::to_string(v.getSExtValue() + 1) + " - 1)";
        return std::to_string(v.getSExtValue());
      });
    os << "};\n\n";
    return success();
  }

  std::string var(Value v) {
    auto it = names.find(v);
    if (it != names.end())
      return it->second;
    std::string name = "v" + std::to_string(names.size());
    names[v] = name;
    return name;
  }

  /// `auto *vN = init; (void)vN;`: buffers nothing reads (an unused second
  /// result) still get a name, without a compiler warning.
  void declare(Value v, const std::string &init) {
    os << "  auto *" << var(v) << " = " << init << "; (void)" << var(v) << ";\n";
  }

  LogicalResult emitStep(func::FuncOp step) {
    os << "extern \"C\" void dsc_artifact_step(dsc::rt::StepContext *ctx) {\n"
       << "  char *arena = static_cast<char *>(ctx->arena()); (void)arena;\n";
    for (Operation &op : step.getBody().front()) {
      auto typeOf = [](Value v) {
        return cpp::cType(cast<MemRefType>(v.getType()).getElementType());
      };
      if (auto input = dyn_cast<dscrt::InputOp>(op)) {
        Value r = input.getResult();
        declare(r, "static_cast<const " + typeOf(r) + " *>(ctx->input(" +
                       std::to_string(input.getIndex()) + "))");
      } else if (auto state = dyn_cast<dscrt::StateOp>(op)) {
        Value r = state.getResult();
        if (typeOf(r).empty())
          return state.emitError() << "the CPU target does not support "
                                   << state.getType().getElementType() << " yet";
        declare(r, "static_cast<" + typeOf(r) + " *>(ctx->state(" +
                       std::to_string(state.getIndex()) + "))");
      } else if (auto buffer = dyn_cast<dscrt::BufferOp>(op)) {
        Value r = buffer.getResult();
        declare(r, "reinterpret_cast<" + typeOf(r) + " *>(arena + " +
                       std::to_string(buffer.getOffset()) + ")");
      } else if (isa<dscrt::ConstantOp>(op)) {
        const std::string &c = constNames[&op];
        if (cuda()) // uploaded once, on the first step
          os << "  static const auto *" << c << "_device = dsc_upload(" << c
             << ", sizeof(" << c << "));\n";
        declare(op.getResult(0), cuda() ? c + "_device" : c);
      } else if (auto view = dyn_cast<dscrt::ViewOp>(op)) {
        declare(view.getResult(), var(view.getSource()));
      } else if (auto kernel = dyn_cast<dscrt::KernelOp>(op)) {
        SmallVector<std::string> args;
        for (Value v : kernel.getIns())
          args.push_back(var(v));
        for (Value v : kernel.getOuts())
          args.push_back(var(v));
        os << "  " << kernelNames[&op] << "(" << llvm::join(args, ", ") << ");\n";
      } else if (auto ar = dyn_cast<dscrt::AllReduceOp>(op)) {
        MemRefType t = ar.getBuffer().getType();
        os << "  ctx->allReduceSum(" << var(ar.getBuffer()) << ", " << t.getNumElements()
           << ", " << elementTypeEnum(t.getElementType()) << ", " << ar.getSequence()
           << ");\n";
      } else if (auto out = dyn_cast<dscrt::OutputOp>(op)) {
        MemRefType t = cast<MemRefType>(out.getSource().getType());
        os << "  " << (cuda() ? "dsc_check(cudaMemcpy(" : "std::memcpy(")
           << "ctx->output(" << out.getIndex() << "), " << var(out.getSource())
           << ", " << t.getNumElements() << " * sizeof(*" << var(out.getSource())
           << ")" << (cuda() ? ", cudaMemcpyDeviceToDevice), \"output copy\")" : ")")
           << ";\n";
      } else if (isa<dscrt::EvalExitOp>(op)) {
        os << "  if (!ctx->training()) {\n";
        if (cuda())
          os << "    dsc_check(cudaGetLastError(), \"a kernel launch\");\n"
             << "    dsc_check(cudaDeviceSynchronize(), \"the step\");\n";
        os << "    return;\n  }\n";
      } else if (isa<dscrt::AllocOp>(op)) {
        return op.emitError("unplanned buffer: run --dsc-plan-memory first");
      } else if (!isa<func::ReturnOp>(op)) {
        return op.emitError() << "the C++ emitter does not handle '" << op.getName() << "'";
      }
    }
    if (cuda())
      os << "  dsc_check(cudaGetLastError(), \"a kernel launch\");\n"
         << "  dsc_check(cudaDeviceSynchronize(), \"the step\");\n";
    os << "}\n";
    return success();
  }

  bool cuda() const { return target == cpp::Target::Cuda; }

  ModuleOp module;
  llvm::raw_ostream &os;
  cpp::Target target;
  int shapes = 0;
  llvm::DenseMap<Value, std::string> names;
  llvm::DenseMap<Operation *, std::string> kernelNames, constNames;
};
} // namespace

LogicalResult mlir::dsc::emitCpp(ModuleOp module, llvm::raw_ostream &os,
                                 bool cuda) {
  // Emit to a string first: on failure nothing partial reaches the output.
  std::string text;
  llvm::raw_string_ostream buffer(text);
  if (failed(ModuleEmitter(module, buffer,
                           cuda ? cpp::Target::Cuda : cpp::Target::Cpu)
                 .run()))
    return failure();
  os << text;
  return success();
}

void mlir::dsc::registerToCppTranslation() {
  for (bool cuda : {false, true}) {
    TranslateFromMLIRRegistration registration(
        cuda ? "dscrt-to-cuda" : "dscrt-to-cpp",
        cuda ? "print a lowered dsc module as CUDA (nvcc) for the cuda target"
             : "print a lowered dsc module as C++ (OpenMP) for the cpu target",
        [cuda](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
          auto module = dyn_cast<ModuleOp>(op);
          if (!module)
            return op->emitError("expected a module");
          return emitCpp(module, os, cuda);
        },
        [](DialectRegistry &registry) { registerAllDialects(registry); });
  }
}
