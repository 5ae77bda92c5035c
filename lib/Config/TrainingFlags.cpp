//===- TrainingFlags.cpp - dsc-opt's top-level training flags -------------===//

#include "dsc/Config/TrainingFlags.h"

#include "dsc/Config/DeepSpeedConfig.h"

#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::dsc;
namespace cl = llvm::cl;

namespace {
cl::OptionCategory category("dsc training step (run as --dsc-pipeline)");

struct TrainingFlags {
  cl::opt<std::string> config{
      "config", cl::cat(category), cl::value_desc("ds_config.json"),
      cl::desc("read a DeepSpeed config; the flags below override it")};
  cl::opt<int64_t> worldSize{"world-size", cl::cat(category), cl::init(1),
                             cl::desc("data-parallel ranks")};
  cl::opt<std::string> step{
      "step", cl::cat(category), cl::init("train"),
      cl::desc("train (default), gradients (no update) or eval (forward and loss)")};
  cl::opt<std::string> optimizer{"optimizer", cl::cat(category),
                                 cl::desc("adamw (default), adam or sgd")};
  cl::opt<double> lr{"lr", cl::cat(category), cl::desc("learning rate (default 1e-3)")};
  cl::opt<std::string> betas{"betas", cl::cat(category), cl::value_desc("b1,b2"),
                             cl::desc("Adam's betas (default 0.9,0.999)")};
  cl::opt<double> eps{"eps", cl::cat(category), cl::desc("Adam's epsilon (default 1e-8)")};
  cl::opt<double> weightDecay{
      "weight-decay", cl::cat(category),
      cl::desc("weight decay (default 0.01 for adamw as in PyTorch, 0 otherwise)")};
  cl::opt<double> momentum{"momentum", cl::cat(category),
                           cl::desc("SGD momentum (default 0)")};
  cl::opt<double> gradClip{"grad-clip", cl::cat(category),
                           cl::desc("clip gradients to this global 2-norm (0: off)")};
};

TrainingFlags *flags = nullptr;

std::string formatNumber(double value) { return formatPipelineNumber(value); }
} // namespace

void mlir::dsc::registerTrainingFlags() {
  static TrainingFlags instance;
  flags = &instance;
}

FailureOr<std::optional<std::string>> mlir::dsc::trainingPipelineFromFlags() {
  TrainingFlags &f = *flags;
  bool any = f.config.getNumOccurrences() || f.worldSize.getNumOccurrences() ||
             f.step.getNumOccurrences() || f.optimizer.getNumOccurrences() ||
             f.lr.getNumOccurrences() || f.betas.getNumOccurrences() ||
             f.eps.getNumOccurrences() || f.weightDecay.getNumOccurrences() ||
             f.momentum.getNumOccurrences() || f.gradClip.getNumOccurrences();
  if (!any)
    return std::optional<std::string>();

  PipelineSettings settings;
  if (!f.config.empty()) {
    std::string error;
    std::unique_ptr<llvm::MemoryBuffer> buffer = openInputFile(f.config, &error);
    if (!buffer) {
      llvm::errs() << "error: --config: " << error << "\n";
      return failure();
    }
    llvm::SourceMgr sourceMgr;
    unsigned id = sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
    FailureOr<PipelineSettings> fromConfig =
        readDeepSpeedConfig(sourceMgr, id, f.worldSize);
    if (failed(fromConfig))
      return failure();
    settings = std::move(*fromConfig);
  }
  // Flags given on the command line win over the config.
  auto set = [&](cl::Option &flag, std::string value) {
    if (flag.getNumOccurrences())
      settings[flag.ArgStr.str()] = std::move(value);
  };
  settings["world-size"] = std::to_string(f.worldSize);
  set(f.step, f.step);
  set(f.optimizer, f.optimizer);
  set(f.lr, formatNumber(f.lr));
  set(f.betas, f.betas);
  set(f.eps, formatNumber(f.eps));
  set(f.weightDecay, formatNumber(f.weightDecay));
  set(f.momentum, formatNumber(f.momentum));
  set(f.gradClip, formatNumber(f.gradClip));

  std::string options;
  for (const auto &[name, value] : settings)
    options += (options.empty() ? "" : " ") + name + "=" + value;
  return std::optional<std::string>(options);
}
