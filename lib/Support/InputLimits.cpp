//===- InputLimits.cpp - limits checked before parsing --------------------===//

#include "dsc/Support/InputLimits.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::dsc {

std::optional<size_t> findExcessiveNesting(llvm::StringRef text,
                                           unsigned maxDepth) {
  if (text.starts_with("ML\xef" "R"))
    return std::nullopt;
  unsigned depth = 0;
  const size_t size = text.size();
  for (size_t i = 0; i < size; ++i) {
    char c = text[i];
    char next = i + 1 < size ? text[i + 1] : '\0';
    switch (c) {
    case '"':
      // Skip a string literal; backslash escapes the next character. An
      // unterminated string is the parser's error to report.
      for (++i; i < size && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
      break;
    case '/':
      if (next == '/')
        while (i < size && text[i] != '\n')
          ++i;
      break;
    case '-':
      if (next == '>')
        ++i; // `->` is an arrow, not a closing bracket.
      break;
    case '<':
    case '>':
      if (next == '=') { // `<=` / `>=` in integer sets
        ++i;
        break;
      }
      if (c == '>') {
        depth = depth ? depth - 1 : 0;
        break;
      }
      [[fallthrough]];
    case '{':
    case '(':
    case '[':
      if (++depth > maxDepth)
        return i;
      break;
    case '}':
    case ')':
    case ']':
      depth = depth ? depth - 1 : 0;
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}

bool checkNestingDepth(llvm::SourceMgr &sourceMgr, unsigned maxDepth) {
  const llvm::MemoryBuffer *buffer =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  std::optional<size_t> offset =
      findExcessiveNesting(buffer->getBuffer(), maxDepth);
  if (!offset)
    return true;
  sourceMgr.PrintMessage(
      llvm::errs(), llvm::SMLoc::getFromPointer(buffer->getBufferStart() + *offset),
      llvm::SourceMgr::DK_Error,
      "input nests deeper than " + llvm::Twine(maxDepth) +
          " levels of regions, attributes or types (limit: "
          "--dsc-max-nesting-depth)");
  return false;
}

} // namespace mlir::dsc
