//===- CheckpointLoad.cpp - find, verify and load a checkpoint ------------===//
//
// Everything that can be checked without reading tensor data is checked
// when the checkpoint is opened (the metadata, every shard's presence,
// size and header), so that a damaged checkpoint is refused before any
// buffer is filled; each tensor's checksum is checked as it is read.
// Every message names the step directory, so that it says which save is
// damaged.
//
//===----------------------------------------------------------------------===//

#include "CheckpointFiles.h"

#include "dsc/runtime/ArtifactLibrary.h"
#include "dsc/runtime/Checkpoint.h"
#include "dsc/runtime/Error.h"
#include "dsc/runtime/MemoryPool.h"
#include "dsc/runtime/Run.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <cstring>
#include <optional>

namespace dsc::rt {

namespace fs = std::filesystem;
using detail::joinPath;
using nlohmann::json;

namespace {

/// The last component of `dir`, trailing slashes ignored.
std::string baseName(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  return fs::path(dir).filename().string();
}

/// At most `limit` bytes of `path`.
std::string readText(const std::string &path, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), path + ": cannot read");
  std::string text(limit, '\0');
  in.read(text.data(), static_cast<std::streamsize>(limit));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

/// The step directory that `dir` (a root with `latest`, or a step
/// directory) designates.
std::string findStepDirectory(const std::string &dir) {
  std::error_code error;
  check(fs::is_directory(dir, error),
        dir + ": no checkpoint here: no such directory");
  if (checkpointStepOf(baseName(dir)) >= 0 ||
      fs::exists(joinPath(dir, detail::kCheckpointMetadataFile), error))
    return dir;
  std::string latest = joinPath(dir, detail::kCheckpointLatestFile);
  check(fs::exists(latest, error),
        dir + ": no checkpoint here: no 'latest' file, and it is no "
              "step_<N> directory");
  std::string name = readText(latest, 64);
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back())))
    name.pop_back();
  check(checkpointStepOf(name) >= 0,
        latest + ": names no step directory (step_<N>[.<V>]): '" + name +
            "'");
  std::string stepDir = joinPath(dir, name);
  check(fs::is_directory(stepDir, error),
        latest + ": names " + name + ", which does not exist");
  return stepDir;
}

/// metadata.json of `stepDir`, parsed, of this format and version.
json readMetadata(const std::string &stepDir) {
  std::string path = joinPath(stepDir, detail::kCheckpointMetadataFile);
  std::error_code error;
  check(fs::exists(path, error),
        "checkpoint " + stepDir +
            ": no metadata.json, so the save did not complete (or the file "
            "was removed)");
  json metadata;
  try {
    metadata = json::parse(readText(path, size_t(64) << 20));
  } catch (const json::exception &e) {
    // nlohmann's messages start with "[json.exception.parse_error.101] ".
    std::string why = e.what();
    auto bracket = why.find("] ");
    if (why.rfind("[json.exception", 0) == 0 && bracket != std::string::npos)
      why = why.substr(bracket + 2);
    throw Error(path + ": not valid JSON: " + why);
  }
  auto format = metadata.is_object() ? metadata.find("format") : metadata.end();
  check(format != metadata.end() && *format == kCheckpointFormat,
        path + ": not a dsc checkpoint's metadata (no \"format\": \"" +
            kCheckpointFormat + "\")");
  auto version = metadata.find("version");
  check(version != metadata.end() && *version == kCheckpointVersion,
        path + ": checkpoint format version " +
            // Not dump() of any value: a hostile file could nest arrays
            // deep enough to exhaust the stack of the recursive dump.
            (version == metadata.end() ? std::string("none")
             : version->is_primitive() ? version->dump()
                                       : std::string("(not a number)")) +
            ", but this dsc-run reads version " +
            std::to_string(kCheckpointVersion));
  return metadata;
}

/// `object[key]` as a T; a missing key or another type is an Error naming
/// the field.
template <typename T>
T field(const json &object, const char *key, const std::string &where) {
  try {
    return object.at(key).get<T>();
  } catch (const json::exception &) {
    throw Error(where + ": field \"" + key +
                "\" is missing or has the wrong type");
  }
}

int64_t nonNegative(int64_t value, const char *key, const std::string &where) {
  check(value >= 0, where + ": field \"" + key + "\" is negative");
  return value;
}

