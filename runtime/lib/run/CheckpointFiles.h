//===- CheckpointFiles.h - what save and load share -------------*- C++ -*-===//
//
// What the save (CheckpointSave.cpp) and the load (CheckpointLoad.cpp) of a
// checkpoint share besides Checkpoint.h. Internal to lib/run.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_LIB_RUN_CHECKPOINTFILES_H
#define DSC_RUNTIME_LIB_RUN_CHECKPOINTFILES_H

#include <cstdint>
#include <string>

namespace dsc::rt::detail {

constexpr const char *kCheckpointMetadataFile = "metadata.json";
constexpr const char *kCheckpointLatestFile = "latest";
constexpr const char *kCheckpointChecksumName = "fnv1a64";

/// ROOT/NAME, without doubling a '/' that ROOT ends with.
std::string joinPath(const std::string &root, const std::string &name);

/// Where the shards of step `step` are written before the step directory
/// is renamed into place: ROOT/step_<N>.saving.
std::string checkpointStagingDirectory(const std::string &root, int64_t step);

} // namespace dsc::rt::detail

#endif // DSC_RUNTIME_LIB_RUN_CHECKPOINTFILES_H
