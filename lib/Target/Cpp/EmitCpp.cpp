//===- EmitCpp.cpp - dscrt module -> C++ artifact source -------------------===//

#include "dsc/Target/Cpp.h"

#include "HostKernels.h"
#include "KernelEmitter.h"

#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/InitAll.h"
#include "dsc/Support/TensorSize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::dsc;

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
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

namespace {
class ModuleEmitter {
public:
  /// With `partBytes` > 0 the artifact is several translation units, as
  /// one text in split-file's format (see emitCpp).
  ModuleEmitter(ModuleOp module, llvm::raw_ostream &os, cpp::Target target, int64_t partBytes,
                bool shareKernels)
      : module(module), finalOs(os), os(&os), target(target), partBytes(partBytes),
        shareKernels(shareKernels) {}

  LogicalResult run() {
    func::FuncOp step = module.lookupSymbol<func::FuncOp>("step");
    if (!step || step.isExternal())
      return module.emitError("expected a lowered @step function "
                              "(run --dsc-lower-to-runtime --dsc-plan-memory)");
    auto arena = step->getAttrOfType<IntegerAttr>(
        dscrt::DSCRTDialect::kArenaBytesAttrName);
    if (!arena)
      return step.emitError("the arena is not planned (run --dsc-plan-memory)");
    if (failed(nameKernels(step)))
      return failure();
    if (split() && failed(emitParts()))
      return failure();
    std::string stepText;
    llvm::raw_string_ostream stepOs(stepText);
    os = &stepOs;
    // Split, the step's unit holds no kernel and needs no kernel library.
    emitHeader(/*kernels=*/!split());
    if (!cuda())
      emitTaskType(step);
    if (failed(emitTables(step, arena.getInt())))
      return failure();
    if (split())
      emitPartDeclarations();
    emitHostDeclarations();
    if (failed(emitKernels(step)))
      return failure();
    code() << "} // namespace\n\n";
    code() << "extern \"C\" const dsc::rt::ArtifactInfo *dsc_artifact_info(void) "
             "{ return &kInfo; }\n\n";
    emitRunSettings();
    if (failed(emitStep(step)))
      return failure();
    os = &finalOs;
    std::string hostText;
    llvm::raw_string_ostream hostOs(hostText);
    if (!hostKernels.empty() && failed(cpp::emitHostUnit(hostKernels, hostOs)))
      return failure();
    // With host kernels the artifact is several units even unsplit.
    if (!split() && hostKernels.empty()) {
      finalOs << stepText;
      return success();
    }
    std::string ext = cuda() ? ".cu" : ".cpp";
    finalOs << "//--- step" << ext << "\n" << stepText;
    if (!hostKernels.empty())
      finalOs << "//--- host.cpp\n" << hostText;
    for (auto [i, part] : llvm::enumerate(parts)) {
      finalOs << "//--- kernels" << i + 1 << ext << "\n";
      emitHeader(/*kernels=*/true);
      finalOs << part.kernels << "} // namespace\n\n" << part.entries;
      if (cuda())
        finalOs << "DSC_PART void dsc_raise_index_error_part" << i + 1
                << "() { dsc_raise_index_error(); }\n";
    }
    return success();
  }

private:
  /// dsc-run's defaults from the config (steps_per_print, csv_monitor,
  /// nvme_path) and
  /// the data schedules, as
  /// `key=value` lines of an optional entry point: artifacts without it
  /// (older ones, or none set) run with dsc-run's own defaults, so the
  /// ArtifactInfo layout and its ABI version stay as they are.
  void emitRunSettings() {
    std::string settings;
    if (auto every =
            module->getAttrOfType<IntegerAttr>(DSCDialect::kStepsPerPrintAttrName))
      settings += "steps_per_print=" + std::to_string(every.getInt()) + "\n";
    if (auto csv =
            module->getAttrOfType<StringAttr>(DSCDialect::kCsvMonitorAttrName))
      settings += "csv_monitor=" + csv.getValue().str() + "\n";
    if (auto nvme =
            module->getAttrOfType<StringAttr>(DSCDialect::kNvmePathAttrName))
      settings += "nvme_path=" + nvme.getValue().str() + "\n";
    // The data schedules and their length buckets (--dsc-data-variants):
    // dsc-run picks each step's variant with them.
    if (auto schedule =
            module->getAttrOfType<StringAttr>(DSCDialect::kDataScheduleAttrName))
      settings += schedule.getValue().str();
    // The random-LTD index draw of the step (--dsc-random-ltd), for
    // dsc-run --dump-ltd-indices: sequence length, kept tokens, site seed.
    module->walk([&](RandomLtdIndicesOp draw) {
      settings += llvm::formatv("random_ltd_draw={0},{1},{2}\n", draw.getLength(),
                                draw.getResult().getType().getDimSize(1),
                                draw.getSeed())
                      .str();
      return WalkResult::interrupt();
    });
    if (settings.empty())
      return;
    code() << "extern \"C\" const char *dsc_artifact_run_settings(void) { return "
       << cString(settings) << "; }\n\n";
  }

  /// The top of every translation unit: the runtime's header for generated
  /// code of the target, then the anonymous namespace that holds the unit's
  /// kernels. A unit with `kernels` includes dsc/runtime/GeneratedCode.h
  /// (.cuh on CUDA: the loop macros, index checks and library-call helpers,
  /// with the kernel library); the step's unit of a split artifact, which
  /// has none, GeneratedStep.h (.cuh) alone, so that nvcc's device
  /// compiler and ptxas do not compile the library once more for it.
  void emitHeader(bool kernels) {
    std::string header = std::string("dsc/runtime/Generated") +
                         (kernels ? "Code" : "Step") + (cuda() ? ".cuh" : ".h");
    code() << "// Generated by dsc-translate --dscrt-to-" << (cuda() ? "cuda" : "cpp")
           << ". Do not edit.\n"
           << "#include \"" << header << "\"\n"
           << "\nnamespace {\n\n";
    if (split())
      // Kernels the step calls from other units link inside the artifact
      // only; it exports dsc_artifact_info and dsc_artifact_step alone.
      code() << "#define DSC_PART __attribute__((visibility(\"hidden\")))\n\n";
  }

