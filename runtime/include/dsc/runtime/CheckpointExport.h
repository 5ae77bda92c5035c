//===- CheckpointExport.h - consolidated weights from a checkpoint -*- C++ -*-===//
//
// What `dsc-ckpt` (tools/dsc-ckpt, docs/running.md "Exporting the weights")
// does with a checkpoint: describe it, and export the model's weights as
// one ordinary safetensors file, whatever the ZeRO stage and world size
// that saved it. The model's tensors are the states metadata.json records
// with role "parameter" or "buffer" (what dsc.export's model.safetensors
// holds), under their own names and whole shapes: a partitioned tensor
// (ZeRO's, or expert parallelism's) is reassembled from its pieces, its
// padding cut off. Where the
// checkpoint holds an fp32 master copy of a tensor (a state named
// `<name>.master`), the master is exported in its place; 16-bit floats are
// widened to fp32. Optimizer and gradient state are left out.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_CHECKPOINTEXPORT_H
#define DSC_RUNTIME_CHECKPOINTEXPORT_H

#include "dsc/runtime/Checkpoint.h"

#include <string>
#include <vector>

namespace dsc::rt {

/// The suffix of an fp32 master copy's state name.
constexpr const char *kMasterSuffix = ".master";

/// One tensor of an export: written as `name`, from checkpoint tensor
/// `source` (`name` itself, or its master copy).
struct ExportedTensor {
  std::string name;
  std::string source;
  DType stored;  // the source's dtype in the checkpoint
  DType written; // F32 for a 16-bit float, otherwise `stored`
  std::vector<int64_t> shape;
};

/// The tensors an export of `checkpoint` writes, sorted by name. Throws
/// Error naming the checkpoint when it records no roles (saved before
/// metadata.json did), holds no parameter, or holds a master copy of
/// another shape or of no float type.
std::vector<ExportedTensor> planWeightsExport(const Checkpoint &checkpoint);

/// Writes planWeightsExport's tensors to `path` atomically (temporary file,
/// fsync, rename) and returns them. Throws Error "PATH: ..." when `path`
/// cannot be written, and the checkpoint's own errors (a piece that fails
/// its checksum).
std::vector<ExportedTensor> exportWeights(const Checkpoint &checkpoint,
                                          const std::string &path);

/// What `dsc-ckpt info` prints: the saving job, the tensors by role, what
/// is partitioned (and so which ZeRO stage saved it), one line per tensor.
std::string describeCheckpoint(const Checkpoint &checkpoint);

} // namespace dsc::rt

#endif // DSC_RUNTIME_CHECKPOINTEXPORT_H
