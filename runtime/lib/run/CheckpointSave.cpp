//===- CheckpointSave.cpp - write a checkpoint, committed last ------------===//
//
// The order of a save is what makes it safe to interrupt at any point:
//   1. the shards go into ROOT/step_<N>.saving, each written atomically
//      (temporary file, fsync, rename: writeSafeTensors);
//   2. once every rank's shard is durable, metadata.json is written into
//      the same directory, atomically;
//   3. the directory is renamed to a name nothing has: ROOT/step_<N>, or
//      for a second save of step N (a run resumed from an earlier step)
//      ROOT/step_<N>.<V>, V = 1, 2, ... the first free; then ROOT is synced;
//   4. ROOT/latest is replaced, atomically, to name it;
//   5. only then are the saves it supersedes removed: the other
//      directories of step N.
// Nothing that `latest` names is renamed or removed before `latest` names
// something else that is complete, so a crash anywhere leaves it naming a
// complete checkpoint: the previous one before 4, the new one after. What
// a crash leaves besides is a staging directory, which the next save of
// that step removes, or a superseded save, which the next commit of that
// step removes. detail::crashPoint marks each step for the tests that
// interrupt a save at every one.
//
//===----------------------------------------------------------------------===//

#include "CheckpointFiles.h"

#include "../io/PosixFile.h"
#include "dsc/runtime/ArtifactLibrary.h"
#include "dsc/runtime/Checkpoint.h"
#include "dsc/runtime/CommGroups.h"
#include "dsc/runtime/Error.h"
#include "dsc/runtime/Run.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <unistd.h>

