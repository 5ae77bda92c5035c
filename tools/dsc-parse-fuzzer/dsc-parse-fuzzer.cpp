//===- dsc-parse-fuzzer.cpp - libFuzzer target: parse and verify -----------===//
//
// Feeds arbitrary bytes through what dsc-opt does before any pass: the
// nesting-depth check, the MLIR parser (text or bytecode) and the verifier,
// with the dsc, func and arith dialects loaded. Any crash, hang or
// sanitizer report is a bug; diagnostics are the expected outcome.
//
//===----------------------------------------------------------------------===//

#include "dsc/Dialect/DSC/IR/DSCDialect.h"
#include "dsc/Dialect/DSCRT/IR/DSCRTDialect.h"
#include "dsc/Support/InputLimits.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>

static mlir::MLIRContext &context() {
  static mlir::MLIRContext *ctx = [] {
    mlir::DialectRegistry registry;
    registry.insert<mlir::dsc::DSCDialect, mlir::dscrt::DSCRTDialect,
                    mlir::func::FuncDialect,
                    mlir::arith::ArithDialect>();
    auto *c = new mlir::MLIRContext(registry,
                                    mlir::MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext &ctx = context();
  // Diagnostics are expected; keep the fuzzer's output readable.
  mlir::ScopedDiagnosticHandler quiet(
      &ctx, [](mlir::Diagnostic &) { return mlir::success(); });

  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  if (mlir::dsc::findExcessiveNesting(bytes, mlir::dsc::kDefaultMaxNestingDepth))
    return 0;
  llvm::SourceMgr sourceMgr;
  // A copy: the lexer relies on a terminating NUL.
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(bytes, "fuzz-input"), llvm::SMLoc());
  mlir::ParserConfig config(&ctx, /*verifyAfterParse=*/false);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, config);
  if (module)
    (void)mlir::verify(*module);
  return 0;
}