std::string describe(DType dtype, const std::vector<int64_t> &shape) {
  return std::string(dtypeName(dtype)) + " " +
         formatShape(static_cast<int32_t>(shape.size()), shape.data());
}

} // namespace

Checkpoint Checkpoint::open(const std::string &dir) {
  Checkpoint checkpoint;
  const std::string stepDir = findStepDirectory(dir);
  checkpoint.directory_ = stepDir;
  const std::string where = "checkpoint " + stepDir;
  const json metadata = readMetadata(stepDir);
  const std::string metaPath =
      joinPath(stepDir, detail::kCheckpointMetadataFile);

  CheckpointJob &job = checkpoint.job_;
  job.step =
      nonNegative(field<int64_t>(metadata, "step", metaPath), "step", metaPath);
  job.worldSize = field<int>(metadata, "world_size", metaPath);
  check(job.worldSize >= 1,
        metaPath + ": field \"world_size\" is not positive");
  job.model = field<std::string>(metadata, "model", metaPath);
  job.target = field<std::string>(metadata, "target", metaPath);
  job.globalBatch = field<int64_t>(metadata, "global_batch", metaPath);
  job.seq = field<int64_t>(metadata, "seq", metaPath);
  if (metadata.contains("seed"))
    job.seed = field<int64_t>(metadata, "seed", metaPath);
  if (metadata.contains("pipeline_parallel_size")) {
    job.pipelineParallelSize =
        field<int>(metadata, "pipeline_parallel_size", metaPath);
    check(job.pipelineParallelSize >= 1 &&
              job.worldSize % job.pipelineParallelSize == 0,
          metaPath + ": field \"pipeline_parallel_size\" does not divide "
                     "\"world_size\"");
  }
  check(field<std::string>(metadata, "checksum", metaPath) ==
            detail::kCheckpointChecksumName,
        metaPath + ": checksums are not " + detail::kCheckpointChecksumName);
  int64_t named = checkpointStepOf(baseName(stepDir));
  check(named < 0 || named == job.step,
        where + ": metadata.json is for step " + std::to_string(job.step) +
            ", not the directory's step " + std::to_string(named));

  const json shardList = field<json>(metadata, "shards", metaPath);
  check(shardList.is_array() &&
            shardList.size() == static_cast<size_t>(job.worldSize),
        metaPath + ": \"shards\" does not list one shard per rank of the " +
            std::to_string(job.worldSize) + " that saved it");
  for (size_t r = 0; r < shardList.size(); ++r) {
    const std::string file = field<std::string>(shardList[r], "file", metaPath);
    // Fixed names: also keeps a hostile metadata file inside the directory.
    std::string expected =
        checkpointShardName(static_cast<int>(r), job.worldSize);
    check(file == expected, metaPath + ": shard " + std::to_string(r) +
                                " is named '" + file + "', expected " +
                                expected);
    checkpoint.shards_.push_back(file);
  }

  const json tensors = field<json>(metadata, "tensors", metaPath);
  check(tensors.is_object(), metaPath + ": \"tensors\" is not an object");
  for (const auto &[name, value] : tensors.items()) {
    const std::string at = metaPath + ": tensor '" + name + "'";
    Entry entry;
    try {
      entry.dtype = parseDType(field<std::string>(value, "dtype", at));
    } catch (const Error &e) {
      throw Error(at + ": " + e.what());
    }
    entry.shape = field<std::vector<int64_t>>(value, "shape", at);
    if (value.contains("role")) {
      StateRole role;
      std::string roleName = field<std::string>(value, "role", at);
      check(parseStateRole(roleName, role),
            at + ": unknown role '" + roleName + "'");
      entry.role = role;
    }
    if (value.contains("partition")) {
      const json partition = field<json>(value, "partition", at);
      entry.partitionWorldSize = field<int>(partition, "world_size", at);
      entry.shardElements = field<int64_t>(partition, "shard_elements", at);
      entry.partitionGroupSize = entry.partitionWorldSize;
      if (partition.contains("group")) { // expert parallelism's
        std::string group = field<std::string>(partition, "group", at);
        // No state is partitioned over the pipeline's stages.
        check(parseCommGroup(group, entry.partitionGroup) &&
                  entry.partitionGroup != CommGroup::Pipeline,
              at + ": unknown partition group '" + group + "'");
        entry.partitionGroupSize = field<int>(partition, "group_size", at);
        check(entry.partitionGroupSize >= 1,
              at + ": partition \"group_size\" is not positive");
      }
    }
    int64_t numel = 1;
    for (int64_t d : entry.shape) {
      check(d >= 0 && (d == 0 || numel <= (int64_t(1) << 50) / d),
            at + ": shape has a negative or too large dimension");
      numel *= d;
    }
    // A whole tensor is one piece; a partitioned one lists its pieces.
    std::vector<json> pieces;
    bool whole = !value.contains("pieces");
    if (whole)
      pieces.push_back(value);
    else
      pieces = field<std::vector<json>>(value, "pieces", at);
    // Elements of the whole covered by the pieces so far; of the region of
    // blocks being covered by its slices (the whole tensor for a slice of
    // every block, the rank's experts' blocks for an expert's); and of the
    // slice being covered by its shards.
    int64_t covered = 0, regionCovered = 0, sliceCovered = 0;
    StateSlice regionShape; // the blocks of the region being covered
    for (const json &item : pieces) {
      Piece piece;
      piece.shard = field<std::string>(item, "shard", at);
      check(std::find(checkpoint.shards_.begin(), checkpoint.shards_.end(),
                      piece.shard) != checkpoint.shards_.end(),
            at + ": shard '" + piece.shard +
                "' is not one of the checkpoint's");
      piece.shape = field<std::vector<int64_t>>(item, "shape", at);
      StateSlice &held = piece.held;
      held.begin = whole ? 0 : field<int64_t>(item, "offset", at);
      held.count = whole ? numel
                         : (piece.shape.size() == 1 ? piece.shape[0] : -1);
      check(whole || held.count > 0,
            at + ": a piece's shape is not [elements]");
      if (!whole && item.contains("blocks")) {
        // A tensor-parallel slice: `blocks` ranges, the slices' ranges
        // interleaved, slice i's at i * count of each block of `stride`.
        held.blocks = field<int64_t>(item, "blocks", at);
        held.stride = field<int64_t>(item, "stride", at);
        const int64_t elements = held.count;
        if (item.contains("first")) {
          // ZeRO's shard of a slice: `elements` of it from its `first`.
          held.count = field<int64_t>(item, "block_elements", at);
          held.first = field<int64_t>(item, "first", at);
          held.size = elements;
        } else {
          check(held.blocks >= 1 && held.count % held.blocks == 0,
                at + ": a piece of " + std::to_string(held.count) +
                    " elements is not " + std::to_string(held.blocks) +
                    " equal blocks");
          held.count /= held.blocks;
        }
        // The regions in order; in each, its slices in order (slice i at
        // i * count of each block), each covered by its pieces in order.
        const int64_t slice = held.blocks * held.count;
        const int64_t region = held.blocks * held.stride;
        check(held.blocks >= 1 && held.count > 0 && held.count <= held.stride &&
                  region <= numel - covered && held.first >= 0 &&
                  held.first + held.total() <= slice,
              at + ": a piece of " + std::to_string(held.blocks) +
                  " blocks does not tile the tensor's " +
                  std::to_string(numel) + " elements");
        bool inRegion = regionCovered > 0 || sliceCovered > 0;
        check(held.begin == covered + regionCovered / held.blocks &&
                  held.begin + held.count <= covered + held.stride &&
                  held.first == sliceCovered &&
                  (!inRegion || (held.blocks == regionShape.blocks &&
                                 held.stride == regionShape.stride &&
                                 held.count == regionShape.count)),
              at + ": the pieces do not cover the tensor's " +
                  std::to_string(numel) + " elements once, in order (a piece "
                  "at element " + std::to_string(held.begin) +
                  (held.size >= 0
                       ? " of the slice's " + std::to_string(held.first)
                       : std::string()) +
                  ")");
        regionShape = held;
        sliceCovered += held.total();
        if (sliceCovered == slice) {
          regionCovered += slice;
          sliceCovered = 0;
        }
        if (regionCovered == region) {
          covered += region;
          regionCovered = 0;
        }
      } else {
        check(held.begin == covered && regionCovered == 0 &&
                  sliceCovered == 0 && held.count <= numel - covered,
              at + ": the pieces do not cover the tensor's " +
                  std::to_string(numel) + " elements once, in order (a piece "
                  "at element " + std::to_string(held.begin) + ")");
        covered += held.count;
      }
      piece.bytes = field<size_t>(item, "bytes", at);
      // (A whole tensor's size is checked against its shard's header.)
      check(whole || piece.bytes == size_t(held.total()) *
                                        dtypeSize(entry.dtype),
            at + ": a piece of " + std::to_string(held.total()) +
                " elements is not " + std::to_string(piece.bytes) + " bytes");
      std::string checksum = field<std::string>(item, "checksum", at);
      char *end = nullptr;
      piece.checksum = std::strtoull(checksum.c_str(), &end, 16);
      check(checksum.size() == 16 && end == checksum.c_str() + 16,
            at + ": checksum '" + checksum + "' is not 16 hex digits");
      entry.pieces.push_back(std::move(piece));
    }
    check(covered == numel || (numel == 0 && whole),
          at + ": the pieces hold " + std::to_string(covered) + " of its " +
              std::to_string(numel) + " elements");
    checkpoint.tensors_.emplace(name, std::move(entry));
  }

  // No shard the metadata does not list: one of another save, or of a
  // metadata file that lost it.
  std::error_code listError;
  for (fs::directory_iterator it(stepDir, listError), end;
       !listError && it != end; it.increment(listError)) {
    std::string file = it->path().filename().string();
    bool shardName = file.rfind("shard-", 0) == 0 &&
                     file.size() > 12 &&
                     file.compare(file.size() - 12, 12, ".safetensors") == 0;
    check(!shardName || std::find(checkpoint.shards_.begin(),
                                  checkpoint.shards_.end(),
                                  file) != checkpoint.shards_.end(),
          where + ": shard " + file + " is not listed in metadata.json");
  }
  // Every shard: present, of the size the saver saw, its header holding
  // each tensor as the metadata says. Opened one at a time (see shards_).
  for (size_t r = 0; r < shardList.size(); ++r) {
    const std::string &file = checkpoint.shards_[r];
    const std::string path = joinPath(stepDir, file);
    std::error_code error;
    // A pipeline's shard holds one stage's states: say which.
    std::string stage;
    if (shardList[r].is_object() && shardList[r].contains("stage"))
      stage = " (pipeline stage " +
              std::to_string(field<int>(shardList[r], "stage", metaPath)) +
              "'s states)";
    check(fs::exists(path, error),
          where + ": shard " + file + stage + " is missing");
    uintmax_t size = fs::file_size(path, error);
    check(!error, path + ": cannot stat: " + error.message());
    uint64_t expected = field<uint64_t>(shardList[r], "bytes", metaPath);
    check(size == expected,
          where + ": shard " + file + " is " + std::to_string(size) +
              " bytes, but metadata.json says " + std::to_string(expected) +
              " (truncated or overwritten)");
    SafeTensorsFile shard = SafeTensorsFile::open(path);
    // Whatever the shard holds, metadata.json places there: a tensor it
    // lost would otherwise go unnoticed by every reader of the metadata.
    for (const std::string &name : shard.names()) {
      auto found = checkpoint.tensors_.find(name);
      bool placed = found != checkpoint.tensors_.end() &&
                    std::any_of(found->second.pieces.begin(),
                                found->second.pieces.end(),
                                [&](const Piece &p) { return p.shard == file; });
      check(placed, where + ": shard " + file + " holds tensor '" + name +
                        "', which metadata.json does not place there "
                        "(the metadata lost it, or the shard is another "
                        "save's)");
    }
    for (const auto &[name, entry] : checkpoint.tensors_) {
      for (const Piece &piece : entry.pieces) {
        if (piece.shard != file)
          continue;
        check(shard.contains(name), where + ": shard " + file +
                                        " does not hold tensor '" + name +
                                        "', which metadata.json places there");
        const TensorInfo &stored = shard.info(name);
        check(stored.dtype == entry.dtype && stored.shape == piece.shape &&
                  stored.bytes == piece.bytes,
              where + ": shard " + file + " holds tensor '" + name + "' as " +
                  describe(stored.dtype, stored.shape) +
                  ", but metadata.json says " +
                  describe(entry.dtype, piece.shape) + " of " +
                  std::to_string(piece.bytes) + " bytes");
      }
    }
  }
  return checkpoint;
}