namespace dsc::rt {

namespace fs = std::filesystem;
using detail::checkpointStagingDirectory;
using detail::joinPath;
using detail::PosixFile;
using nlohmann::ordered_json;

std::string detail::joinPath(const std::string &root, const std::string &name) {
  if (!root.empty() && root.back() == '/')
    return root + name;
  return root + "/" + name;
}

std::string detail::checkpointStagingDirectory(const std::string &root,
                                               int64_t step) {
  return joinPath(root, checkpointStepName(step) + ".saving");
}

std::string checkpointStepName(int64_t step) {
  return "step_" + std::to_string(step);
}

int64_t checkpointStepOf(const std::string &name) {
  const std::string prefix = "step_";
  if (name.compare(0, prefix.size(), prefix) != 0)
    return -1;
  auto digits = [&](size_t from, size_t to) {
    if (to <= from || to - from > 18)
      return false;
    for (size_t i = from; i < to; ++i)
      if (name[i] < '0' || name[i] > '9')
        return false;
    return true;
  };
  size_t dot = name.find('.', prefix.size());
  size_t stepEnd = dot == std::string::npos ? name.size() : dot;
  if (!digits(prefix.size(), stepEnd) ||
      (dot != std::string::npos && !digits(dot + 1, name.size())))
    return -1;
  return std::stoll(name.substr(prefix.size(), stepEnd - prefix.size()));
}

std::string checkpointShardName(int rank, int worldSize) {
  return "shard-" + std::to_string(rank) + "-of-" + std::to_string(worldSize) +
         ".safetensors";
}

const char *stateRoleName(StateRole role) {
  switch (role) {
  case StateRole::Parameter: return "parameter";
  case StateRole::Buffer: return "buffer";
  case StateRole::Optimizer: return "optimizer";
  case StateRole::Gradient: return "gradient";
  case StateRole::Master: return "master";
  case StateRole::Teacher: return "teacher";
  }
  return "?";
}

bool parseStateRole(const std::string &name, StateRole &role) {
  for (StateRole candidate : {StateRole::Parameter, StateRole::Buffer,
                              StateRole::Optimizer, StateRole::Gradient,
                              StateRole::Master, StateRole::Teacher})
    if (name == stateRoleName(candidate)) {
      role = candidate;
      return true;
    }
  return false;
}

int checkpointWriter(int32_t index, int worldSize) {
  return static_cast<int>(index % worldSize);
}

bool checkpointWrites(const StateDesc &state, int32_t index, int rank,
                      int worldSize, int expertParallelSize,
                      int tensorParallelSize) {
  // Frozen, and the teacher's own file holds it.
  if (state.role == StateRole::Teacher)
    return false;
  if (!isPartitioned(state))
    return checkpointWriter(index, worldSize) == rank;
  // Each piece of an expert partition once: ExpertData index 0 writes it;
  // each tensor-parallel slice once: Data index 0 writes it; each piece of
  // a data-group partition of a whole tensor once: Tensor index 0 writes it.
  // Every rank holds a piece of its own of a data-group partition of a
  // slice (ZeRO's shard of the rank's slice).
  if (partitionGroup(state) == CommGroup::Tensor)
    return groupIndex(CommGroup::Data, rank, expertParallelSize,
                      tensorParallelSize) == 0;
  if (partitionGroup(state) == CommGroup::Data)
    return state.partitionBlocks >= 1 ||
           groupIndex(CommGroup::Tensor, rank, expertParallelSize,
                      tensorParallelSize) == 0;
  // An expert partition that tensor parallelism does not split (a
  // row-parallel bias) is alike on the Tensor group too: Tensor index 0;
  // so is ZeRO's shard of it over the expert-data group.
  bool alikeOnTensor =
      state.partitionBlocks < 1 &&
      groupIndex(CommGroup::Tensor, rank, expertParallelSize,
                 tensorParallelSize) != 0;
  if (partitionGroup(state) == CommGroup::Expert)
    return groupIndex(CommGroup::ExpertData, rank, expertParallelSize,
                      tensorParallelSize) == 0 &&
           !alikeOnTensor;
  if (partitionGroup(state) == CommGroup::ExpertData)
    return !alikeOnTensor;
  return true;
}

bool checkpointWritesInStage(const ArtifactInfo &stage, int32_t index,
                             int rank, int worldSize) {
  const int stageRanks = worldSize / pipelineParallelSize(stage);
  return checkpointWrites(stage.states[index], index, rank % stageRanks,
                          stageRanks, stage.expertParallelSize,
                          tensorParallelSize(stage));
}

namespace {

/// The stage that `rank` of a job of `worldSize` ranks runs.
int stageOfRank(const PipelineStageInfos &stages, int rank, int worldSize) {
  const int count = static_cast<int>(stages.size());
  check(count >= 1 && worldSize % count == 0 && rank >= 0 && rank < worldSize,
        "checkpoint: " + std::to_string(count) +
            " pipeline stages for rank " + std::to_string(rank) + " of " +
            std::to_string(worldSize));
  return rank / (worldSize / count);
}

/// Whether `info` has a state named `name`.
bool holdsState(const ArtifactInfo &info, const char *name) {
  for (int32_t i = 0; i < info.numStates; ++i)
    if (std::strcmp(info.states[i].tensor.name, name) == 0)
      return true;
  return false;
}

} // namespace

bool checkpointWrites(const PipelineStageInfos &stages, int32_t index,
                      int rank, int worldSize) {
  const int stage = stageOfRank(stages, rank, worldSize);
  const ArtifactInfo &info = *stages[size_t(stage)];
  if (!checkpointWritesInStage(info, index, rank, worldSize))
    return false;
  // A tied weight: the first stage that holds it writes it.
  for (int earlier = 0; earlier < stage; ++earlier)
    if (holdsState(*stages[size_t(earlier)], info.states[index].tensor.name))
      return false;
  return true;
}

namespace {

/// Throws Error "PATH: WHAT: <reason>" when `error` is set.
void checkFs(const std::error_code &error, const std::string &path,
             const std::string &what) {
  if (error)
    throw Error(path + ": " + what + ": " + error.message());
}

/// Makes creations and renames in `dir` durable. Best effort, as in
/// writeSafeTensors: some file systems refuse fsync on a directory.
void syncDirectory(const std::string &dir) {
  try {
    PosixFile::openDirectory(dir).sync();
  } catch (const Error &) {
  }
}

/// Replaces `path` by `text` atomically (lib/io's temporary file, fsync,
/// rename, directory fsync).
void writeFileAtomically(const std::string &path, const std::string &text) {
  detail::replaceFileAtomically(path, [&](PosixFile &file) {
    file.writeAll(text.data(), text.size());
  });
}

/// The metadata.json entry of every tensor the reports name, by name;
/// `shards` gets each report's shard. Refuses a tensor reported twice.
std::map<std::string, ordered_json>
mergeReports(const std::vector<std::string> &reports, ordered_json &shards) {
  std::map<std::string, ordered_json> tensors;
  for (size_t r = 0; r < reports.size(); ++r) {
    ordered_json report;
    try {
      report = ordered_json::parse(reports[r]);
    } catch (const ordered_json::exception &e) {
      throw Error("rank " + std::to_string(r) +
                  " sent a malformed shard report: " + e.what());
    }
    const std::string file = report.at("file").get<std::string>();
    check(report.at("rank").get<size_t>() == r,
          "shard reports are not in rank order");
    ordered_json shard = {
        {"file", file}, {"rank", r}, {"bytes", report.at("bytes")}};
    if (report.contains("stage"))
      shard["stage"] = report.at("stage");
    shards.push_back(std::move(shard));
    for (auto &[name, entry] : report.at("tensors").items()) {
      if (entry.contains("offset")) { // a piece of a partitioned state
        ordered_json &merged = tensors[name];
        if (merged.is_null()) {
          ordered_json partition = {{"world_size", reports.size()}};
          if (entry.contains("group")) { // expert parallelism's
            partition["group"] = entry.at("group");
            partition["group_size"] = entry.at("group_size");
          }
          partition["shard_elements"] = entry.at("shard_elements");
          merged = {{"dtype", entry.at("dtype")},
                    {"role", entry.at("role")},
                    {"shape", entry.at("whole")},
                    {"partition", std::move(partition)},
                    {"pieces", ordered_json::array()}};
        }
        check(merged.contains("pieces"),
              "tensor '" + name + "' was written whole and in pieces");
        ordered_json piece = {{"shard", file},
                              {"offset", entry.at("offset")},
                              {"shape", entry.at("shape")},
                              {"bytes", entry.at("bytes")},
                              {"checksum", entry.at("checksum")}};
        for (const char *key : {"blocks", "stride", "first", "block_elements"})
          if (entry.contains(key))
            piece[key] = entry.at(key);
        merged["pieces"].push_back(std::move(piece));
        continue;
      }
      ordered_json merged = {{"dtype", entry.at("dtype")},
                             {"role", entry.at("role")},
                             {"shape", entry.at("shape")},
                             {"shard", file},
                             {"bytes", entry.at("bytes")},
                             {"checksum", entry.at("checksum")}};
      check(tensors.emplace(name, std::move(merged)).second,
            "tensor '" + name + "' was written by two ranks");
    }
  }
  // Pieces by offset: an ExpertData partition's ranks hold their pieces
  // in another order (rank r the block r % P); the shards of one slice
  // (one offset) by their first element.
  auto order = [](const ordered_json &piece) {
    return std::make_pair(piece.at("offset").get<int64_t>(),
                          piece.value("first", int64_t(0)));
  };
  for (auto &[name, merged] : tensors)
    if (merged.contains("pieces"))
      std::sort(merged["pieces"].begin(), merged["pieces"].end(),
                [&](const ordered_json &a, const ordered_json &b) {
                  return order(a) < order(b);
                });
  return tensors;
}

/// The directories of saves of step `step` in `root` (step_<N> and
/// step_<N>.<V>), by name.
std::vector<std::string> savesOfStep(const std::string &root, int64_t step) {
  std::vector<std::string> names;
  std::error_code error;
  for (fs::directory_iterator it(root, error), end; !error && it != end;
       it.increment(error)) {
    std::string name = it->path().filename().string();
    if (checkpointStepOf(name) == step)
      names.push_back(name);
  }
  checkFs(error, root, "cannot list the checkpoint directory");
  return names;
}

} // namespace

void createCheckpointRoot(const std::string &root) {
  std::error_code error;
  fs::create_directories(root, error);
  checkFs(error, root, "cannot create the checkpoint directory");
}

void beginCheckpoint(const std::string &root, int64_t step) {
  createCheckpointRoot(root);
  std::error_code error;
  std::string staging = checkpointStagingDirectory(root, step);
  fs::remove_all(staging, error);
  checkFs(error, staging, "cannot remove what an earlier save left");
  fs::create_directory(staging, error);
  checkFs(error, staging, "cannot create directory");
  syncDirectory(root);
}

std::string writeCheckpointShard(const std::string &root,
                                 const CheckpointJob &job,
                                 const ArtifactInfo &info,
                                 const std::vector<void *> &states, int rank) {
  return writeCheckpointShard(root, job, PipelineStageInfos{&info}, states,
                              rank);
}

std::string writeCheckpointShard(const std::string &root,
                                 const CheckpointJob &job,
                                 const PipelineStageInfos &stages,
                                 const std::vector<void *> &states, int rank) {
  const int stage = stageOfRank(stages, rank, job.worldSize);
  const ArtifactInfo &info = *stages[size_t(stage)];
  // A stage's ranks place its states' pieces as a job of W/P ranks would.
  const int stageRanks = job.worldSize / static_cast<int>(stages.size());
  const int local = rank % stageRanks;
  std::string staging = checkpointStagingDirectory(root, job.step);
  std::error_code error;
  check(fs::is_directory(staging, error),
        staging + ": this rank does not see the directory rank 0 created "
                  "for the save; --save must name a directory that every "
                  "rank shares");
  check(states.size() == static_cast<size_t>(info.numStates),
        "writeCheckpointShard: " + std::to_string(states.size()) +
            " state buffers for " + std::to_string(info.numStates) + " states");

  std::vector<TensorView> views;
  ordered_json tensors = ordered_json::object();
  for (int32_t i = 0; i < info.numStates; ++i) {
    const StateDesc &desc = info.states[i];
    if (!checkpointWrites(stages, i, rank, job.worldSize))
      continue;
    const TensorDesc &state = desc.tensor;
    std::vector<int64_t> shape(state.shape, state.shape + state.rank);
    DType dtype = storageDType(state.type);
    size_t bytes = tensorBytes(state);
    StateSlice slice = stateSlice(desc, local, info.expertParallelSize,
                                  tensorParallelSize(info));
    if (isPartitioned(desc)) {
      // This rank's piece, its zero padding stripped.
      if (slice.total() == 0)
        continue;
      shape = {slice.total()};
      bytes = size_t(slice.total()) * elementSize(state.type);
    }
    // A non-finite state would be refused when resumed: never save one.
    checkFinite(states[size_t(i)], dtype, bytes / dtypeSize(dtype),
                "the state after step " + std::to_string(job.step),
                state.name);
    views.push_back({state.name, dtype, shape, states[size_t(i)]});
    ordered_json entry = {
        {"dtype", dtypeName(dtype)},
        {"role", stateRoleName(desc.role)},
        {"shape", shape},
        {"bytes", bytes},
        {"checksum", formatChecksum(fnv1a64(states[size_t(i)], bytes))}};
    if (isPartitioned(desc)) {
      TensorDesc whole = wholeTensor(desc);
      entry["offset"] = slice.begin;
      entry["whole"] = std::vector<int64_t>(whole.shape, whole.shape + whole.rank);
      entry["shard_elements"] = numElements(state);
      if (partitionGroup(desc) != CommGroup::World) {
        entry["group"] = name(partitionGroup(desc));
        entry["group_size"] =
            GroupLayout(stageRanks, info.expertParallelSize,
                        tensorParallelSize(info))
                .size(partitionGroup(desc));
      }
      // A tensor-parallel slice of several blocks, or ZeRO's shard of a
      // slice: a run of its blocks.
      if (slice.blocks > 1 || slice.size >= 0) {
        entry["blocks"] = slice.blocks;
        entry["stride"] = slice.stride;
      }
      if (slice.size >= 0) {
        entry["first"] = slice.first;
        entry["block_elements"] = slice.count;
      }
    }
    tensors[state.name] = std::move(entry);
  }
  std::string file = checkpointShardName(rank, job.worldSize);
  std::string path = joinPath(staging, file);
  // The shard says what it is on its own, for whoever finds it alone.
  std::map<std::string, std::string> header = {
      {"format", kCheckpointFormat},
      {"step", std::to_string(job.step)},
      {"rank", std::to_string(rank)},
      {"world_size", std::to_string(job.worldSize)}};
  if (stages.size() > 1)
    header["pipeline_stage"] = std::to_string(stage);
  writeSafeTensors(path, views, header);
  uintmax_t bytes = fs::file_size(path, error);
  checkFs(error, path, "cannot stat");
  ordered_json report = {
      {"file", file}, {"rank", rank}, {"bytes", bytes}, {"tensors", tensors}};
  if (stages.size() > 1)
    report["stage"] = stage;
  return report.dump();
}

std::string commitCheckpoint(const std::string &root, const CheckpointJob &job,
                             const ArtifactInfo &info,
                             const std::vector<std::string> &reports) {
  return commitCheckpoint(root, job, PipelineStageInfos{&info}, reports);
}

std::string commitCheckpoint(const std::string &root, const CheckpointJob &job,
                             const PipelineStageInfos &stages,
                             const std::vector<std::string> &reports) {
  check(!stages.empty() &&
            job.worldSize % static_cast<int>(stages.size()) == 0,
        "commitCheckpoint: " + std::to_string(stages.size()) +
            " pipeline stages for " + std::to_string(job.worldSize) +
            " ranks");
  check(reports.size() == static_cast<size_t>(job.worldSize),
        "commitCheckpoint: " + std::to_string(reports.size()) +
            " shard reports for " + std::to_string(job.worldSize) + " ranks");
  ordered_json metadata = {{"format", kCheckpointFormat},
                           {"version", kCheckpointVersion},
                           {"step", job.step},
                           {"world_size", job.worldSize},
                           {"model", job.model},
                           {"target", job.target},
                           {"global_batch", job.globalBatch},
                           {"seq", job.seq},
                           {"checksum", detail::kCheckpointChecksumName},
                           {"shards", ordered_json::array()},
                           {"tensors", ordered_json::object()}};
  if (job.seed)
    metadata["seed"] = *job.seed;
  if (stages.size() > 1)
    metadata["pipeline_parallel_size"] = stages.size();
  std::map<std::string, ordered_json> tensors =
      mergeReports(reports, metadata["shards"]);
  // Every state of every stage once, in the stages' and the artifact's
  // order, and nothing else; a state that several stages hold (a tied
  // weight) the first time.
  for (size_t s = 0; s < stages.size(); ++s) {
    const ArtifactInfo &info = *stages[s];
    for (int32_t i = 0; i < info.numStates; ++i) {
      if (info.states[i].role == StateRole::Teacher)
        continue;
      std::string name = info.states[i].tensor.name;
      if (metadata["tensors"].contains(name))
        continue;
      auto found = tensors.find(name);
      check(found != tensors.end(),
            "no rank wrote state '" + name + "'" +
                (stages.size() > 1
                     ? " of pipeline stage " + std::to_string(s)
                     : std::string()));
      metadata["tensors"][name] = std::move(found->second);
      tensors.erase(found);
    }
  }
  check(tensors.empty(), "a rank wrote '" +
                             (tensors.empty() ? "" : tensors.begin()->first) +
                             "', which is no state of the artifact");

  std::string staging = checkpointStagingDirectory(root, job.step);
  writeFileAtomically(
      joinPath(staging, detail::kCheckpointMetadataFile),
      metadata.dump(2, ' ', false, ordered_json::error_handler_t::replace) +
          "\n");
  std::vector<std::string> superseded = savesOfStep(root, job.step);
  std::string name = checkpointStepName(job.step);
  for (int version = 1; std::find(superseded.begin(), superseded.end(),
                                  name) != superseded.end();
       ++version)
    name = checkpointStepName(job.step) + "." + std::to_string(version);
  std::string directory = joinPath(root, name);
  std::error_code error;
  detail::crashPoint();
  fs::rename(staging, directory, error);
  checkFs(error, staging, "cannot rename to " + directory);
  detail::crashPoint();
  syncDirectory(root);
  writeFileAtomically(joinPath(root, detail::kCheckpointLatestFile),
                      name + "\n");
  for (const std::string &old : superseded) {
    detail::crashPoint();
    fs::remove_all(joinPath(root, old), error); // what remains is only untidy
  }
  return directory;
}

void abandonCheckpoint(const std::string &root, int64_t step) noexcept {
  try {
    std::error_code ignored;
    fs::remove_all(checkpointStagingDirectory(root, step), ignored);
  } catch (...) {
  }
}

} // namespace dsc::rt