  /// Names each kernel's function. Launches whose kernels would be written
  /// as the same code (the same body on the same shapes: every layer of a
  /// model launches its layer's kernels) share one function, so that the
  /// generated code and its compile time grow with the kinds of layers, not
  /// with the depth. Kernels that keep state per call site (the
  /// multi-tensor tables and scratch of the optimizer family) are never
  /// shared. ZeRO-Offload's host kernels are, on CUDA, the CPU target's code
  /// in a unit of their own (HostKernels.h), shared only among themselves.
  LogicalResult nameKernels(func::FuncOp step) {
    llvm::StringMap<std::string> nameOfCode;
    for (auto kernel : step.getOps<dscrt::KernelOp>()) {
      bool host = cuda() && cpp::isHostKernel(kernel);
      std::string code = host ? "host\n" : "";
      llvm::raw_string_ostream codeOs(code);
      if (failed(cpp::emitKernel(kernel, "kernel", codeOs)))
        return failure();
      std::string name = "kernel" + std::to_string(definitions.size());
      if (shareKernels && !cpp::keepsCallSiteState(kernel)) {
        auto [it, inserted] = nameOfCode.try_emplace(code, name);
        if (!inserted) {
          kernelNames[kernel] = it->second;
          continue;
        }
      }
      kernelNames[kernel] = name;
      definitions.insert(kernel);
      if (host)
        hostKernels.push_back({kernel, name});
    }
    for (auto kernel : step.getOps<dscrt::KernelOp>())
      if (cuda() && cpp::isHostKernel(kernel))
        hostKernelOps.insert(kernel);
    return success();
  }

  /// The one type of every task the CPU step enqueues: a function and the
  /// buffers (and, for a copy, the byte count) it works on. A lambda per
  /// kernel would be a std::function instantiation each, which was most of
  /// the host compiler's time on a step of a few hundred kernels.
  void emitTaskType(func::FuncOp step) {
    size_t buffers = 2; // a copy's target and source
    step.walk([&](dscrt::KernelOp kernel) {
      buffers = std::max(buffers, kernel.getIns().size() + kernel.getOuts().size());
    });
    code() << "struct dsc_task_t {\n"
          << "  void (*fn)(const dsc_task_t &);\n"
          << "  void *p[" << buffers << "];\n"
          << "  int64_t bytes;\n"
          << "  void operator()() const { fn(*this); }\n"
          << "};\n"
          << "template <typename T> void *dsc_ptr(const T *p) { return const_cast<T *>(p); }\n"
          << "void dsc_memcpy_task(const dsc_task_t &t) { "
             "std::memcpy(t.p[0], t.p[1], static_cast<size_t>(t.bytes)); }\n\n";
  }

  /// `static void kernelN_task(const dsc_task_t &)`: kernelN on the task's
  /// buffers.
  void emitKernelTask(dscrt::KernelOp kernel, StringRef name) {
    code() << "static void " << name << "_task(const dsc_task_t &t) { " << name
          << (split() ? "_part(" : "(") << llvm::join(cpp::kernelArgumentsFrom(kernel, "t.p"), ", ")
          << "); }\n\n";
  }

  std::string shapeArray(ArrayRef<int64_t> shape) {
    std::string name = "kShape" + std::to_string(shapes++);
    code() << "const int64_t " << name << "[] = {"
          << (shape.empty()
                  ? "0"
                  : llvm::join(llvm::map_range(shape, [](int64_t d) { return std::to_string(d); }),
                               ", "))
          << "};\n";
    return name;
  }

  std::string tensorDesc(StringRef name, ShapedType type, int64_t indexLimit = 0) {
    std::string shape = shapeArray(type.getShape());
    // TensorDesc::indexLimit is 0 unless written.
    return "{" + cString(name) + ", " + elementTypeEnum(type.getElementType()) +
           ", " + std::to_string(type.getRank()) + ", " + shape +
           (indexLimit ? ", " + std::to_string(indexLimit) : std::string()) + "}";
  }

  /// The bound [0, N) that the values of `input` must lie in because
  /// kernels index with them (TensorDesc::indexLimit): the smallest table
  /// it reaches through copies and views (an embedding's rows, a gather's
  /// or scatter-add's dimension, cross-entropy's classes); 0 when it
  /// indexes nothing (one-hot takes any index: outside its classes it gives
  /// a row of zeros, as autodiff relies on for ignored targets). A value that passes through any other
  /// computation is not followed: its kernel's own check still holds.
  static int64_t indexLimit(Value input) {
    int64_t limit = 0;
    auto bound = [&](int64_t size) {
      limit = limit == 0 ? size : std::min(limit, size);
    };
    SmallVector<Value> buffers{input};
    while (!buffers.empty()) {
      Value buffer = buffers.pop_back_val();
      for (OpOperand &use : buffer.getUses()) {
        Operation *user = use.getOwner();
        if (auto copy = dyn_cast<dscrt::CopyOp>(user)) {
          if (use.get() == copy.getSource())
            buffers.push_back(copy.getTarget());
          continue;
        }
        if (auto view = dyn_cast<dscrt::ViewOp>(user)) {
          buffers.push_back(view.getResult());
          continue;
        }
        auto kernel = dyn_cast<dscrt::KernelOp>(user);
        if (!kernel || use.getOperandNumber() < 1 ||
            use.getOperandNumber() - 1 >= kernel.getIns().size())
          continue;
        Value value =
            kernel.getBody().front().getArgument(use.getOperandNumber() - 1);
        for (Operation *op : value.getUsers()) {
          auto dimOf = [](Value v, int64_t d) {
            return cast<ShapedType>(v.getType()).getShape()[d];
          };
          if (auto e = dyn_cast<EmbeddingOp>(op); e && e.getIndices() == value)
            bound(dimOf(e.getTable(), 0));
          else if (auto g = dyn_cast<GatherOp>(op); g && g.getIndex() == value)
            bound(dimOf(g.getInput(), g.getDim()));
          else if (auto s = dyn_cast<ScatterAddOp>(op); s && s.getIndex() == value)
            bound(dimOf(s.getInput(), s.getDim()));
          else if (auto ce = dyn_cast<CrossEntropyOp>(op);
                   ce && ce.getTargets() == value) {
            int64_t classes = cast<ShapedType>(ce.getLogits().getType()).getShape().back();
            // A target equal to ignore_index is skipped: one outside
            // [0, classes) (PyTorch's default -100, which Hugging Face
            // labels use for padding) is a valid target that the bound
            // would refuse, so then only the kernel's own check holds.
            int64_t ignore = ce.getIgnoreIndex();
            if (ignore >= 0 && ignore < classes)
              bound(classes);
          }
        }
      }
    }
    return limit;
  }