void Checkpoint::checkJob(int64_t globalBatch, int64_t seq) const {
  check(globalBatch == job_.globalBatch && seq == job_.seq,
        "checkpoint " + directory_ + " was saved by a job of global batch " +
            std::to_string(job_.globalBatch) + " and sequence length " +
            std::to_string(job_.seq) + ", not --batch " +
            std::to_string(globalBatch) + " --seq " + std::to_string(seq) +
            ": the data position it records (batch " +
            std::to_string(job_.step) + ") counts batches of that shape");
}

void Checkpoint::checkModel(const ArtifactInfo &info) const {
  // The model's own tensors: every model's optimizer has a step count.
  const char *first = nullptr;
  int32_t count = 0;
  for (int32_t i = 0; i < info.numStates; ++i) {
    const StateDesc &state = info.states[i];
    if (state.role != StateRole::Parameter && state.role != StateRole::Buffer)
      continue;
    if (tensors_.count(state.tensor.name))
      return;
    first = first ? first : state.tensor.name;
    ++count;
  }
  check(count == 0, "checkpoint " + directory_ +
                        ": holds none of the artifact's parameters and "
                        "buffers (such as '" +
                        (first ? first : "") +
                        "'): it is another model's checkpoint");
}

struct Checkpoint::ReadCache {
  std::optional<SafeTensorsFile> shard;
  std::vector<char> scratch;
};

