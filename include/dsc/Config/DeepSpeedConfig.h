//===- DeepSpeedConfig.h - ds_config.json as --dsc-pipeline options -*- C++ -*-===//
//
// `dsc-opt --config ds_config.json` reads a DeepSpeed configuration with
// DeepSpeed's rules (docs/configuration.md says which and how) and
// turns it into options of the training pipeline (TrainingPipeline.h), which
// command-line flags then override. Every key of the file is accounted for:
// used, defaulted ("auto"), accepted without effect, or refused.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_CONFIG_DEEPSPEEDCONFIG_H
#define DSC_CONFIG_DEEPSPEEDCONFIG_H

#include "mlir/Support/LLVM.h"

#include <map>
#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
class raw_ostream;
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

/// What dsc did with one key of the config.
enum class KeyDisposition {
  /// It sets a pipeline option (or a setting of dsc-run).
  Used,
  /// Its value is "auto": dsc chose the value, which the detail names.
  Defaulted,
  /// Accepted, and it changes nothing: DeepSpeed's default of a feature dsc
  /// does not have, or a knob whose job dsc's compiler does another way.
  NoEffect,
  /// An error was reported at it.
  Refused,
};

/// "used", "defaulted", "no effect", "refused".
StringRef dispositionName(KeyDisposition disposition);

/// One key of the config, a leaf or a section taken as a whole.
struct KeyAccount {
  std::string key; // `zero_optimization.stage`
  KeyDisposition disposition = KeyDisposition::Used;
  /// What it set, the value chosen, or why it has no effect.
  std::string detail;
  std::string file;
  unsigned line = 0, column = 0;
};
/// Every key, in the order of the file.
using ConfigAccount = std::vector<KeyAccount>;

/// Prints `account`: with `everyKey`, one line per key
/// (`FILE:LINE:COL: KEY: DISPOSITION: DETAIL`); otherwise one line per
/// disposition other than used and refused (the errors were printed),
/// naming its keys, or nothing when there are none.
void printConfigAccount(llvm::raw_ostream &os, const ConfigAccount &account,
                        bool everyKey);

/// `value` as option text that reads back as the same double.
std::string formatPipelineNumber(double value);

/// The device mesh's sizes that the command line gives (0: not given, the
/// config's or 1).
struct MeshFlags {
  int64_t tensor = 0;
  int64_t pipeline = 0;
};

/// Reads the DeepSpeed config in buffer `bufferId` of `sourceMgr` for a job
/// of `worldSize` ranks (its batch triple counts the data-parallel ones:
/// the world over the tensor-parallel size and pipeline stages, `flags`'
/// where given, else the config's own). Every error (bad JSON, a duplicate or
/// unknown key, a value of the wrong type or out of range, an inconsistent
/// batch triple, a DeepSpeed feature dsc does not implement, at a value
/// other than DeepSpeed's default) is reported through `sourceMgr` at the
/// key it is about, all of them in one call, and gives failure. Where each
/// setting came from goes to `origins`, and what happened to each key to
/// `account`, when given (also on failure, once the JSON parsed).
FailureOr<PipelineSettings>
readDeepSpeedConfig(llvm::SourceMgr &sourceMgr, unsigned bufferId,
                    int64_t worldSize, MeshFlags flags = {},
                    ConfigOrigins *origins = nullptr,
                    ConfigAccount *account = nullptr);

} // namespace mlir::dsc

#endif // DSC_CONFIG_DEEPSPEEDCONFIG_H
