//===- dsc-translate.cpp - dsc's emitters ----------------------------------===//
//
// mlir-translate with dsc's translations: --dscrt-to-cpp prints a lowered
// module as the C++ source of an artifact. An error is one located message
// (the module is not printed after it), an output that cannot be written
// (`-o /dev/full`) is an error naming it, not LLVM's "IO failure", and a
// device is refused as input rather than read until memory runs out.
//
//===----------------------------------------------------------------------===//

#include "dsc/Target/Cpp.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

/// mlirTranslateMain writes its output file and closes it on return, where
/// a failed write can only be a fatal error: report that one as the
/// output's error (exit status 1 either way).
static void reportOutputFailure(void *, const char *reason, bool) {
  llvm::StringRef what(reason);
  if (!what.starts_with("IO failure on output stream")) {
    llvm::errs() << "LLVM ERROR: " << what << "\n";
    return;
  }
  auto &options = llvm::cl::getRegisteredOptions();
  auto output = options.find("o");
  llvm::errs() << "dsc-translate: error: cannot write";
  if (output != options.end())
    llvm::errs() << " '"
                 << static_cast<llvm::cl::opt<std::string> *>(output->second)
                        ->getValue()
                 << "'";
  llvm::errs() << ": " << what.drop_front(what.find(": ") + 2) << "\n";
}

/// Whether the input named on the command line is a device (/dev/zero) or
/// a directory, which mlirTranslateMain would read until memory runs out.
/// The input is the one argument that is neither an option nor the value of
/// `-o`; mlirTranslateMain parses the command line itself, so it is found
/// here before.
static bool inputIsDevice(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if (arg == "-o" || arg == "--o") {
      ++i;
      continue;
    }
    if (arg.starts_with("-"))
      continue;
    namespace fs = llvm::sys::fs;
    fs::file_status status;
    if (fs::status(arg, status))
      continue;
    if (status.type() == fs::file_type::character_file ||
        status.type() == fs::file_type::block_file ||
        status.type() == fs::file_type::directory_file) {
      llvm::errs() << "dsc-translate: error: '" << arg
                   << "' is not a regular file\n";
      return true;
    }
  }
  return false;
}

int main(int argc, char **argv) {
  if (inputIsDevice(argc, argv))
    return 1;
  mlir::dsc::registerToCppTranslation();
  // The module after every error is hundreds of lines; asked for with
  // --mlir-print-op-on-diagnostic.
  mlir::registerMLIRContextCLOptions();
  auto &options = llvm::cl::getRegisteredOptions();
  if (auto it = options.find("mlir-print-op-on-diagnostic"); it != options.end())
    static_cast<llvm::cl::opt<bool> *>(it->second)->setInitialValue(false);
  llvm::install_fatal_error_handler(reportOutputFailure);
  return mlir::failed(mlir::mlirTranslateMain(argc, argv, "dsc translation driver"));
}