  static std::string runtimeRole(StateRole role) {
    switch (role) {
    case StateRole::parameter:
      return "Parameter";
    case StateRole::buffer:
      return "Buffer";
    case StateRole::optimizer:
      return "Optimizer";
    case StateRole::gradient:
      return "Gradient";
    case StateRole::master:
      return "Master";
    case StateRole::teacher:
      return "Teacher";
    }
    llvm_unreachable("unknown state role");
  }

  /// The runtime's name of a collective group (Artifact.h's CommGroup).
  static std::string commGroup(CollectiveGroup group) {
    switch (group) {
    case CollectiveGroup::world:
      return "dsc::rt::CommGroup::World";
    case CollectiveGroup::expert:
      return "dsc::rt::CommGroup::Expert";
    case CollectiveGroup::expert_data:
      return "dsc::rt::CommGroup::ExpertData";
    case CollectiveGroup::tensor:
      return "dsc::rt::CommGroup::Tensor";
    case CollectiveGroup::data:
      return "dsc::rt::CommGroup::Data";
    case CollectiveGroup::pipeline:
      return "dsc::rt::CommGroup::Pipeline";
    }
    llvm_unreachable("unknown collective group");
  }

  LogicalResult emitTables(func::FuncOp step, int64_t arenaBytes) {
    SmallVector<std::string> states, inputs, outputs;
    for (auto state : module.getOps<StateOp>()) {
      // A partitioned state also names its whole shape (Artifact.h).
      std::string whole;
      std::optional<ArrayRef<int64_t>> shape = state.getPartitionOf();
      if (shape)
        whole = ", " + std::to_string(shape->size()) + ", " + shapeArray(*shape) +
                ", int32_t(" + commGroup(state.getPartitionGroup()) + ")";
      // A state a rewrite added says how to fill it (Artifact.h).
      std::string init;
      bool host = state.getTier() != MemoryTier::device;
      std::optional<int64_t> blocks = state.getPartitionBlocks();
      if (state.getInitFrom() || state.getInitUniform() || host || blocks) {
        if (!shape)
          whole = ", 0, nullptr, int32_t(" + commGroup(CollectiveGroup::world) + ")";
        init = ", " + (state.getInitFrom() ? cString(*state.getInitFrom())
                                           : std::string("nullptr")) +
               ", " +
               llvm::formatv("{0:e17}",
                             state.getInitUniform()
                                 ? state.getInitUniform()->convertToDouble()
                                 : 0.0)
                   .str() +
               ", " + std::to_string(uint64_t(state.getInitSeed().value_or(0))) +
               "ull";
      }
      if (host || blocks)
        init += state.getTier() == MemoryTier::nvme   ? ", dsc::rt::MemoryTier::Nvme"
                : state.getTier() == MemoryTier::host ? ", dsc::rt::MemoryTier::Host"
                                                      : ", dsc::rt::MemoryTier::Device";
      if (blocks)
        init += ", " + std::to_string(*blocks);
      states.push_back("{" + tensorDesc(state.getSymName(), state.getTensorType()) +
                       ", dsc::rt::StateRole::" + runtimeRole(state.getRole()) +
                       whole + init + "}");
    }
    SmallVector<std::pair<int64_t, std::string>> in, out;
    for (auto input : step.getOps<dscrt::InputOp>())
      in.push_back({input.getIndex(), tensorDesc(input.getName(), input.getType(),
                                                 indexLimit(input.getResult()))});
    for (auto output : step.getOps<dscrt::OutputOp>())
      out.push_back({output.getIndex(), tensorDesc(output.getName(), output.getType())});
    llvm::sort(in);
    llvm::sort(out);
    auto table = [&](StringRef type, StringRef name, ArrayRef<std::string> rows) {
      code() << "const " << type << " " << name << "[] = {\n";
      for (const std::string &row : rows)
        code() << "  " << row << ",\n";
      if (rows.empty())
        code() << "  {}\n";
      code() << "};\n";
    };
    table("dsc::rt::StateDesc", "kStates", states);
    table("dsc::rt::TensorDesc", "kInputs",
          llvm::to_vector(llvm::map_range(in, [](auto &p) { return p.second; })));
    table("dsc::rt::TensorDesc", "kOutputs",
          llvm::to_vector(llvm::map_range(out, [](auto &p) { return p.second; })));
    SmallVector<std::string> streams = streamTable(step);
    table("dsc::rt::StreamDesc", "kStreams", streams);
    auto world = module->getAttrOfType<IntegerAttr>("dsc.world_size");
    auto experts = module->getAttrOfType<IntegerAttr>(kExpertParallelSizeAttrName);
    int64_t tensor = lookupTensorParallelSize(module);
    auto stage = module->getAttrOfType<IntegerAttr>(kPipelineStageAttrName);
    auto model = module->getAttrOfType<StringAttr>("dsc.model");
    auto accum = module->getAttrOfType<IntegerAttr>(DSCDialect::kGradAccumAttrName);
    auto hostArena = step->getAttrOfType<IntegerAttr>(
        dscrt::DSCRTDialect::kHostArenaBytesAttrName);
    code() << "const dsc::rt::ArtifactInfo kInfo = {dsc::rt::kArtifactAbiVersion, \""
          << (cuda() ? "cuda" : "cpu") << "\", " << cString(model ? model.getValue() : "") << ", "
          << (world ? world.getInt() : 1) << ", " << (experts ? experts.getInt() : 1) << ", "
          << arenaBytes << ", " << states.size() << ", kStates, " << in.size() << ", kInputs, "
          << out.size() << ", kOutputs, " << streams.size() << ", kStreams, "
          << (accum ? accum.getInt() : 1) << ", " << (hostArena ? hostArena.getInt() : 0)
          << ", " << tensor << ", " << lookupPipelineParallelSize(module) << ", "
          << (stage ? stage.getInt() : 0) << "};\n\n";
    return success();
  }

