//===- dsc-opt.cpp - the dsc optimizer driver ------------------------------===//
//
// mlir-opt with the dsc dialect and passes. Besides MLIR's standard flags it
// bounds the nesting depth of textual input before parsing, because MLIR's
// recursive-descent parser overflows the stack on deeply nested input, and
// it takes the users' training flags (--world-size, --optimizer, --config
// ds_config.json, ...), which run --dsc-pipeline before the passes named on
// the command line.
//
// An error is one located message: the module is not printed after it
// (MLIR's --mlir-print-op-on-diagnostic defaults to off here), and a failed
// write of the output is an error, not LLVM's fatal "IO failure".
//
//===----------------------------------------------------------------------===//

#include "dsc/Config/TrainingFlags.h"
#include "dsc/InitAll.h"
#include "dsc/Pipeline/TrainingPipeline.h"
#include "dsc/Support/InputLimits.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

/// The largest --dsc-max-nesting-depth accepted. MLIR's parser, verifier,
/// printer and region walks recurse once per level; on the default 8 MiB
/// stack the deepest-recursing input measured, nested `module {}` regions,
/// crashes dsc-opt (MLIR 22, release build) at about 3,900 levels, through
/// parsing, verification and passes alike (generic-form regions, two
/// brackets per level, at about 2,060 levels: 4,100 brackets). 1,024 keeps a
/// margin of almost 4 for builds and passes that use more stack per level.
static constexpr unsigned kMaxSafeNestingDepth = 1024;

static llvm::cl::opt<unsigned> maxNestingDepth(
    "dsc-max-nesting-depth",
    llvm::cl::desc("Reject textual input whose regions, attributes and types "
                   "nest deeper than this"),
    llvm::cl::init(mlir::dsc::kDefaultMaxNestingDepth));

/// Turns MLIR's default of printing the whole module after every error
/// (hundreds of lines after a one-line configuration error) off, unless
/// --mlir-print-op-on-diagnostic asks for it.
static void printNoOpOnDiagnostic() {
  mlir::registerMLIRContextCLOptions();
  auto &options = llvm::cl::getRegisteredOptions();
  auto it = options.find("mlir-print-op-on-diagnostic");
  if (it != options.end())
    static_cast<llvm::cl::opt<bool> *>(it->second)->setInitialValue(false);
}

/// Whether `message` names pipeline option `option` as a word of its own
/// ("the micro-batch per rank is 2" names `micro-batch`).
static bool mentions(llvm::StringRef message, llvm::StringRef option) {
  auto isWordChar = [](char c) { return llvm::isAlnum(c) || c == '-' || c == '_'; };
  for (size_t at = message.find(option); at != llvm::StringRef::npos;
       at = message.find(option, at + 1)) {
    size_t end = at + option.size();
    if ((at == 0 || !isWordChar(message[at - 1])) &&
        (end == message.size() || !isWordChar(message[end])))
      return true;
  }
  return false;
}

/// A pass's error about an option the DeepSpeed config set (the graph's
/// micro-batch disagreeing with `train_micro_batch_size_per_gpu`, say) gets
/// a note at that key of the config, in DeepSpeed's spelling: the value is
/// the config's, and the pass knows nothing of it.
static void pointAtConfigKeys(mlir::MLIRContext &context,
                              const mlir::dsc::ConfigOrigins &origins) {
  if (origins.empty())
    return;
  context.getDiagEngine().registerHandler(
      [&context, origins](mlir::Diagnostic &diag) -> mlir::LogicalResult {
        if (diag.getSeverity() != mlir::DiagnosticSeverity::Error)
          return mlir::failure();
        std::string message = diag.str();
        for (const auto &[option, origin] : origins)
          if (mentions(message, option))
            diag.attachNote(mlir::FileLineColLoc::get(
                &context, origin.file, origin.line, origin.column))
                << "'" << origin.key << "' sets " << option << " here";
        // Printed by the handlers registered before this one.
        return mlir::failure();
      });
}

/// Writes nothing more to `output` and reports whether everything written
/// reached the file (`-o /dev/full` fails here, not in a destructor).
static bool closeOutput(llvm::ToolOutputFile &output) {
  llvm::raw_fd_ostream &os = output.os();
  os.close();
  if (!os.has_error())
    return true;
  llvm::errs() << "dsc-opt: error: cannot write '" << output.getFilename()
               << "': " << os.error().message() << "\n";
  os.clear_error();
  return false;
}

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::dsc::registerAllDialects(registry);
  mlir::dsc::registerAllPasses();
  mlir::dsc::registerTrainingFlags();
  printNoOpOnDiagnostic();

  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "dsc optimizer driver\n", registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  if (maxNestingDepth > kMaxSafeNestingDepth) {
    llvm::errs() << "dsc-opt: error: --dsc-max-nesting-depth: must be at most "
                 << kMaxSafeNestingDepth
                 << " (deeper input overflows the parser's stack), got "
                 << maxNestingDepth << "\n";
    return 1;
  }

  mlir::FailureOr<std::optional<mlir::dsc::TrainingPipelineRequest>> training =
      mlir::dsc::trainingPipelineFromFlags();
  if (mlir::failed(training))
    return 1;
  if (*training) {
    std::shared_ptr<mlir::dsc::TrainingPipelineOptions> options =
        mlir::dsc::TrainingPipelineOptions::createFromString((*training)->options);
    if (!options)
      return 1;
    // The training pipeline first, then the passes the command line names
    // (dsc-compile adds the lowering that way).
    config.setPassPipelineSetupFn(
        [commandLine = config, options,
         origins = (*training)->fromConfig](mlir::PassManager &pm) {
          pointAtConfigKeys(*pm.getContext(), origins);
          mlir::dsc::buildTrainingPipeline(pm, *options);
          return commandLine.setupPassPipeline(pm);
        });
  }

  // A device (/dev/zero) would be read until memory runs out; a pipe is
  // still fine (`dsc-opt <(...)`, stdin).
  llvm::sys::fs::file_status inputStatus;
  if (inputFilename != "-" && !llvm::sys::fs::status(inputFilename, inputStatus) &&
      (inputStatus.type() == llvm::sys::fs::file_type::character_file ||
       inputStatus.type() == llvm::sys::fs::file_type::block_file ||
       inputStatus.type() == llvm::sys::fs::file_type::directory_file)) {
    llvm::errs() << "dsc-opt: error: '" << inputFilename
                 << "' is not a regular file\n";
    return 1;
  }
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << "dsc-opt: error: " << error << "\n";
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
    llvm::errs() << "dsc-opt: error: " << error << "\n";
    return 1;
  }
  if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(input), registry,
                                     config))) {
    // The errors are out; what the output stream thinks of it is not news.
    output->os().close();
    output->os().clear_error();
    return 1;
  }
  if (!closeOutput(*output))
    return 1;
  output->keep();
  return 0;
}
