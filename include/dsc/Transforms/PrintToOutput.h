//===- PrintToOutput.h - where a reporting pass writes ----------*- C++ -*-===//
//
// Passes that print a report (--dsc-report, --dsc-plan) write it to standard
// error or to a file, and a file they cannot open or write is a located
// error of the pass, never LLVM's fatal error when the stream is destroyed.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_TRANSFORMS_PRINTTOOUTPUT_H
#define DSC_TRANSFORMS_PRINTTOOUTPUT_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir::dsc {

/// Calls `print` on standard error (`path` "-") or on the file `path`; an
/// error at `anchor`, prefixed with `flag`, when the file cannot be opened
/// or written (--dsc-report-file=/dev/full).
inline LogicalResult printToOutput(Operation *anchor, StringRef path,
                                   StringRef flag,
                                   llvm::function_ref<void(raw_ostream &)> print) {
  if (path == "-") {
    print(llvm::errs());
    return success();
  }
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &error);
  if (!file)
    return anchor->emitError() << flag << ": " << error;
  print(file->os());
  file->os().close();
  if (file->os().has_error()) {
    anchor->emitError() << flag << ": cannot write '" << path
                        << "': " << file->os().error().message();
    file->os().clear_error();
    return failure();
  }
  file->keep();
  return success();
}

} // namespace mlir::dsc

#endif // DSC_TRANSFORMS_PRINTTOOUTPUT_H
