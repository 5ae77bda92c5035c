//===- TrainingFlags.h - dsc-opt's top-level training flags -----*- C++ -*-===//
//
// The users' spelling of the training pipeline: `dsc-opt model.mlir
// --world-size=2 --optimizer=sgd --lr=0.1` or `--config ds_config.json`
// (flags override the config). When any of them is given, dsc-opt runs
// `--dsc-pipeline` with those options before the passes named on its
// command line.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_CONFIG_TRAININGFLAGS_H
#define DSC_CONFIG_TRAININGFLAGS_H

#include "dsc/Config/DeepSpeedConfig.h"

#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>

namespace mlir::dsc {

/// Registers the flags with llvm::cl; call before parsing the command line.
void registerTrainingFlags();

/// The `--dsc-pipeline` options the flags and the config ask for.
struct TrainingPipelineRequest {
  std::string options;
  /// Where the config set the options it set (flags that override one
  /// remove it), so that a pass's later error about one can point there.
  ConfigOrigins fromConfig;
};

/// After parsing: what the flags and the config ask for, or std::nullopt
/// when none was given. Errors (an unreadable or invalid config, a value
/// out of range) are printed; the result is then failure.
FailureOr<std::optional<TrainingPipelineRequest>> trainingPipelineFromFlags();

} // namespace mlir::dsc

#endif // DSC_CONFIG_TRAININGFLAGS_H