  /// Rows of the stream table, in dscrt.stream order. On the CPU every
  /// stream but compute (collectives; ZeRO-Offload's copy streams and the
  /// host's update) gets its own thread, so that its work overlaps the
  /// kernels; compute's kernels and copies run on the step's thread
  /// (Inline): a worker thread would add a hand-off and nothing else, since
  /// the step thread has no other work to do meanwhile.
  SmallVector<std::string> streamTable(func::FuncOp step) {
    llvm::DenseSet<Value> collectives, others;
    step.walk([&](dscrt::StreamUserOpInterface user) {
      (user.isCollective() ? collectives : others).insert(user.getStream());
    });
    SmallVector<std::string> rows;
    for (auto stream : step.getOps<dscrt::StreamOp>()) {
      bool coll = collectives.contains(stream.getResult());
      bool ownThread =
          !cuda() && ((coll && !others.contains(stream.getResult())) ||
                      (!coll && stream.getName() !=
                                    dscrt::DSCRTDialect::kComputeStreamName));
      rows.push_back("{" + cString(stream.getName()) + ", " +
                     (ownThread ? "true" : "false") + ", " +
                     (coll ? "true" : "false") + "}");
    }
    return rows;
  }

  LogicalResult emitKernels(func::FuncOp step) {
    for (Operation &op : step.getBody().front()) {
      if (auto cst = dyn_cast<dscrt::ConstantOp>(op)) {
        std::string name = "kConst" + std::to_string(constNames.size());
        constNames[&op] = name;
        if (failed(emitConstant(cst, name)))
          return failure();
      }
      auto kernel = dyn_cast<dscrt::KernelOp>(op);
      if (kernel && definitions.contains(kernel)) {
        const std::string &name = kernelNames[&op];
        // Split: the kernel itself is in its part already (emitParts); a
        // host kernel of a CUDA artifact is in the host unit.
        if (!split() && !hostKernelOps.contains(kernel) &&
            failed(cpp::emitKernel(kernel, name, code())))
          return failure();
        if (!cuda())
          emitKernelTask(kernel, name);
      }
    }
    return success();
  }

  /// Split: writes every kernel into `parts` (splitIntoUnits), with each kernel's
  /// entry `kernelN_part` (hidden, outside the anonymous namespace: the step
  /// calls it from its own unit).
  LogicalResult emitParts() {
    SmallVector<std::pair<std::string, std::string>> kernels; // text, entry
    for (dscrt::KernelOp kernel : definitions) {
      const std::string &name = kernelNames[kernel];
      if (hostKernelOps.contains(kernel))
        continue; // in the host unit
      std::string text;
      llvm::raw_string_ostream kos(text);
      if (failed(cpp::emitKernel(kernel, name, kos)))
        return failure();
      SmallVector<std::string> args;
      for (size_t i = 0; i < kernel.getIns().size(); ++i)
        args.push_back("in" + std::to_string(i));
      for (size_t i = 0; i < kernel.getOuts().size(); ++i)
        args.push_back("out" + std::to_string(i));
      std::string entry = "DSC_PART void " + name + "_part(dsc_stream_t stream, " +
                          *cpp::kernelParameters(kernel) + ") {\n  " + name + "(stream, " +
                          llvm::join(args, ", ") + ");\n}\n";
      kernels.push_back({std::move(text), std::move(entry)});
    }
    SmallVector<int64_t> sizes;
    for (auto &kernel : kernels)
      sizes.push_back(kernel.first.size());
    SmallVector<int64_t> unitOf = splitIntoUnits(sizes, partBytes);
    parts.assign(unitOf.empty() ? 1 : unitOf.back() + 1, Part());
    for (auto [k, kernel] : llvm::enumerate(kernels)) {
      Part &part = parts[unitOf[k]];
      part.kernels += kernel.first;
      part.entries += kernel.second;
      declarations += kernel.second.substr(0, kernel.second.find(") {")) + ");\n";
    }
    return success();
  }

  /// Split: the step's unit declares the kernels' entries, outside the
  /// anonymous namespace so that they link; on CUDA it also reads every
  /// unit's record of a bad index.
  void emitPartDeclarations() {
    code() << "} // namespace\n// The kernels, compiled in the kernelsK units.\n" << declarations;
    SmallVector<std::string> calls{"dsc_raise_index_error();"};
    if (cuda())
      for (size_t i = 1; i <= parts.size(); ++i) {
        code() << "DSC_PART void dsc_raise_index_error_part" << i << "();\n";
        calls.push_back("dsc_raise_index_error_part" + std::to_string(i) + "();");
      }
    code() << "namespace {\n";
    if (cuda())
      code() << "inline void dsc_raise_index_errors() { " << llvm::join(calls, " ") << " }\n";
    code() << "\n";
  }

