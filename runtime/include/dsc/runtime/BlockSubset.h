//===- BlockSubset.h - a shallower model's weights from a deeper one -*- C++ -*-===//
//
// What `dsc-ckpt blocks` does (docs/distillation.md, "A student from its
// teacher"): Mixture-of-Students trains a student with fewer blocks than
// its teacher, and starting it from some of the teacher's blocks is what a
// user wants without writing code. Blocks are found by name: the tensors
// `P.<i>.<rest>` of a blocks prefix P (`transformer.h` in the zoo's GPT-2,
// whose block i holds `transformer.h.<i>.attn.c_attn.weight`, ...). The kept blocks are renumbered
// 0, 1, ... in the order given; every other tensor (embeddings, the final
// norm, the head) is copied as it is.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_BLOCKSUBSET_H
#define DSC_RUNTIME_BLOCKSUBSET_H

#include "dsc/runtime/SafeTensors.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dsc::rt {

/// One tensor of the output: written as `name` from input tensor `source`.
struct RenamedTensor {
  std::string name;
  std::string source;
};

/// The tensors of `names` (a weights file's) a subset keeps: block
/// `keep[j]` under prefix `prefix` becomes block j, tensors outside the
/// prefix's blocks stay, the other blocks' go. Sorted by output name.
/// Throws Error when `prefix` names no block, a kept block has no tensor,
/// or `keep` is empty or repeats a block.
std::vector<RenamedTensor> planBlockSubset(const std::vector<std::string> &names,
                                           const std::string &prefix,
                                           const std::vector<int64_t> &keep);

/// Writes planBlockSubset's tensors of `weights` to `path` (atomically, as
/// writeSafeTensors does), each with its dtype, shape and bytes unchanged,
/// and returns them.
std::vector<RenamedTensor> writeBlockSubset(const SafeTensorsFile &weights,
                                            const std::string &prefix,
                                            const std::vector<int64_t> &keep,
                                            const std::string &path);

} // namespace dsc::rt

#endif // DSC_RUNTIME_BLOCKSUBSET_H