std::vector<void *> Checkpoint::loadStates(const ArtifactInfo &info,
                                           MemoryPool &pool, int rank,
                                           MemoryPool *hostPool,
                                           MemoryPool *nvmePool) const {
  const std::string where = "checkpoint " + directory_;
  // All buffers first, in state order, as loadStates from a weights file
  // allocates them; then each piece a state needs is read from its shard.
  // A checkpoint of an fp32 run resumes in mixed precision as weights do
  // (stateSource, roundsOnLoad).
  std::vector<void *> buffers;
  buffers.reserve(static_cast<size_t>(info.numStates));
  std::vector<std::string> sources;
  std::vector<bool> zero(size_t(info.numStates), false); // absent: zero
  for (int32_t i = 0; i < info.numStates; ++i) {
    sources.push_back(stateSource(info.states[i], [&](const std::string &n) {
      return tensors_.count(n) != 0;
    }));
    // A teacher's weight comes from its own file (loadTeacherStates).
    if (info.states[i].role == StateRole::Teacher)
      continue;
    TensorDesc whole = wholeTensor(info.states[i]);
    whole.name = sources.back().c_str();
    auto found = tensors_.find(whole.name);
    if (found == tensors_.end() && zeroBetweenSteps(info.states[i])) {
      zero[size_t(i)] = true;
      continue;
    }
    if (found == tensors_.end())
      checkModel(info);
    checkStatePresent(found != tensors_.end(), where, whole);
    checkStateMatches(where, whole, found->second.dtype, found->second.shape);
    // A master weight read from its fp32 parameter has that one's role.
    const std::optional<StateRole> &role = found->second.role;
    StateRole expected = sources.back() == info.states[i].tensor.name
                             ? info.states[i].role
                             : StateRole::Parameter;
    check(!role || *role == expected,
          where + ": tensor '" + sources.back() + "' is recorded as " +
              stateRoleName(*role) + " state, but the artifact has it as " +
              stateRoleName(expected) + " state");
  }
  // A teacher's buffer is loadTeacherStates' to allocate, when it runs.
  for (int32_t i = 0; i < info.numStates; ++i)
    buffers.push_back(info.states[i].role == StateRole::Teacher
                          ? nullptr
                          : statePool(info.states[i], pool, hostPool, nvmePool)
                                .allocate(tensorBytes(info.states[i].tensor)));

  ReadCache cache;
  for (int32_t i = 0; i < info.numStates; ++i) {
    const StateDesc &state = info.states[i];
    const std::string &name = sources[size_t(i)];
    char *buffer = static_cast<char *>(buffers[size_t(i)]);
    if (state.role == StateRole::Teacher)
      continue;
    if (zero[size_t(i)]) {
      std::memset(buffer, 0, tensorBytes(state.tensor));
      continue;
    }
    const Entry &entry = tensors_.at(name);
    // A pipeline stage's ranks hold their states' pieces as a job of W/P
    // ranks would, whatever stages saved them.
    StateSlice slice =
        stateSlice(state, stageLocalRank(info, rank), info.expertParallelSize,
                   tensorParallelSize(info));
    if (isPartitioned(state))
      std::memset(buffer, 0, tensorBytes(state.tensor));
    // Run by run (one but for a tensor-parallel slice).
    const size_t held = elementSize(state.tensor.type);
    slice.forEachRun([&](int64_t begin, int64_t at, int64_t n) {
      char *out = buffer + size_t(at) * held;
      if (!roundsOnLoad(state.tensor.type, entry.dtype)) {
        readElements(name, entry, begin, n, held, out, cache);
        return;
      }
      // An fp32 tensor for a 16-bit state: read wide, then round.
      std::vector<char> wide(size_t(n) * dtypeSize(entry.dtype));
      readElements(name, entry, begin, n, dtypeSize(entry.dtype), wide.data(),
                   cache);
      copyStored(out, state.tensor.type, wide.data(), entry.dtype, size_t(n));
    });
  }
  return buffers;
}

