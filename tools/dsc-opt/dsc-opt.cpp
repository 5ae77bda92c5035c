//===- dsc-opt.cpp - the dsc optimizer driver ------------------------------===//
//
// mlir-opt with the dsc dialect and passes. Besides MLIR's standard flags it
// bounds the nesting depth of textual input before parsing, because MLIR's
// recursive-descent parser overflows the stack on deeply nested input.
//
//===----------------------------------------------------------------------===//

#include "dsc/InitAll.h"
#include "dsc/Support/InputLimits.h"

#include "mlir/IR/DialectRegistry.h"
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

  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "dsc optimizer driver\n", registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();

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
