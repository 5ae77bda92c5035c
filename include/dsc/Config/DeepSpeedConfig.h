//===- DeepSpeedConfig.h - ds_config.json as --dsc-pipeline options -*- C++ -*-===//
//
// `dsc-opt --config ds_config.json` reads a DeepSpeed configuration with
// DeepSpeed's rules (docs/configuration.md says which and how) and
// turns it into options of the training pipeline (TrainingPipeline.h), which
// command-line flags then override.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_CONFIG_DEEPSPEEDCONFIG_H
#define DSC_CONFIG_DEEPSPEEDCONFIG_H

#include "mlir/Support/LLVM.h"

#include <map>
#include <string>

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace mlir::dsc {

/// `--dsc-pipeline` options by name (`lr` → `0.0001`).
using PipelineSettings = std::map<std::string, std::string>;

/// Where a config set a `--dsc-pipeline` option: the DeepSpeed key, in
/// DeepSpeed's spelling (`optimizer.params.lr`), and its place in the file.
struct ConfigOrigin {
  std::string key;
  std::string file;
  unsigned line = 0, column = 0;
};
using ConfigOrigins = std::map<std::string, ConfigOrigin>;

/// `value` as option text that reads back as the same double.
std::string formatPipelineNumber(double value);

/// Reads the DeepSpeed config in buffer `bufferId` of `sourceMgr` for a job
/// of `worldSize` data-parallel ranks. Every error (bad JSON, a duplicate or
/// unknown key, a value of the wrong type or out of range, an inconsistent
/// batch triple, a DeepSpeed feature dsc does not implement) is reported
/// through `sourceMgr` at the key it is about, and gives failure. Where
/// each setting came from goes to `origins`, when given.
FailureOr<PipelineSettings>
readDeepSpeedConfig(llvm::SourceMgr &sourceMgr, unsigned bufferId,
                    int64_t worldSize, ConfigOrigins *origins = nullptr);

} // namespace mlir::dsc

#endif // DSC_CONFIG_DEEPSPEEDCONFIG_H
