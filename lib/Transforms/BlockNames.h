//===- BlockNames.h - a model's repeated blocks, by state names -*- C++ -*-===//
//
// Passes that work block by block (activation checkpointing, random-LTD)
// find the blocks from the names of the states they load.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_TRANSFORMS_BLOCKNAMES_H
#define DSC_LIB_TRANSFORMS_BLOCKNAMES_H

#include "mlir/Support/LLVM.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::dsc {

/// The model's repeated blocks, from the names of the states they load: a
/// `torch.nn.ModuleList` names its children `<prefix>.<i>` (GPT-2's
/// `transformer.h.3.attn.c_attn.weight`, Llama's `layers.3.mlp.up_proj.weight`).
/// A state belongs to the block of the shortest such prefix that occurs with
/// at least two indices (so experts inside a block stay in their block).
class BlockNames {
public:
  explicit BlockNames(ArrayRef<StringRef> stateNames) {
    llvm::StringMap<llvm::StringSet<>> indices;
    for (StringRef name : stateNames)
      forEachIndexedPrefix(name, [&](StringRef prefix, StringRef index) {
        indices[prefix].insert(index);
        return false;
      });
    for (auto &entry : indices)
      if (entry.second.size() >= 2)
        repeated.insert(entry.first());
  }

  /// `<prefix>.<i>` of the block that `stateName` belongs to, or "".
  StringRef blockOf(StringRef stateName) const {
    StringRef block;
    forEachIndexedPrefix(stateName, [&](StringRef prefix, StringRef index) {
      if (!repeated.contains(prefix))
        return false;
      block = stateName.take_front(prefix.size() + 1 + index.size());
      return true;
    });
    return block;
  }

private:
  /// Calls `fn(prefix, index)` for every dot-separated component of `name`
  /// that is a decimal index, shortest prefix first, until `fn` is true.
  template <typename Fn>
  static void forEachIndexedPrefix(StringRef name, Fn fn) {
    size_t start = 0;
    while (start < name.size()) {
      size_t dot = name.find('.', start);
      StringRef component = name.slice(start, dot);
      if (start > 0 && !component.empty() &&
          llvm::all_of(component, [](char c) { return llvm::isDigit(c); }) &&
          fn(name.take_front(start - 1), component))
        return;
      if (dot == StringRef::npos)
        return;
      start = dot + 1;
    }
  }

  llvm::StringSet<> repeated;
};

} // namespace mlir::dsc

#endif // DSC_LIB_TRANSFORMS_BLOCKNAMES_H