  /// CUDA with host kernels: the step's unit declares their entries,
  /// outside the anonymous namespace so that they link.
  void emitHostDeclarations() {
    if (hostKernels.empty())
      return;
    code() << "} // namespace\n// The host kernels (ZeRO-Offload), compiled in the unit host.cpp.\n";
    for (auto &entry : hostKernels)
      code() << cpp::hostEntryDeclaration(entry.second) << ";\n";
    code() << "namespace {\n\n";
  }

  /// A host kernel of a CUDA artifact: a host task of its stream that calls
  /// the host unit's entry with the kernel's buffers (constants: their
  /// host arrays).
  std::string hostKernelTask(dscrt::KernelOp kernel, const std::string &label) {
    SmallVector<std::string> pointers;
    for (Value v : llvm::concat<Value>(kernel.getIns(), kernel.getOuts())) {
      Operation *def = v.getDefiningOp();
      std::string name = isa_and_nonnull<dscrt::ConstantOp>(def) ? constNames[def] : var(v);
      pointers.push_back("const_cast<void *>(static_cast<const void *>(" + name + "))");
    }
    return var(kernel.getStream()) + ".enqueue([=] { void *const buffers[] = {" +
           llvm::join(pointers, ", ") + "}; " + cpp::hostEntryName(kernelNames[kernel]) +
           "(buffers); }, " + cString(label) + ")";
  }