void Checkpoint::readElements(const std::string &name, const Entry &entry,
                              int64_t begin, int64_t count, size_t element,
                              char *dst, ReadCache &cache) const {
  for (const Piece &piece : entry.pieces) {
    const StateSlice &held = piece.held;
    // Whether any of the piece's ranges overlaps [begin, begin + count).
    bool any = false;
    held.forEachRun([&](int64_t at, int64_t, int64_t n) {
      any = any || std::max(at, begin) < std::min(at + n, begin + count);
    });
    if (!any)
      continue;
    std::optional<SafeTensorsFile> &shard = cache.shard;
    if (!shard || shard->path() != joinPath(directory_, piece.shard))
      shard = SafeTensorsFile::open(joinPath(directory_, piece.shard));
    // The piece is read whole, to check its checksum: straight into `dst`
    // when it is exactly the range wanted.
    bool exact = held.blocks == 1 && held.first == 0 &&
                 held.begin == begin && held.total() == count;
    char *data = dst;
    if (!exact) {
      cache.scratch.resize(piece.bytes);
      data = cache.scratch.data();
    }
    shard->read(name, data, piece.bytes);
    uint64_t checksum = fnv1a64(data, piece.bytes);
    check(checksum == piece.checksum,
          "checkpoint " + directory_ + ": tensor '" + name + "' in " +
              piece.shard + " fails its checksum (" +
              detail::kCheckpointChecksumName + " " +
              formatChecksum(checksum) + ", metadata.json says " +
              formatChecksum(piece.checksum) + "): the shard is corrupt");
    checkFinite(data, entry.dtype, size_t(held.total()),
                "checkpoint " + directory_ + ": " + piece.shard, name);
    if (exact)
      continue;
    held.forEachRun([&](int64_t at, int64_t index, int64_t n) {
      int64_t from = std::max(at, begin);
      int64_t to = std::min(at + n, begin + count);
      if (from < to)
        std::memcpy(dst + size_t(from - begin) * element,
                    data + size_t(index + (from - at)) * element,
                    size_t(to - from) * element);
    });
  }
}

int64_t Checkpoint::TensorRecord::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<Checkpoint::TensorRecord> Checkpoint::tensors() const {
  std::vector<TensorRecord> records;
  for (const auto &[name, entry] : tensors_) // std::map: sorted by name
    records.push_back({name, entry.dtype, entry.shape, entry.role,
                       entry.partitionWorldSize, entry.shardElements,
                       entry.pieces.size(), entry.partitionGroup,
                       entry.partitionGroupSize});
  return records;
}

void Checkpoint::readTensor(const std::string &name, void *dst,
                            size_t bytes) const {
  auto found = tensors_.find(name);
  check(found != tensors_.end(),
        "checkpoint " + directory_ + ": no tensor '" + name + "'");
  const Entry &entry = found->second;
  int64_t numel = 1;
  for (int64_t d : entry.shape)
    numel *= d;
  const size_t element = dtypeSize(entry.dtype);
  check(bytes == size_t(numel) * element,
        "checkpoint " + directory_ + ": tensor '" + name + "' is " +
            std::to_string(size_t(numel) * element) + " bytes, not " +
            std::to_string(bytes));
  ReadCache cache;
  readElements(name, entry, 0, numel, element, static_cast<char *>(dst),
               cache);
}

} // namespace dsc::rt
