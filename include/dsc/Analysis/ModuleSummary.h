//===- ModuleSummary.h - what a model module contains -----------*- C++ -*-===//
//
// The facts a user checks first about an exported model: its named state,
// parameter count, graph signature and op mix. Used by --dsc-print-summary
// and by tests that compare exports against PyTorch's numbers.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_ANALYSIS_MODULESUMMARY_H
#define DSC_ANALYSIS_MODULESUMMARY_H

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mlir::dsc {

struct StateSummary {
  std::string name;
  std::string role; // "parameter" or "buffer"
  RankedTensorType type;
  int64_t numElements = 0;
  int64_t bytes = 0;
};

struct GraphSummary {
  std::string name;
  std::vector<std::pair<std::string, Type>> inputs;  // by dsc.input name
  std::vector<std::pair<std::string, Type>> outputs; // by dsc.output name
};

struct ModuleSummary {
  std::vector<StateSummary> states; // in declaration order
  std::vector<GraphSummary> graphs;
  /// (op name, count), most frequent first, ties by name.
  std::vector<std::pair<std::string, int64_t>> opCounts;
  int64_t parameterElements = 0, parameterBytes = 0;
  int64_t bufferElements = 0, bufferBytes = 0;
  /// What training adds: optimizer state, fp32 master weights and gradient
  /// accumulators (roles optimizer, master, gradient).
  int64_t trainingStateElements = 0, trainingStateBytes = 0;
  /// A frozen teacher's weights (role teacher, --dsc-distill).
  int64_t teacherElements = 0, teacherBytes = 0;
  int64_t totalOps = 0;

  /// Summarizes a verified module (sizes are then known to fit in int64).
  static ModuleSummary compute(ModuleOp module);

  /// Human-readable tables, one screen for a small model. States beyond
  /// `maxStates` are elided (the totals still count them).
  void print(llvm::raw_ostream &os, size_t maxStates = 40) const;
};

} // namespace mlir::dsc

#endif // DSC_ANALYSIS_MODULESUMMARY_H
