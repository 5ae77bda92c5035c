//===- BlockNames.h - a model's repeated blocks, by state names -*- C++ -*-===//
//
// Passes that work block by block (activation checkpointing, random-LTD)
// find the blocks from the names of the states they load.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_TRANSFORMS_BLOCKNAMES_H
#define DSC_LIB_TRANSFORMS_BLOCKNAMES_H

#include "dsc/Dialect/DSC/IR/DSCOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::dsc {

/// The model's repeated blocks, from the names of the states they load: a
/// `torch.nn.ModuleList` names its children `<prefix>.<i>` (GPT-2's
/// `transformer.h.3.attn.c_attn.weight`, Llama's `layers.3.mlp.up_proj.weight`).
/// A state belongs to the block of the shortest such prefix that occurs with
/// at least two indices (so experts inside a block stay in their block),
/// or that `module` records as repeated (kRepeatedBlocksAttrName: a
/// pipeline stage holding one block of several).
class BlockNames {
public:
  explicit BlockNames(ArrayRef<StringRef> stateNames, ModuleOp module = {}) {
    llvm::StringMap<llvm::StringSet<>> indices;
    for (StringRef name : stateNames)
      forEachIndexedPrefix(name, [&](StringRef prefix, StringRef index) {
        indices[prefix].insert(index);
        return false;
      });
    for (auto &entry : indices)
      if (entry.second.size() >= 2)
        repeated.insert(entry.first());
    if (auto recorded = module ? module->getAttrOfType<ArrayAttr>(kRepeatedBlocksAttrName)
                               : ArrayAttr())
      for (auto prefix : recorded.getAsValueRange<StringAttr>())
        repeated.insert(prefix);
  }

  /// The prefixes of the repeated blocks, sorted.
  SmallVector<StringRef> prefixes() const {
    SmallVector<StringRef> out;
    for (const auto &entry : repeated)
      out.push_back(entry.getKey());
    llvm::sort(out);
    return out;
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

/// A block's ops, [begin, end) in program order.
struct BlockRun {
  std::string name;
  size_t begin = 0, end = 0;
};

/// The model's blocks in the order the forward runs them (`ops`, one
/// block's ops in program order): a block's ops run from its first state
/// load to the next load of a state of something else.
inline SmallVector<BlockRun> findBlocks(ArrayRef<Operation *> ops) {
  SmallVector<StringRef> names;
  for (Operation *op : ops)
    if (auto load = dyn_cast<LoadOp>(op))
      names.push_back(load.getState());
  BlockNames blocks(names);
  SmallVector<BlockRun> runs;
  for (size_t p = 0; p < ops.size(); ++p) {
    auto load = dyn_cast<LoadOp>(ops[p]);
    if (!load)
      continue;
    StringRef block = blocks.blockOf(load.getState());
    if (!runs.empty() && runs.back().end == 0) {
      if (block == runs.back().name)
        continue;
      runs.back().end = p; // another state's load ends the run
    }
    if (!block.empty() &&
        llvm::none_of(runs, [&](const BlockRun &r) { return r.name == block; }))
      runs.push_back({block.str(), p, 0});
  }
  if (!runs.empty() && runs.back().end == 0)
    runs.back().end = ops.size();
  return runs;
}

} // namespace mlir::dsc

#endif // DSC_LIB_TRANSFORMS_BLOCKNAMES_H
