//===- ArtifactLibrary.cpp - dlopen and validate a step artifact ----------===//

#include "dsc/runtime/ArtifactLibrary.h"

#include "dsc/kernels/CpuFeatures.h"
#include "dsc/runtime/CommGroups.h"
#include "dsc/runtime/Error.h"
#include "dsc/runtime/Run.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <tuple>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>

namespace dsc::rt {

namespace {

std::string lastDlError() {
  const char *message = ::dlerror();
  return message ? message : "unknown dlopen error";
}

/// dlerror's "undefined symbol: _ZN3dsc..." with the C++ name spelled out,
/// which is what a reader of generated code can act on.
std::string explainDlError(const std::string &message) {
  static const std::string marker = "undefined symbol: ";
  size_t at = message.find(marker);
  if (at == std::string::npos)
    return message;
  size_t begin = at + marker.size();
  size_t end = message.find_first_of(" \t(", begin);
  std::string mangled = message.substr(begin, end - begin);
  int status = 0;
  char *demangled =
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string result = message;
  if (status == 0 && demangled)
    result += " (" + std::string(demangled) + ")";
  std::free(demangled);
  return result +
         "; an artifact may call only the dsc runtime that dsc-run exports";
}

/// The target named by an artifact that dlopen(RTLD_NOW) refused, read by
/// loading it lazily: its undefined functions stay unbound until called,
/// and only dsc_artifact_info is. "" when that fails too. The library stays
/// loaded (see ~ArtifactLibrary).
std::string lazyTarget(const std::string &loadPath) {
  void *handle = ::dlopen(loadPath.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (!handle)
    return "";
  auto infoFunction = reinterpret_cast<const ArtifactInfo *(*)()>(
      ::dlsym(handle, "dsc_artifact_info"));
  const ArtifactInfo *info = infoFunction ? infoFunction() : nullptr;
  return info && info->abiVersion == kArtifactAbiVersion && info->target
             ? info->target
             : "";
}

bool knownType(ElementType type) {
  auto value = static_cast<int32_t>(type);
  return value >= static_cast<int32_t>(ElementType::F64) &&
         value <= static_cast<int32_t>(ElementType::I1);
}

void validateTensor(const TensorDesc &tensor, const std::string &where,
                    const std::string &what) {
  check(tensor.name && *tensor.name, where + ": " + what + " has no name");
  std::string named = where + ": " + what + " '" + tensor.name + "'";
  check(knownType(tensor.type),
        named + " has unknown element type " +
            std::to_string(static_cast<int32_t>(tensor.type)));
  check(tensor.rank >= 0 && tensor.rank <= kMaxTensorRank,
        named + " has rank " + std::to_string(tensor.rank) +
            " (0 to " + std::to_string(kMaxTensorRank) + " supported)");
  check(tensor.rank == 0 || tensor.shape,
        named + " has rank " + std::to_string(tensor.rank) + " but no shape");
  int64_t limit = std::numeric_limits<int64_t>::max() /
                  static_cast<int64_t>(elementSize(tensor.type));
  int64_t elements = 1;
  for (int32_t d = 0; d < tensor.rank; ++d) {
    int64_t dim = tensor.shape[d];
    check(dim >= 0, named + " has negative dimension " + std::to_string(dim));
    check(dim == 0 || elements <= limit / dim,
          named + " of shape " + formatShape(tensor.rank, tensor.shape) +
              " has more bytes than int64 can count");
    elements *= dim;
  }
  check(tensor.indexLimit >= 0,
        named + " has negative index limit " +
            std::to_string(tensor.indexLimit));
  check(tensor.indexLimit == 0 || tensor.type == ElementType::I64 ||
            tensor.type == ElementType::I32,
        named + " of " + elementTypeName(tensor.type) +
            " has an index limit; only integer tensors index");
}

/// A partitioned state's group and shard: [ceil(numel / G)] elements over a
/// group of G ranks (Artifact.h), so that its shards hold the whole tensor
/// once; an unpartitioned state names no group.
void validatePartition(const ArtifactInfo &info, const StateDesc &state,
                       const std::string &where) {
  const std::string named =
      where + ": state '" + std::string(state.tensor.name) + "'";
  int32_t group = state.partitionGroup;
  if (!state.wholeShape) {
    check(group == static_cast<int32_t>(CommGroup::World),
          named + " is not partitioned but names partition group " +
              std::to_string(group));
    return;
  }
  // The stages of a pipeline hold different states: none is a shard of
  // another's.
  check(isCommGroup(group) && group != int32_t(CommGroup::Pipeline),
        named + " is partitioned over group " + std::to_string(group) +
            "; only the world (0), the expert group (1), the expert-data "
            "group (2), the tensor group (3) and the data group (4) "
            "partition states");
  TensorDesc whole = state.tensor;
  whole.rank = state.wholeRank;
  whole.shape = state.wholeShape;
  validateTensor(whole, where, "whole tensor of state");
  if (group == static_cast<int32_t>(CommGroup::Tensor)) {
    // B blocks of T slices of C elements (Artifact.h), nothing padded.
    int64_t ranks = info.tensorParallelSize;
    int64_t blocks = std::max<int64_t>(state.partitionBlocks, 1);
    int64_t numel = numElements(whole);
    check(numElements(state.tensor) * ranks == numel &&
              numel % (blocks * ranks) == 0,
          named + " is a slice of " +
              std::to_string(numElements(state.tensor)) +
              " elements of its whole tensor " +
              formatShape(whole.rank, whole.shape) + " in " +
              std::to_string(blocks) + " block(s) over a tensor group of " +
              std::to_string(ranks) + " rank(s), which does not tile it");
    return;
  }
  GroupLayout layout(info.worldSize, info.expertParallelSize,
                     info.tensorParallelSize, pipelineParallelSize(info));
  int64_t members = layout.size(static_cast<CommGroup>(group));
  int64_t numel = numElements(whole);
  if (group == static_cast<int32_t>(CommGroup::Expert) &&
      state.partitionBlocks >= 1) {
    // The rank's experts of its tensor-parallel slice (Artifact.h): whole
    // blocks, no padding.
    int64_t ranks = info.tensorParallelSize;
    int64_t blocks = state.partitionBlocks;
    check(numel % (blocks * ranks) == 0 && blocks % members == 0 &&
              numElements(state.tensor) * ranks * members == numel,
          named + " holds " + std::to_string(numElements(state.tensor)) +
              " elements of its whole tensor " +
              formatShape(whole.rank, whole.shape) + " in " +
              std::to_string(blocks) + " block(s) over a tensor group of " +
              std::to_string(ranks) + " and an expert group of " +
              std::to_string(members) + " rank(s), which does not tile it");
    return;
  }
  if (group == static_cast<int32_t>(CommGroup::Data) &&
      state.partitionBlocks >= 1) {
    // A tensor-parallel slice, partitioned (Artifact.h).
    int64_t ranks = info.tensorParallelSize;
    check(numel % (state.partitionBlocks * ranks) == 0,
          named + " partitions a slice of " + formatShape(whole.rank, whole.shape) +
              " in " + std::to_string(state.partitionBlocks) +
              " block(s) over a tensor group of " + std::to_string(ranks) +
              " rank(s), which does not tile it");
    numel /= ranks;
  }
  if (group == static_cast<int32_t>(CommGroup::ExpertData)) {
    // The rank's experts, a block of the leading dimension, partitioned.
    int64_t experts = info.expertParallelSize;
    check(whole.rank >= 1 && whole.shape[0] % experts == 0,
          named + " partitions the experts of " +
              formatShape(whole.rank, whole.shape) + " over expert groups of " +
              std::to_string(experts) +
              " rank(s), which must divide its leading dimension");
    numel /= experts;
    if (state.partitionBlocks >= 1) {
      // Under tensor parallelism: the rank's experts of its slice
      // (DeepSpeed-TED), whole blocks per expert.
      int64_t ranks = info.tensorParallelSize;
      check(state.partitionBlocks % whole.shape[0] == 0 &&
                numel % (state.partitionBlocks / experts * ranks) == 0,
            named + " partitions the experts' slices of " +
                formatShape(whole.rank, whole.shape) + " in " +
                std::to_string(state.partitionBlocks) +
                " block(s) over a tensor group of " + std::to_string(ranks) +
                " rank(s), which does not tile it");
      numel /= ranks;
    }
  }
  int64_t shard = (numel + members - 1) / members;
  check(numElements(state.tensor) == shard,
        named + " is a shard of " + std::to_string(numElements(state.tensor)) +
            " elements, but its whole tensor " +
            formatShape(whole.rank, whole.shape) + " over the " +
            name(static_cast<CommGroup>(group)) + " group of " +
            std::to_string(members) + " rank(s) needs shards of " +
            std::to_string(shard));
}

template <typename Desc, typename GetTensor>
void validateList(const Desc *list, int32_t count, const std::string &where,
                  const char *what, GetTensor tensorOf) {
  check(count >= 0, where + ": negative number of " + what + "s (" +
                        std::to_string(count) + ")");
  check(count == 0 || list, where + ": " + std::to_string(count) + " " +
                                what + "s but no " + what + " array");
  std::set<std::string> names;
  for (int32_t i = 0; i < count; ++i) {
    const TensorDesc &tensor = tensorOf(list[i]);
    validateTensor(tensor, where, std::string(what) + " " + std::to_string(i));
    check(names.insert(tensor.name).second,
          where + ": two " + what + "s named '" + tensor.name + "'");
  }
}

/// Refuses a file that dlopen would map past its end: the loader maps the
/// segments the program headers name, and touching a page beyond the end of
/// the file raises SIGBUS (a copy cut short, a build that died mid-write).
/// Checks the ELF header, then that the program and section header tables
/// and every segment's and section's bytes lie inside the file.
void checkElfExtents(const std::string &path, uint64_t fileSize) {
  auto fail = [&](const std::string &why) {
    throw Error(path + ": cannot load artifact: " + why);
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw Error(path + ": cannot open artifact: " + std::strerror(errno));
  auto readAt = [&](void *dst, uint64_t bytes, uint64_t offset) {
    if (offset > fileSize || bytes > fileSize - offset)
      return false;
    auto *out = static_cast<char *>(dst);
    while (bytes > 0) {
      ssize_t got = ::pread(fd, out, bytes, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0)
        return false;
      out += got, offset += uint64_t(got), bytes -= uint64_t(got);
    }
    return true;
  };
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  Elf64_Ehdr header;
  if (!readAt(&header, sizeof header, 0) ||
      std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    fail("not an ELF shared library (" + std::to_string(fileSize) +
         " bytes, no ELF header)");
  if (header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_ident[EI_DATA] != ELFDATA2LSB)
    fail("not a 64-bit little-endian ELF file");
  if (header.e_type != ET_DYN)
    fail("an ELF file, but not a shared library");
  auto inFile = [&](uint64_t offset, uint64_t bytes) {
    return offset <= fileSize && bytes <= fileSize - offset;
  };
  auto truncated = [&](const std::string &what, uint64_t end) {
    fail("truncated: " + what + " ends at byte " + std::to_string(end) +
         ", but the file has " + std::to_string(fileSize) +
         " bytes (an interrupted copy or build?)");
  };
  uint64_t phBytes = uint64_t(header.e_phnum) * header.e_phentsize;
  if (header.e_phentsize != sizeof(Elf64_Phdr) ||
      !inFile(header.e_phoff, phBytes))
    truncated("the program header table", header.e_phoff + phBytes);
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    readAt(&segment, sizeof segment, header.e_phoff + i * sizeof segment);
    if (segment.p_type != PT_NULL &&
        !inFile(segment.p_offset, segment.p_filesz))
      truncated("segment " + std::to_string(i),
                segment.p_offset + segment.p_filesz);
  }
  uint64_t shBytes = uint64_t(header.e_shnum) * header.e_shentsize;
  if (header.e_shnum != 0 && (header.e_shentsize != sizeof(Elf64_Shdr) ||
                              !inFile(header.e_shoff, shBytes)))
    truncated("the section header table", header.e_shoff + shBytes);
  for (unsigned i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr section;
    readAt(&section, sizeof section, header.e_shoff + i * sizeof section);
    if (section.sh_type != SHT_NOBITS && section.sh_type != SHT_NULL &&
        !inFile(section.sh_offset, section.sh_size))
      truncated("section " + std::to_string(i),
                section.sh_offset + section.sh_size);
  }
}

} // namespace

std::string formatShape(int32_t rank, const int64_t *shape) {
  std::string out = "[";
  for (int32_t d = 0; d < rank; ++d)
    out += (d ? ", " : "") + std::to_string(shape[d]);
  return out + "]";
}

std::string describeType(const TensorDesc &tensor) {
  return std::string(elementTypeName(tensor.type)) + " " +
         formatShape(tensor.rank, tensor.shape);
}

int64_t numElements(const TensorDesc &tensor) {
  int64_t elements = 1;
  for (int32_t d = 0; d < tensor.rank; ++d)
    elements *= tensor.shape[d];
  return elements;
}

size_t tensorBytes(const TensorDesc &tensor) {
  return static_cast<size_t>(numElements(tensor)) * elementSize(tensor.type);
}

int32_t findTensor(const TensorDesc *tensors, int32_t count,
                   const std::string &name) {
  for (int32_t i = 0; i < count; ++i)
    if (name == tensors[i].name)
      return i;
  return -1;
}

void validateArtifactInfo(const ArtifactInfo &info, const std::string &where) {
  check(info.abiVersion == kArtifactAbiVersion,
        where + ": artifact ABI version " + std::to_string(info.abiVersion) +
            ", but this dsc-run reads version " +
            std::to_string(kArtifactAbiVersion) +
            "; compile the artifact again with this dsc");
  check(info.target && *info.target, where + ": artifact names no target");
  check(info.worldSize >= 1, where + ": artifact world size " +
                                 std::to_string(info.worldSize) +
                                 " is not positive");
  for (auto [size, what, groups] :
       {std::tuple{info.expertParallelSize, "expert", "Expert"},
        std::tuple{info.tensorParallelSize, "tensor", "Tensor"}})
    check(size >= 1 && info.worldSize % size == 0,
          where + ": artifact " + what + "-parallel size " +
              std::to_string(size) + " does not divide its world size " +
              std::to_string(info.worldSize) + " (the " + groups +
              " groups must cut the ranks into equal parts)");
  check(info.pipelineParallelSize >= 0 &&
            info.worldSize % (tensorParallelSize(info) *
                              pipelineParallelSize(info)) == 0 &&
            info.pipelineStage >= 0 &&
            info.pipelineStage < pipelineParallelSize(info),
        where + ": artifact pipeline stage " +
            std::to_string(info.pipelineStage) + " of " +
            std::to_string(info.pipelineParallelSize) +
            " does not fit its world of " + std::to_string(info.worldSize) +
            " ranks with tensor-parallel size " +
            std::to_string(tensorParallelSize(info)));
  check(info.arenaBytes >= 0, where + ": negative arena size " +
                                  std::to_string(info.arenaBytes));
  check(info.hostArenaBytes >= 0, where + ": negative host arena size " +
                                      std::to_string(info.hostArenaBytes));
  for (int32_t i = 0; i < info.numStates && info.states; ++i)
    check(info.states[i].tier == MemoryTier::Device ||
              info.states[i].tier == MemoryTier::Host ||
              info.states[i].tier == MemoryTier::Nvme,
          where + ": state #" + std::to_string(i) + " has memory tier " +
              std::to_string(int32_t(info.states[i].tier)) +
              "; expected 0 (device), 1 (host) or 2 (nvme)");
  check(info.gradAccumSteps >= 1,
        where + ": artifact accumulates gradients over " +
            std::to_string(info.gradAccumSteps) +
            " micro-batches; at least 1 expected");
  validateList(info.states, info.numStates, where, "state",
               [](const StateDesc &s) -> const TensorDesc & { return s.tensor; });
  for (int32_t i = 0; i < info.numStates; ++i) {
    auto role = static_cast<int32_t>(info.states[i].role);
    check(role == static_cast<int32_t>(StateRole::Parameter) ||
              role == static_cast<int32_t>(StateRole::Buffer) ||
              role == static_cast<int32_t>(StateRole::Optimizer) ||
              role == static_cast<int32_t>(StateRole::Gradient) ||
              role == static_cast<int32_t>(StateRole::Master) ||
              role == static_cast<int32_t>(StateRole::Teacher),
          where + ": state '" + info.states[i].tensor.name +
              "' has unknown role " + std::to_string(role));
    validatePartition(info, info.states[i], where);
  }
  auto self = [](const TensorDesc &t) -> const TensorDesc & { return t; };
  validateList(info.inputs, info.numInputs, where, "input", self);
  validateList(info.outputs, info.numOutputs, where, "output", self);
  check(info.numStreams >= 0 && (info.numStreams == 0 || info.streams),
        where + ": bad stream table (" + std::to_string(info.numStreams) +
            " streams)");
  std::set<std::string> streams;
  int32_t collectives = 0;
  for (int32_t i = 0; i < info.numStreams; ++i) {
    const StreamDesc &stream = info.streams[i];
    check(stream.name && *stream.name,
          where + ": stream " + std::to_string(i) + " has no name");
    check(streams.insert(stream.name).second,
          where + ": two streams named '" + stream.name + "'");
    collectives += stream.collectives ? 1 : 0;
  }
  check(collectives <= 1, where + ": " + std::to_string(collectives) +
                              " streams of collectives; at most one may be");
}

std::unique_ptr<ArtifactLibrary> ArtifactLibrary::open(const std::string &path) {
  check(!path.empty(), "no artifact path given");
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw Error(path + ": cannot open artifact: " + std::strerror(errno));
  check(S_ISREG(st.st_mode), path + ": artifact is not a regular file");
  checkElfExtents(path, static_cast<uint64_t>(st.st_size));

  // dlopen searches the library path for names without a slash; a file
  // named on the command line is meant relative to the current directory.
  std::string loadPath =
      path.find('/') == std::string::npos ? "./" + path : path;
  std::unique_ptr<ArtifactLibrary> library(new ArtifactLibrary());
  library->path_ = path;
  ::dlerror();
  library->handle_ = ::dlopen(loadPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library->handle_) {
    std::string message = lastDlError();
    // A CUDA artifact calls dsc::rt::cuda::gemmF32, which only a dsc-run
    // built with CUDA exports: say that rather than "undefined symbol".
    if (message.find("undefined symbol: _ZN3dsc2rt4cuda") !=
        std::string::npos) {
      std::string target = lazyTarget(loadPath);
      if (!target.empty())
        checkArtifactTarget(target, path, haveRunTarget("cuda"));
    }
    throw Error(path + ": cannot load artifact: " + explainDlError(message));
  }

  auto symbol = [&](const char *name) {
    ::dlerror();
    void *address = ::dlsym(library->handle_, name);
    if (!address)
      throw Error(path + ": not a dsc artifact: it does not export " +
                  std::string(name));
    return address;
  };
  check(!::dlsym(library->handle_, "dsc_artifact_needs_avx2") ||
            dsc::kernels::cpuHasAvx2(),
        path + ": the artifact's code uses AVX2, which this CPU lacks; compile "
               "it again with dsc-compile --cpu-isa=x86-64");
  auto infoFunction = reinterpret_cast<const ArtifactInfo *(*)()>(
      symbol("dsc_artifact_info"));
  library->step_ =
      reinterpret_cast<void (*)(StepContext *)>(symbol("dsc_artifact_step"));
  library->info_ = infoFunction();
  // Optional: artifacts compiled without steps_per_print or csv_monitor
  // do not export it.
  if (void *settings = ::dlsym(library->handle_, "dsc_artifact_run_settings"))
    if (const char *text = reinterpret_cast<const char *(*)()>(settings)())
      library->runSettings_ = text;
  check(library->info_ != nullptr,
        path + ": dsc_artifact_info() returned no ArtifactInfo");
  validateArtifactInfo(*library->info_, path);
  // Optional: only artifacts built with data schedules have variants.
  if (void *variants = ::dlsym(library->handle_, "dsc_artifact_variants")) {
    const StepVariants *table =
        reinterpret_cast<const StepVariants *(*)()>(variants)();
    check(table && table->count >= 1 && table->variants,
          path + ": dsc_artifact_variants() returned no variant");
    for (int32_t i = 0; i < table->count; ++i) {
      const StepVariant &v = table->variants[i];
      std::string named = path + ": step variant " + std::to_string(i);
      check(v.step != nullptr, named + " has no step function");
      check(v.seqlen >= 1 && v.kept >= 1 && v.kept <= v.seqlen,
            named + " needs 1 <= kept <= seqlen, got seqlen " +
                std::to_string(v.seqlen) + " kept " + std::to_string(v.kept));
      check(v.teacher == 0 || v.teacher == 1,
            named + " needs teacher 0 or 1, got " + std::to_string(v.teacher));
      check(v.arenaBytes >= 0 && v.arenaBytes <= library->info_->arenaBytes,
            named + "'s arena of " + std::to_string(v.arenaBytes) +
                " bytes exceeds the artifact's " +
                std::to_string(library->info_->arenaBytes));
      library->variants_.push_back(v);
    }
  }
  return library;
}

void ArtifactLibrary::selectPipelineStage(int rank, int worldSize) {
  const int stages = pipelineParallelSize(*info_);
  if (stages == 1)
    return;
  check(variants_.empty(),
        path_ + ": a pipeline-parallel artifact with step variants");
  check(worldSize % stages == 0,
        path_ + ": " + std::to_string(stages) +
            " pipeline stages do not divide the job's " +
            std::to_string(worldSize) + " ranks");
  auto table = reinterpret_cast<const PipelineStagePrograms *(*)()>(
      ::dlsym(handle_, "dsc_artifact_stages"));
  const PipelineStagePrograms *programs = table ? table() : nullptr;
  check(programs && programs->count == stages && programs->stages,
        path_ + ": the artifact has " + std::to_string(stages) +
            " pipeline stages but no table of their programs "
            "(dsc_artifact_stages); build it with dsc-compile");
  // Every stage's tables, not only this rank's: a checkpoint holds them all.
  std::vector<const ArtifactInfo *> infos;
  for (int stage = 0; stage < stages; ++stage) {
    const PipelineStageProgram &program = programs->stages[stage];
    const ArtifactInfo *info = program.info ? program.info() : nullptr;
    std::string where =
        path_ + " (pipeline stage " + std::to_string(stage) + ")";
    check(info && program.step, where + ": no tables or no step");
    validateArtifactInfo(*info, where);
    check(info->pipelineStage == stage &&
              pipelineParallelSize(*info) == stages &&
              info->worldSize == info_->worldSize,
          where + ": the stage's tables say stage " +
              std::to_string(info->pipelineStage) + " of " +
              std::to_string(info->pipelineParallelSize) + " on " +
              std::to_string(info->worldSize) + " ranks");
    infos.push_back(info);
  }
  const int stage = rank / (worldSize / stages);
  info_ = infos[size_t(stage)];
  step_ = programs->stages[stage].step;
  stages_ = std::move(infos);
}

std::vector<const ArtifactInfo *> ArtifactLibrary::stageInfos() const {
  if (stages_.empty())
    return {info_};
  return stages_;
}

// No dlclose: generated code may leave threads behind (an OpenMP pool) that
// would run unmapped code, and the process ends soon after anyway.
ArtifactLibrary::~ArtifactLibrary() = default;

} // namespace dsc::rt
