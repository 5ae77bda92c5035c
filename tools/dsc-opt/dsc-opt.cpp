//===- dsc-opt.cpp - the dsc optimizer driver ------------------------------===//
//
// mlir-opt with the dsc dialect and passes. Besides MLIR's standard flags it
// bounds the nesting depth of textual input before parsing, because MLIR's
// recursive-descent parser overflows the stack on deeply nested input, and
// it takes the users' training flags (--world-size, --optimizer, --config
// ds_config.json, ...), which run --dsc-pipeline before the passes named on
// the command line.
//
//===----------------------------------------------------------------------===//

#include "dsc/Config/TrainingFlags.h"
#include "dsc/InitAll.h"
#include "dsc/Pipeline/TrainingPipeline.h"
#include "dsc/Support/InputLimits.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

static llvm::cl::opt<unsigned> maxNestingDepth(
    "dsc-max-nesting-depth",
    llvm::cl::desc("Reject textual input whose regions, attributes and types "
                   "nest deeper than this"),
    llvm::cl::init(mlir::dsc::kDefaultMaxNestingDepth));

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::dsc::registerAllDialects(registry);
  mlir::dsc::registerAllPasses();
  mlir::dsc::registerTrainingFlags();

  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "dsc optimizer driver\n", registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();

  mlir::FailureOr<std::optional<std::string>> training =
      mlir::dsc::trainingPipelineFromFlags();
  if (mlir::failed(training))
    return 1;
  if (*training) {
    std::shared_ptr<mlir::dsc::TrainingPipelineOptions> options =
        mlir::dsc::TrainingPipelineOptions::createFromString(**training);
    if (!options)
      return 1;
    // The training pipeline first, then the passes the command line names
    // (dsc-compile adds the lowering that way).
    config.setPassPipelineSetupFn(
        [commandLine = config, options](mlir::PassManager &pm) {
          mlir::dsc::buildTrainingPipeline(pm, *options);
          return commandLine.setupPassPipeline(pm);
        });
  }

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return 1;
  }
  {
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBuffer(input->getMemBufferRef(),
                                         /*RequiresNullTerminator=*/false),
        llvm::SMLoc());
    if (!mlir::dsc::checkNestingDepth(sourceMgr, maxNestingDepth))
      return 1;
  }

  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(input), registry,
                                     config)))
    return 1;
  output->keep();
  return 0;
}