  LogicalResult emitConstant(dscrt::ConstantOp cst, StringRef name) {
    Type elem = cst.getType().getElementType();
    std::string ty = cpp::cType(elem);
    auto dense = dyn_cast<DenseElementsAttr>(cst.getValue());
    if (ty.empty() || !dense)
      return cst.emitError() << "the CPU and CUDA targets cannot hold constant " << cst.getValue();
    code() << "alignas(64) const " << ty << " " << name << "[] = {";
    int64_t n = cst.getType().getNumElements();
    auto write = [&](auto values, auto print) {
      for (int64_t i = 0; i < n; ++i)
        code() << (i ? ", " : "") << print(values[dense.isSplat() ? 0 : i]);
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
    code() << "};\n\n";
    return success();
  }

  std::string var(Value v) {
    auto it = names.find(v);
    if (it != names.end())
      return it->second;
    std::string prefix = isa<dscrt::StreamType>(v.getType())  ? "s"
                         : isa<dscrt::EventType>(v.getType()) ? "e"
                                                              : "v";
    std::string name = prefix + std::to_string(names.size());
    names[v] = name;
    return name;
  }

  /// `auto *vN = init; (void)vN;`: buffers nothing reads (an unused second
  /// result) still get a name, without a compiler warning.
  void declare(Value v, const std::string &init) {
    code() << "  auto *" << var(v) << " = " << init << "; (void)" << var(v) << ";\n";
  }

  LogicalResult emitStep(func::FuncOp step) {
    code() << "extern \"C\" void dsc_artifact_step(dsc::rt::StepContext *ctx) {\n"
          << "  char *arena = static_cast<char *>(ctx->arena()); (void)arena;\n"
          << "  char *host_arena = static_cast<char *>(ctx->hostArena()); (void)host_arena;\n";
    llvm::SetVector<Value> unsynchronized;
    // StepContext::stepKey is asked once per call: the runtime may rewrite
    // the integers it returns on every call, which a copy still in flight
    // on a stream may be reading.
    bool askedKey = false;
    for (Operation &op : step.getBody().front()) {
      auto typeOf = [](Value v) {
        return cpp::cType(cast<MemRefType>(v.getType()).getElementType());
      };
      if (succeeded(emitStreamOp(op, unsynchronized)))
        continue;
      if (auto input = dyn_cast<dscrt::InputOp>(op)) {
        Value r = input.getResult();
        declare(r, "static_cast<const " + typeOf(r) + " *>(ctx->input(" +
                       std::to_string(input.getIndex()) + "))");
      } else if (auto key = dyn_cast<dscrt::StepKeyOp>(op)) {
        if (!askedKey)
          code() << "  const int64_t *step_key = ctx->stepKey();\n";
        askedKey = true;
        if (int64_t offset = key.getSampleOffset()) {
          // The key with its first sample moved on. The array lives until
          // the step returns, after every stream has drained, so the copy
          // to the device may read it after this statement.
          std::string array = var(key.getResult()) + "_key";
          code() << "  const int64_t " << array
                 << "[4] = {step_key[0], step_key[1], step_key[2] + " << offset
                 << ", step_key[3]};\n";
          declare(key.getResult(), array);
        } else {
          declare(key.getResult(), "step_key");
        }
      } else if (auto state = dyn_cast<dscrt::StateOp>(op)) {
        Value r = state.getResult();
        if (typeOf(r).empty())
          return state.emitError() << "the CPU target does not support "
                                   << state.getType().getElementType() << " yet";
        declare(r, "static_cast<" + typeOf(r) + " *>(ctx->state(" +
                       std::to_string(state.getIndex()) + "))");
      } else if (auto buffer = dyn_cast<dscrt::BufferOp>(op)) {
        Value r = buffer.getResult();
        bool host = dscrt::DSCRTDialect::isHostMemory(buffer.getType());
        declare(r, "reinterpret_cast<" + typeOf(r) + " *>(" +
                       (host ? "host_arena + " : "arena + ") +
                       std::to_string(buffer.getOffset()) + ")");
      } else if (isa<dscrt::ConstantOp>(op)) {
        const std::string &c = constNames[&op];
        if (cuda()) // uploaded once, on the first step
          code() << "  static const auto *" << c << "_device = dsc_upload(" << c << ", sizeof(" << c
                << "));\n";
        declare(op.getResult(0), cuda() ? c + "_device" : c);
      } else if (auto view = dyn_cast<dscrt::ViewOp>(op)) {
        declare(view.getResult(), var(view.getSource()));
      } else if (auto out = dyn_cast<dscrt::OutputOp>(op)) {
        Value r = out.getResult();
        declare(r, "static_cast<" + typeOf(r) + " *>(ctx->output(" +
                       std::to_string(out.getIndex()) + "))");
      } else if (isa<dscrt::EvalExitOp, dscrt::MicroStepExitOp>(op)) {
        // An evaluation step, or a call that ends no optimizer step
        // (gradient accumulation), returns here: its outputs' copies are
        // enqueued (the verifiers keep them before the exit); every stream
        // with work pending is drained first, the other path goes on
        // unsynchronized.
        code() << (isa<dscrt::EvalExitOp>(op) ? "  if (!ctx->training()) {\n"
                                              : "  if (!ctx->endsOptimizerStep()) {\n");
        if (cuda() && !unsynchronized.empty())
          code() << "    dsc_check(cudaGetLastError(), \"a kernel launch\");\n";
        for (Value stream : unsynchronized)
          code() << "    " << var(stream) << ".synchronize();\n";
        code() << "    " << raiseIndexErrors() << ";\n    return;\n  }\n";
      } else if (isa<dscrt::AllocOp>(op)) {
        return op.emitError("unplanned buffer: run --dsc-plan-memory first");
      } else if (!isa<func::ReturnOp>(op)) {
        return op.emitError() << "the C++ emitter does not handle '" << op.getName() << "'";
      }
    }
    for (Value stream : unsynchronized)
      return step.emitError()
             << "stream '" << stream.getDefiningOp<dscrt::StreamOp>().getName()
             << "' has work after its last dscrt.synchronize: the step would "
                "return before it ran";
    code() << "  " << raiseIndexErrors() << ";\n}\n";
    return success();
  }

  /// The stream, event, kernel, copy and collective ops of the step; failure
  /// for any other op. `unsynchronized` holds the streams with work enqueued
  /// since their last dscrt.synchronize.
  LogicalResult emitStreamOp(Operation &op, llvm::SetVector<Value> &unsynchronized) {
    auto enqueue = [&](Value stream, const std::string &cpuTask,
                       const std::string &cudaCall, const std::string &label) {
      unsynchronized.insert(stream);
      if (cuda())
        code() << "  " << cudaCall << ";\n";
      else
        code() << "  " << var(stream) << ".enqueue(" << cpuTask << ", " << cString(label) << ");\n";
    };
    if (auto stream = dyn_cast<dscrt::StreamOp>(op)) {
      code() << "  dsc::rt::Stream &" << var(stream) << " = ctx->stream(" << streamIndex.size()
            << ");\n";
      streamIndex[stream.getResult()] = streamIndex.size();
      if (cuda())
        code() << "  cudaStream_t " << var(stream) << "_h = dsc_handle(" << var(stream) << ");\n";
    } else if (auto record = dyn_cast<dscrt::RecordOp>(op)) {
      code() << "  auto " << var(record) << " = " << var(record.getStream()) << ".recordEvent();\n";
    } else if (auto wait = dyn_cast<dscrt::WaitOp>(op)) {
      code() << "  " << var(wait.getStream()) << ".wait(*" << var(wait.getEvent()) << ");\n";
    } else if (auto sync = dyn_cast<dscrt::SynchronizeOp>(op)) {
      if (cuda())
        code() << "  dsc_check(cudaGetLastError(), \"a kernel launch\");\n";
      code() << "  " << var(sync.getStream()) << ".synchronize();\n";
      unsynchronized.remove(sync.getStream());
    } else if (auto kernel = dyn_cast<dscrt::KernelOp>(op)) {
      SmallVector<std::string> args;
      for (Value v : kernel.getIns())
        args.push_back(var(v));
      for (Value v : kernel.getOuts())
        args.push_back(var(v));
      const std::string &name = kernelNames[&op];
      std::string list = llvm::join(args, ", ");
      Operation &first = kernel.getBody().front().front();
      SmallVector<std::string> pointers;
      for (const std::string &a : args)
        pointers.push_back("dsc_ptr(" + a + ")");
      std::string label =
          name + " (" +
          (isa<dscrt::YieldOp>(first) ? std::string("copy") : first.getName().getStringRef().str()) +
          ")";
      enqueue(kernel.getStream(),
              "dsc_task_t{" + name + "_task, {" + llvm::join(pointers, ", ") + "}, 0}",
              hostKernelOps.contains(kernel)
                  ? hostKernelTask(kernel, label + " on the host")
                  : name + (split() ? "_part(" : "(") + var(kernel.getStream()) + "_h, " +
                        list + ")",
              label);
    } else if (auto copy = dyn_cast<dscrt::CopyOp>(op)) {
      MemRefType from = copy.getSource().getType(), to = copy.getTarget().getType();
      std::string src = var(copy.getSource()), dst = var(copy.getTarget());
      std::string bytes =
          std::to_string(to.getNumElements()) + " * sizeof(*" + dst + ")";
      bool hostFrom = dscrt::DSCRTDialect::isHostMemory(from),
           hostTo = dscrt::DSCRTDialect::isHostMemory(to);
      std::string kind = std::string("cudaMemcpy") + (hostFrom ? "Host" : "Device") +
                         "To" + (hostTo ? "Host" : "Device");
      std::string what = std::string(hostFrom ? "host" : "device") + " to " +
                         (hostTo ? "host" : "device") + " copy";
      // dsc-run counts what crosses between host and device memory.
      if (hostFrom != hostTo)
        code() << "  ctx->countTransfer(dsc::rt::TransferDirection::"
               << (hostTo ? "DeviceToHost" : "HostToDevice") << ", " << bytes << ");\n";
      enqueue(copy.getStream(), copyTask(dst, src, to),
              "dsc_check(cudaMemcpyAsync(" + dst + ", " + src + ", " + bytes + ", " +
                  kind + ", " + var(copy.getStream()) + "_h), \"" + what + "\")",
              what);
    } else if (isa<dscrt::NvmeReadOp, dscrt::NvmeWriteOp>(op)) {
      // The runtime enqueues the transfer on the stream (Artifact.h).
      auto read = dyn_cast<dscrt::NvmeReadOp>(op);
      auto write = dyn_cast<dscrt::NvmeWriteOp>(op);
      Value buffer = read ? read.getTarget() : write.getSource();
      Value stream = read ? read.getStream() : write.getStream();
      int64_t index = read ? read.getIndex() : write.getIndex();
      auto type = cast<MemRefType>(buffer.getType());
      unsynchronized.insert(stream);
      code() << "  ctx->" << (read ? "nvmeRead(" : "nvmeWrite(") << index << ", "
             << var(buffer) << ", "
             << type.getNumElements() * bytesPerElement(type.getElementTypeBitWidth())
             << ", " << var(stream) << ");\n";
    } else if (auto ar = dyn_cast<dscrt::AllReduceOp>(op)) {
      // The runtime enqueues the collective on the stream (Artifact.h).
      MemRefType t = ar.getBuffer().getType();
      unsynchronized.insert(ar.getStream());
      if (auto stages = ar.getStagesAttr()) {
        // Over the stages that hold a tied weight only (Artifact.h): dsc-run
        // adds their parts on the host.
        if (cuda() || !(t.getElementType().isF32() || t.getElementType().isF64()))
          return ar.emitOpError()
                 << "sums over some pipeline stages, which the runtime does on "
                    "the CPU target in f32 or f64 only, not in "
                 << t.getElementType() << (cuda() ? " on CUDA" : "");
        code() << "  {\n    static const int32_t stages[] = {";
        llvm::interleaveComma(stages.asArrayRef(), code());
        code() << "};\n    ctx->allReduceSumStages(" << var(ar.getBuffer()) << ", "
               << t.getNumElements() << ", " << elementTypeEnum(t.getElementType())
               << ", " << ar.getSequence() << ", " << var(ar.getStream())
               << ", stages, " << stages.size() << ");\n  }\n";
        return success();
      }
      code() << "  ctx->" << (ar.getMaximum() ? "allReduceMax(" : "allReduceSum(")
             << var(ar.getBuffer()) << ", " << t.getNumElements() << ", "
            << elementTypeEnum(t.getElementType()) << ", " << ar.getSequence() << ", "
            << var(ar.getStream()) << ", " << commGroup(ar.getGroup()) << ");\n";
    } else if (isa<dscrt::PipelineSendOp, dscrt::PipelineRecvOp>(op)) {
      // The runtime enqueues the transfer on the stream (Artifact.h).
      auto emitTransfer = [&](auto transfer, StringRef call) {
        MemRefType t = transfer.getBuffer().getType();
        unsynchronized.insert(transfer.getStream());
        code() << "  ctx->" << call << "(" << var(transfer.getBuffer()) << ", "
               << t.getNumElements() << ", " << elementTypeEnum(t.getElementType())
               << ", dsc::rt::PipelinePeer::"
               << (transfer.getPeer() == PipelinePeer::next ? "Next" : "Previous")
               << ", " << transfer.getMicroBatch() << ", " << transfer.getSequence()
               << ", " << var(transfer.getStream()) << ");\n";
      };
      if (auto send = dyn_cast<dscrt::PipelineSendOp>(op))
        emitTransfer(send, "pipelineSend");
      else
        emitTransfer(cast<dscrt::PipelineRecvOp>(op), "pipelineRecv");
    } else if (auto exchange = dyn_cast<dscrt::AllToAllOp>(op)) {
      // count: the elements of one block, one per rank of the group.
      MemRefType t = exchange.getBuffer().getType();
      FailureOr<int64_t> ranks = lookupGroupSize(&op, exchange.getGroup());
      if (failed(ranks))
        return failure();
      unsynchronized.insert(exchange.getStream());
      code() << "  ctx->allToAll(" << var(exchange.getBuffer()) << ", "
            << t.getNumElements() / *ranks << ", " << elementTypeEnum(t.getElementType()) << ", "
            << exchange.getSequence() << ", " << var(exchange.getStream()) << ", "
            << commGroup(exchange.getGroup()) << ");\n";
    } else if (isa<dscrt::AllGatherOp, dscrt::ReduceScatterOp>(op)) {
      // count: the shard's elements (Artifact.h).
      bool gather = isa<dscrt::AllGatherOp>(op);
      Value source = op.getOperand(0), target = op.getOperand(1),
            stream = op.getOperand(2);
      MemRefType shard = cast<MemRefType>((gather ? source : target).getType());
      CollectiveGroup group = gather ? cast<dscrt::AllGatherOp>(op).getGroup()
                                     : cast<dscrt::ReduceScatterOp>(op).getGroup();
      unsynchronized.insert(stream);
      code() << "  ctx->" << (gather ? "allGather(" : "reduceScatterSum(") << var(source) << ", "
            << var(target) << ", " << shard.getNumElements() << ", "
            << elementTypeEnum(shard.getElementType()) << ", "
            << op.getAttrOfType<IntegerAttr>("sequence").getInt() << ", " << var(stream) << ", "
            << commGroup(group) << ");\n";
    } else if (auto copy = dyn_cast<dscrt::CopyShardOp>(op)) {
      // The rank's index in its group is read on the host, when the step
      // is issued.
      MemRefType to = copy.getTarget().getType();
      std::string src = var(copy.getSource()), dst = var(copy.getTarget());
      std::string count = std::to_string(to.getNumElements());
      std::string index = copy.getGroup() == CollectiveGroup::world
                              ? "ctx->rank()"
                              : "ctx->groupRank(" + commGroup(copy.getGroup()) + ")";
      std::string from = src + " + static_cast<int64_t>(" + index + ") * " + count;
      std::string bytes = count + " * sizeof(*" + dst + ")";
      enqueue(copy.getStream(), copyTask(dst, from, to),
              "dsc_check(cudaMemcpyAsync(" + dst + ", " + from + ", " + bytes +
                  ", cudaMemcpyDeviceToDevice, " + var(copy.getStream()) +
                  "_h), \"this rank's shard\")",
              "copy of this rank's shard");
    } else {
      return failure();
    }
    return success();
  }

  bool cuda() const { return target == cpp::Target::Cuda; }
  bool split() const { return partBytes > 0; }
  /// The step's check of the kernels' bad indices: on the CPU a kernel
  /// raises its own as it returns, on CUDA every unit has a record.
  const char *raiseIndexErrors() const {
    return split() && cuda() ? "dsc_raise_index_errors()" : "dsc_raise_index_error()";
  }

  /// The CPU task copying `to`'s bytes from `src` to `dst`.
  static std::string copyTask(const std::string &dst, const std::string &src,
                              MemRefType to) {
    int64_t bytes = to.getNumElements() * bytesPerElement(to.getElementTypeBitWidth());
    return "dsc_task_t{dsc_memcpy_task, {dsc_ptr(" + dst + "), dsc_ptr(" + src +
           ")}, " + std::to_string(bytes) + "}";
  }

  ModuleOp module;
  /// The whole output, and the unit being written.
  llvm::raw_ostream &finalOs;
  llvm::raw_ostream *os;
  llvm::raw_ostream &code() { return *os; }
  cpp::Target target;
  int64_t partBytes;
  bool shareKernels;
  /// Split: each unit's kernels, and their entries the step calls.
  struct Part {
    std::string kernels, entries;
  };
  SmallVector<Part> parts;
  std::string declarations;
  int shapes = 0;
  llvm::DenseMap<Value, std::string> names;
  llvm::DenseMap<Value, int64_t> streamIndex;
  /// Each kernel's function (nameKernels), and the kernels that define one.
  llvm::DenseMap<Operation *, std::string> kernelNames, constNames;
  llvm::SetVector<dscrt::KernelOp> definitions;
  /// CUDA: the kernels that run on the host, with their names.
  SmallVector<std::pair<dscrt::KernelOp, std::string>> hostKernels;
  llvm::DenseSet<Operation *> hostKernelOps;
};
} // namespace

SmallVector<int64_t> mlir::dsc::splitIntoUnits(ArrayRef<int64_t> kernelBytes, int64_t partBytes) {
  int64_t total = 0;
  for (int64_t bytes : kernelBytes)
    total += bytes;
  int64_t count = std::clamp<int64_t>((total + partBytes - 1) / std::max<int64_t>(partBytes, 1), 1,
                                      std::max<size_t>(kernelBytes.size(), 1));
  SmallVector<int64_t> units;
  int64_t offset = 0, previous = -1;
  for (int64_t bytes : kernelBytes) {
    int64_t mid = offset + bytes / 2;
    offset += bytes;
    int64_t unit = total ? std::min(count - 1, mid * count / total) : 0;
    // Units no midpoint fell in are skipped: the next takes their number.
    units.push_back(units.empty() ? 0 : units.back() + (unit != previous));
    previous = unit;
  }
  return units;
}

LogicalResult mlir::dsc::emitCpp(ModuleOp module, llvm::raw_ostream &os, bool cuda,
                                 int64_t partBytes, bool shareKernels) {
  // Emit to a string first: on failure nothing partial reaches the output.
  std::string text;
  llvm::raw_string_ostream buffer(text);
  if (failed(ModuleEmitter(module, buffer, cuda ? cpp::Target::Cuda : cpp::Target::Cpu, partBytes,
                          shareKernels)
                 .run()))
    return failure();
  os << text;
  return success();
}

void mlir::dsc::registerToCppTranslation() {
  // Registered here, with the translations, not by every tool linking
  // the emitter.
  static llvm::cl::opt<unsigned> splitBytes(
      "dscrt-split-bytes",
      llvm::cl::desc("write the artifact as several translation units (the "
                     "step's, then the kernels' in units of about this many "
                     "bytes of text), in split-file's `//--- NAME` format; 0 "
                     "(the default): one unit"),
      llvm::cl::init(0));
  static llvm::cl::opt<bool> shareKernels(
      "dscrt-share-kernels",
      llvm::cl::desc("launches whose kernels are the same code (every "
                     "layer's) call one function (the default); false: a "
                     "function per launch"),
      llvm::cl::init(true));
  for (bool cuda : {false, true}) {
    TranslateFromMLIRRegistration registration(
        cuda ? "dscrt-to-cuda" : "dscrt-to-cpp",
        cuda ? "print a lowered dsc module as CUDA (nvcc) for the cuda target"
             : "print a lowered dsc module as C++ (OpenMP) for the cpu target",
        [cuda](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
          // An error here is one located message; mlir-translate would
          // print the whole module after it.
          op->getContext()->printOpOnDiagnostic(false);
          auto module = dyn_cast<ModuleOp>(op);
          if (!module)
            return op->emitError("expected a module");
          return emitCpp(module, os, cuda, splitBytes, shareKernels);
        },
        [](DialectRegistry &registry) { registerAllDialects(registry); });
  }
}
