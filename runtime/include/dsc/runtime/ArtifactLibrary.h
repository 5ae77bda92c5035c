//===- ArtifactLibrary.h - a loaded step artifact ---------------*- C++ -*-===//
//
// dsc-run's view of an artifact (Artifact.h): the shared library, opened
// with dlopen, its two entry points, and its ArtifactInfo checked once so
// that nothing later has to distrust it. Every problem is one Error naming
// the artifact's path: a missing or unloadable file, one that is no ELF
// shared library or is cut short (checked before dlopen, which would map
// it and raise SIGBUS past its end), a library that is no artifact, an ABI version other than kArtifactAbiVersion, an ArtifactInfo
// whose fields make no sense.
//
// Artifacts call runtime functions (CpuGemm.h, Error.h, ...) that they do
// not link: those symbols resolve at dlopen time against the host
// executable, which must export the whole runtime (docs/running.md).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_ARTIFACTLIBRARY_H
#define DSC_RUNTIME_ARTIFACTLIBRARY_H

#include "dsc/runtime/Artifact.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dsc::rt {

class ArtifactLibrary {
public:
  /// dlopen()s `path` (RTLD_NOW, so that a symbol the host does not export
  /// fails here rather than mid-step), finds both entry points and validates
  /// the ArtifactInfo (validateArtifactInfo). A path without a '/' names a
  /// file in the current directory, never one on the library search path.
  static std::unique_ptr<ArtifactLibrary> open(const std::string &path);
  /// Leaves the library loaded (no dlclose): threads that generated code
  /// started, such as an OpenMP pool, may outlive the object.
  ~ArtifactLibrary();
  ArtifactLibrary(const ArtifactLibrary &) = delete;
  ArtifactLibrary &operator=(const ArtifactLibrary &) = delete;

  const ArtifactInfo &info() const { return *info_; }
  const std::string &path() const { return path_; }
  /// Runs dsc_artifact_step. Whatever the generated code throws (an Error
  /// from a runtime call) propagates.
  void step(StepContext &context) const { step_(&context); }
  /// The `key=value` lines of dsc-run's defaults the config compiled in
  /// (the optional entry point dsc_artifact_run_settings); empty without.
  const std::string &runSettings() const { return runSettings_; }
  /// The step's variants (dsc_artifact_variants), checked: each has a step,
  /// 1 <= kept <= seqlen and an arena within ArtifactInfo's. Empty for an
  /// artifact without data schedules.
  const std::vector<StepVariant> &variants() const { return variants_; }
  /// For a pipeline-parallel artifact (ArtifactInfo::pipelineParallelSize
  /// P > 1), makes info() and step() those of the stage that rank `rank`
  /// of a job of `worldSize` ranks runs, rank / (worldSize / P)
  /// (dsc_artifact_stages), checked as open() checks stage 0's; nothing
  /// otherwise. Error when the table is missing or is not P stages.
  void selectPipelineStage(int rank, int worldSize);
  /// The tables of every pipeline stage, in stage order, each checked as
  /// info() is (once selectPipelineStage has run): what a checkpoint of the
  /// whole job is made of. Just info() without pipeline parallelism.
  std::vector<const ArtifactInfo *> stageInfos() const;
  /// Runs variant `i`'s step.
  void step(StepContext &context, size_t i) const {
    variants_.at(i).step(&context);
  }

private:
  ArtifactLibrary() = default;
  std::string path_;
  void *handle_ = nullptr;
  const ArtifactInfo *info_ = nullptr;
  std::vector<const ArtifactInfo *> stages_; // selectPipelineStage's, P > 1
  void (*step_)(StepContext *) = nullptr;
  std::string runSettings_;
  std::vector<StepVariant> variants_;
};

/// Throws Error "WHERE: <problem>" unless `info` is usable: the ABI version
/// is kArtifactAbiVersion (checked first: the other fields' layout depends
/// on it), the target is named, worldSize >= 1, expertParallelSize >= 1
/// divides worldSize, arenaBytes >= 0, every array is present for its
/// count, every tensor has a non-empty name, a known element type, 0 <=
/// rank <= kMaxTensorRank, no negative dimension and a byte size that fits
/// in int64, state roles are known, a partitioned state is partitioned over
/// the World or the Expert group in shards of ceil(numel / group size) (an
/// unpartitioned one names the World), and no two states, inputs or
/// outputs share a name.
void validateArtifactInfo(const ArtifactInfo &info, const std::string &where);

constexpr int32_t kMaxTensorRank = 16;

/// "[16, 8]"; "[]" for a scalar.
std::string formatShape(int32_t rank, const int64_t *shape);
/// "f32 [16, 8]".
std::string describeType(const TensorDesc &tensor);
/// Elements and bytes of a validated tensor.
int64_t numElements(const TensorDesc &tensor);
size_t tensorBytes(const TensorDesc &tensor);

/// Index of the tensor named `name` among `count` tensors, or -1.
int32_t findTensor(const TensorDesc *tensors, int32_t count,
                   const std::string &name);

} // namespace dsc::rt

#endif // DSC_RUNTIME_ARTIFACTLIBRARY_H
