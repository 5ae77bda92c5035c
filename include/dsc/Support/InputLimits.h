//===- InputLimits.h - limits checked before parsing ------------*- C++ -*-===//
//
// MLIR's parser recurses once per nested region, attribute or type; a few
// thousand levels overflow the stack (seen: 5,000 nested `module {` crash
// mlir-opt 22 with SIGSEGV). dsc tools bound the nesting of textual input
// before handing it to the parser, so such input is a diagnostic instead.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_SUPPORT_INPUTLIMITS_H
#define DSC_SUPPORT_INPUTLIMITS_H

#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <optional>

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace mlir::dsc {

/// Default bound on bracket nesting ({, (, [, <) in textual IR. Real models
/// need fewer than 20 levels; the parser is safe to well beyond 1,000 on an
/// 8 MiB stack.
constexpr unsigned kDefaultMaxNestingDepth = 256;

/// Byte offset of the first opening bracket that nests deeper than
/// `maxDepth`, or nullopt when the text stays within it. String literals and
/// `//` comments are skipped; `->`, `>=` and `<=` are not brackets. MLIR
/// bytecode (which starts with "ML\xefR") is not textual and is not scanned.
std::optional<size_t> findExcessiveNesting(llvm::StringRef text,
                                           unsigned maxDepth);

/// Checks the main buffer of `sourceMgr`; on violation prints
/// "file:line:col: error: ..." through the source manager and returns false.
bool checkNestingDepth(llvm::SourceMgr &sourceMgr, unsigned maxDepth);

} // namespace mlir::dsc

#endif // DSC_SUPPORT_INPUTLIMITS_H
