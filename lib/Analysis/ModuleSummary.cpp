//===- ModuleSummary.cpp - what a model module contains --------------------===//

#include "dsc/Analysis/ModuleSummary.h"

#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSC/IR/DSCOps.h"
#include "dsc/Support/TensorSize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::dsc;

ModuleSummary ModuleSummary::compute(ModuleOp module) {
  ModuleSummary summary;
  llvm::StringMap<int64_t> counts;
  module.walk([&](Operation *op) {
    if (op == module.getOperation())
      return;
    ++counts[op->getName().getStringRef()];
    ++summary.totalOps;
  });
  for (auto &entry : counts)
    summary.opCounts.emplace_back(entry.getKey().str(), entry.getValue());
  llvm::sort(summary.opCounts, [](const auto &a, const auto &b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });

  for (auto state : module.getOps<StateOp>()) {
    StateSummary s;
    s.name = state.getSymName().str();
    s.role = stringifyStateRole(state.getRole()).str();
    s.type = state.getTensorType();
    s.numElements = checkedNumElements(s.type.getShape()).value_or(0);
    s.bytes = checkedByteSize(s.type.getShape(),
                              s.type.getElementType().getIntOrFloatBitWidth())
                  .value_or(0);
    switch (state.getRole()) {
    case StateRole::parameter:
      summary.parameterElements += s.numElements;
      summary.parameterBytes += s.bytes;
      break;
    case StateRole::buffer:
      summary.bufferElements += s.numElements;
      summary.bufferBytes += s.bytes;
      break;
    case StateRole::optimizer:
    case StateRole::master:
    case StateRole::gradient:
      summary.trainingStateElements += s.numElements;
      summary.trainingStateBytes += s.bytes;
      break;
    case StateRole::teacher:
      summary.teacherElements += s.numElements;
      summary.teacherBytes += s.bytes;
      break;
    }
    summary.states.push_back(std::move(s));
  }

  for (auto func : module.getOps<func::FuncOp>()) {
    GraphSummary g;
    g.name = func.getSymName().str();
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto name = func.getArgAttrOfType<StringAttr>(i, DSCDialect::kInputAttrName);
      g.inputs.emplace_back(name ? name.str() : "#" + std::to_string(i),
                            func.getArgument(i).getType());
    }
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto name =
          func.getResultAttrOfType<StringAttr>(i, DSCDialect::kOutputAttrName);
      g.outputs.emplace_back(name ? name.str() : "#" + std::to_string(i),
                             func.getResultTypes()[i]);
    }
    summary.graphs.push_back(std::move(g));
  }
  return summary;
}

/// 124439808 -> "124.44M"; exact counts are printed beside it.
static std::string humanCount(int64_t n) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (n >= 1000000000)
    os << llvm::format("%.2fB", n / 1e9);
  else if (n >= 1000000)
    os << llvm::format("%.2fM", n / 1e6);
  else if (n >= 1000)
    os << llvm::format("%.2fK", n / 1e3);
  else
    os << n;
  return s;
}

static std::string humanBytes(int64_t n) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (n >= (int64_t(1) << 30))
    os << llvm::format("%.2f GiB", n / double(int64_t(1) << 30));
  else if (n >= (1 << 20))
    os << llvm::format("%.2f MiB", n / double(1 << 20));
  else if (n >= (1 << 10))
    os << llvm::format("%.2f KiB", n / double(1 << 10));
  else
    os << n << " B";
  return s;
}

void ModuleSummary::print(llvm::raw_ostream &os, size_t maxStates) const {
  os << "== dsc module summary ==\n";
  size_t nameWidth = 4;
  for (const StateSummary &s : states)
    nameWidth = std::max(nameWidth, s.name.size());
  os << "state (" << states.size() << "):\n";
  for (size_t i = 0; i < states.size() && i < maxStates; ++i) {
    const StateSummary &s = states[i];
    std::string type;
    llvm::raw_string_ostream ts(type);
    ts << s.type;
    os << "  " << llvm::left_justify(s.name, nameWidth) << "  "
       << llvm::left_justify(s.role, 9) << "  " << llvm::left_justify(type, 24)
       << "  " << llvm::right_justify(std::to_string(s.numElements), 12)
       << "\n";
  }
  if (states.size() > maxStates)
    os << "  ... " << states.size() - maxStates << " more\n";
  os << "parameters: " << parameterElements << " ("
     << humanCount(parameterElements) << ", " << humanBytes(parameterBytes)
     << ")\n";
  os << "buffers: " << bufferElements << " (" << humanCount(bufferElements)
     << ", " << humanBytes(bufferBytes) << ")\n";
  if (trainingStateElements)
    os << "training state (optimizer, master weights, accumulators): "
       << trainingStateElements << " (" << humanCount(trainingStateElements)
       << ", " << humanBytes(trainingStateBytes) << ")\n";
  if (teacherElements)
    os << "teacher weights (frozen): " << teacherElements << " ("
       << humanCount(teacherElements) << ", " << humanBytes(teacherBytes)
       << ")\n";
  for (const GraphSummary &g : graphs) {
    os << "graph @" << g.name << ":\n";
    for (const auto &[name, type] : g.inputs)
      os << "  input  " << name << " : " << type << "\n";
    for (const auto &[name, type] : g.outputs)
      os << "  output " << name << " : " << type << "\n";
  }
  os << "ops (" << totalOps << "):\n";
  for (const auto &[name, count] : opCounts)
    os << "  " << llvm::left_justify(name, 20) << " "
       << llvm::right_justify(std::to_string(count), 6) << "\n";
}
