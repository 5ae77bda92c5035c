//===- LocatedJson.h - JSON with comments, duplicate keys and locations ---===//
//
// DeepSpeed reads ds_config.json with comments allowed and rejects a key
// given twice in one object; llvm::json::parse does neither (it refuses
// comments and keeps the last of two equal keys). This reader blanks the
// comments out, finds duplicate keys, and remembers where each key is, so
// that errors about a setting can point at it; llvm::json parses the rest.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_CONFIG_LOCATEDJSON_H
#define DSC_CONFIG_LOCATEDJSON_H

#include "mlir/Support/LLVM.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SMLoc.h"

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace mlir::dsc {

struct LocatedJson {
  llvm::json::Value value = nullptr;
  /// Where each object key is, by its path from the root: `optimizer`,
  /// `optimizer.params.lr`, `a.b[2].c` for a key inside an array element.
  llvm::StringMap<llvm::SMLoc> keys;

  /// The location of `path`'s key, or of the start of the text.
  llvm::SMLoc locate(StringRef path) const;
  llvm::SMLoc start;
};

/// Objects and arrays nested deeper than this are an error before
/// llvm::json sees the text. DeepSpeed's deepest key is four levels down.
constexpr unsigned kMaxJsonNesting = 64;

/// Parses the buffer `bufferId` of `sourceMgr`. Syntax errors, unterminated
/// comments and duplicate keys are reported through `sourceMgr` at their
/// position and give failure, and so does nesting deeper than
/// kMaxJsonNesting.
FailureOr<LocatedJson> parseLocatedJson(llvm::SourceMgr &sourceMgr,
                                        unsigned bufferId);

} // namespace mlir::dsc

#endif // DSC_CONFIG_LOCATEDJSON_H
