//===- RunPlan.cpp - the artifact against the job, and its state ----------===//

#include "dsc/runtime/ArtifactLibrary.h"
#include "dsc/runtime/MemoryPool.h"
#include "dsc/runtime/Run.h"
#include "dsc/runtime/SafeTensors.h"

#include <algorithm>
#include <cstring>


namespace dsc::rt {

namespace {

std::string formatShape(const std::vector<int64_t> &shape) {
  return dsc::rt::formatShape(static_cast<int32_t>(shape.size()),
                              shape.data());
}

} // namespace

DType storageDType(ElementType type) {
  switch (type) {
  case ElementType::F64: return DType::F64;
  case ElementType::F32: return DType::F32;
  case ElementType::F16: return DType::F16;
  case ElementType::BF16: return DType::BF16;
  case ElementType::I64: return DType::I64;
  case ElementType::I32: return DType::I32;
  case ElementType::I1: return DType::BOOL;
  }
  throw Error("unknown element type " + std::to_string(int(type)));
}

void checkStatePresent(bool present, const std::string &where,
                       const TensorDesc &state) {
  check(present, where + ": no tensor '" + state.name +
                     "'; the artifact needs it as " + describeType(state));
}

void checkStateMatches(const std::string &where, const TensorDesc &state,
                       DType dtype, const std::vector<int64_t> &shape) {
  std::vector<int64_t> expected(state.shape, state.shape + state.rank);
  DType expectedDType = storageDType(state.type);
  check(shape == expected &&
            (dtype == expectedDType || roundsOnLoad(state.type, dtype)),
        where + ": tensor '" + state.name + "' is " + dtypeName(dtype) + " " +
            formatShape(shape) + ", but the artifact expects " +
            dtypeName(expectedDType) + " " + formatShape(expected));
}

void checkArtifactTarget(const std::string &target, const std::string &where,
                         bool cudaSupported) {
  if (target == "cpu" || (target == "cuda" && cudaSupported))
    return;
  check(target != "cuda",
        where + ": artifact is for target 'cuda', but this dsc-run was built "
                "without CUDA support (configure the runtime with the CUDA "
                "toolkit and DSC_ENABLE_CUDA on; docs/cuda.md)");
  throw Error(where + ": artifact is for target '" + target +
              "', which dsc-run does not know (it runs 'cpu' and 'cuda' "
              "artifacts)");
}

DataFormat dataFormatOf(const std::string &path) {
  const std::string suffix = ".safetensors";
  bool samples = path.size() >= suffix.size() &&
                 path.compare(path.size() - suffix.size(), suffix.size(),
                              suffix) == 0;
  return samples ? DataFormat::Samples : DataFormat::Tokens;
}

namespace {

/// The token format's inputs: "tokens" and/or "targets", i64 [micro batch,
/// seq] alike. Returns the input whose shape the job takes.
const TensorDesc &planTokenFeeds(const ArtifactInfo &info,
                                 const std::string &where, FeedPlan &plan) {
  for (int32_t i = 0; i < info.numInputs; ++i) {
    const TensorDesc &input = info.inputs[i];
    std::string name = input.name;
    if (name == "tokens")
      plan.tokensInput = i;
    else if (name == "targets")
      plan.targetsInput = i;
    else
      throw Error(where + ": artifact input '" + name + "' (" +
                  describeType(input) +
                  ") is not one a token file can feed; a token file feeds "
                  "inputs named 'tokens' and 'targets' (the next tokens): "
                  "give the data as a .safetensors file of samples named "
                  "after the inputs (docs/running.md)");
    check(input.type == ElementType::I64 && input.rank == 2,
          where + ": artifact input '" + name + "' is " + describeType(input) +
              ", expected i64 [micro batch, seq]");
  }
  check(plan.tokensInput >= 0 || plan.targetsInput >= 0,
        where + ": artifact has no input named 'tokens' or 'targets'");
  const TensorDesc &first =
      info.inputs[plan.tokensInput >= 0 ? plan.tokensInput : plan.targetsInput];
  if (plan.tokensInput >= 0 && plan.targetsInput >= 0) {
    const TensorDesc &targets = info.inputs[plan.targetsInput];
    check(targets.shape[0] == first.shape[0] &&
              targets.shape[1] == first.shape[1],
          where + ": artifact inputs 'tokens' " + describeType(first) +
              " and 'targets' " + describeType(targets) + " differ in shape");
  }
  // Token ids feed both inputs (targets are the next tokens), so every id
  // must fit the smaller bound.
  for (int32_t input : {plan.tokensInput, plan.targetsInput})
    if (input >= 0 && info.inputs[input].indexLimit > 0)
      plan.tokenLimit = plan.tokenLimit == 0
                            ? info.inputs[input].indexLimit
                            : std::min(plan.tokenLimit,
                                       info.inputs[input].indexLimit);
  plan.seqLen = first.shape[1];
  return first;
}

/// The samples format's inputs: any, all with the same leading micro-batch
/// dimension. Returns the input that holds token ids (the first integer
/// input of two or more dimensions), or the first input when none does.
const TensorDesc &planSampleFeeds(const ArtifactInfo &info,
                                  const std::string &where, FeedPlan &plan) {
  check(info.numInputs > 0, where + ": artifact has no inputs to feed");
  const TensorDesc *ids = nullptr;
  for (int32_t i = 0; i < info.numInputs; ++i) {
    const TensorDesc &input = info.inputs[i];
    check(input.rank >= 1,
          where + ": artifact input '" + std::string(input.name) + "' is " +
              describeType(input) +
              ", which has no micro-batch dimension to cut samples along");
    check(input.shape[0] == info.inputs[0].shape[0],
          where + ": artifact inputs '" + std::string(info.inputs[0].name) +
              "' " + describeType(info.inputs[0]) + " and '" + input.name +
              "' " + describeType(input) +
              " differ in their first (micro-batch) dimension");
    bool integer =
        input.type == ElementType::I64 || input.type == ElementType::I32;
    if (!ids && integer && input.rank >= 2)
      ids = &input;
  }
  plan.seqLen = ids ? ids->shape[1] : 1;
  return ids ? *ids : info.inputs[0];
}

} // namespace

FeedPlan planFeeds(const ArtifactInfo &info, const RunOptions &options,
                   int worldSize) {
  const std::string where = options.artifact;
  checkArtifactTarget(info.target, where, haveRunTarget("cuda"));
  check(info.worldSize == worldSize,
        where + ": artifact was compiled for " +
            std::to_string(info.worldSize) + " rank(s), but the job has " +
            std::to_string(worldSize) + " (mpirun -np " +
            std::to_string(info.worldSize) + ")");

  FeedPlan plan;
  plan.format = dataFormatOf(options.data);
  const TensorDesc &first = plan.format == DataFormat::Tokens
                                ? planTokenFeeds(info, where, plan)
                                : planSampleFeeds(info, where, plan);
  plan.microBatch = first.shape[0];
  check(plan.microBatch > 0 && plan.seqLen > 0,
        where + ": artifact input '" + first.name + "' is empty (" +
            describeType(first) + ")");
  // The ranks of a tensor group, and the stages of a pipeline, read the
  // same micro-batch.
  plan.dataRanks =
      worldSize / tensorParallelSize(info) / pipelineParallelSize(info);
  plan.trainBatch = plan.microBatch * plan.dataRanks * info.gradAccumSteps;
  std::string accumulation =
      info.gradAccumSteps > 1
          ? " times " + std::to_string(info.gradAccumSteps) +
                " micro-batches per step (gradient accumulation)"
          : std::string();
  check(options.batch == 0 || options.batch == plan.trainBatch,
        "--batch " + std::to_string(options.batch) +
            " does not match the artifact: its micro batch " +
            std::to_string(plan.microBatch) + " per rank times " +
            std::to_string(plan.dataRanks) + " data-parallel rank(s)" +
            accumulation + " is " +
            std::to_string(plan.trainBatch) +
            " samples per step (DeepSpeed's train_batch_size); leave "
            "--batch out to take it");
  // Such an artifact computes its loss once per optimizer step, from the
  // micro-batches' forward and backward passes, which --eval cuts off.
  check(!options.eval || info.gradAccumSteps == 1,
        "--eval: " + where + " accumulates gradients over " +
            std::to_string(info.gradAccumSteps) +
            " micro-batches and computes its loss once per optimizer step; "
            "evaluate with an artifact from dsc-compile --eval");
  bool hasIds = plan.format == DataFormat::Tokens ||
                ((first.type == ElementType::I64 ||
                  first.type == ElementType::I32) &&
                 first.rank >= 2);
  check(options.seq == 0 || options.seq == plan.seqLen,
        "--seq " + std::to_string(options.seq) +
            " does not match the artifact's sequence length " +
            std::to_string(plan.seqLen) +
            (hasIds ? " (input '" + std::string(first.name) + "' is " +
                          describeType(first) + ")"
                    : std::string(" (no input holds token ids)")) +
            "; leave --seq out to take it");

  plan.lossOutput = findTensor(info.outputs, info.numOutputs, "loss");
  check(plan.lossOutput >= 0, where + ": artifact has no output named 'loss'");
  const TensorDesc &loss = info.outputs[plan.lossOutput];
  check((loss.type == ElementType::F32 || loss.type == ElementType::F64) &&
            numElements(loss) == 1,
        where + ": artifact output 'loss' is " + describeType(loss) +
            ", expected one f32 or f64 element");
  auto optionalScalar = [&](const char *name) {
    int32_t index = findTensor(info.outputs, info.numOutputs, name);
    if (index < 0)
      return index;
    const TensorDesc &out = info.outputs[index];
    check((out.type == ElementType::F32 || out.type == ElementType::F64) &&
              numElements(out) == 1,
          where + ": artifact output '" + name + "' is " + describeType(out) +
              ", expected one f32 or f64 element");
    return index;
  };
  plan.lrOutput = optionalScalar("lr");
  plan.lossScaleOutput = optionalScalar("loss_scale");
  plan.skippedOutput = optionalScalar("skipped");
  plan.gradNormOutput = optionalScalar("grad_norm");
  plan.moeDroppedOutput = optionalScalar("moe.dropped");
  for (const char *term : kLossTermNames)
    if (int32_t index = optionalScalar(term); index >= 0)
      plan.lossTermOutputs.push_back(index);
  const std::string countsPrefix = "moe.exp_counts";
  for (int32_t i = 0; i < info.numOutputs; ++i) {
    const TensorDesc &out = info.outputs[i];
    if (std::string(out.name).rfind(countsPrefix, 0) != 0)
      continue;
    check(out.type == ElementType::I64 && out.rank == 1,
          where + ": artifact output '" + out.name + "' is " +
              describeType(out) + ", expected a vector of i64 counts");
    plan.expCountsOutputs.push_back(i);
  }
  return plan;
}

bool artifactTrains(const ArtifactInfo &info) {
  for (int32_t i = 0; i < info.numStates; ++i)
    if (info.states[i].role == StateRole::Optimizer)
      return true;
  return false;
}

TensorDesc wholeTensor(const StateDesc &state) {
  TensorDesc whole = state.tensor;
  if (isPartitioned(state)) {
    whole.rank = state.wholeRank;
    whole.shape = state.wholeShape;
  }
  return whole;
}

StateSlice stateSlice(const StateDesc &state, int rank, int expertParallelSize,
                      int tensorParallelSize) {
  int64_t numel = numElements(wholeTensor(state));
  if (!isPartitioned(state))
    return {0, numel};
  int64_t shard = numElements(state.tensor);
  int index = groupIndex(partitionGroup(state), rank, expertParallelSize,
                         tensorParallelSize);
  if (partitionGroup(state) == CommGroup::Tensor) {
    // [B, T, C] of the whole, [:, index, :] held (Artifact.h).
    int64_t blocks = std::max<int64_t>(state.partitionBlocks, 1);
    int64_t chunk = shard / blocks;
    return {index * chunk, chunk, blocks, chunk * tensorParallelSize};
  }
  if (partitionGroup(state) == CommGroup::Data &&
      state.partitionBlocks >= 1) {
    // A shard of the rank's tensor-parallel slice (its blocks in order).
    int64_t blocks = state.partitionBlocks;
    int64_t chunk = numel / tensorParallelSize / blocks;
    int64_t local = blocks * chunk;
    int64_t begin = std::min(local, shard * index);
    int64_t t = groupIndex(CommGroup::Tensor, rank, expertParallelSize,
                           tensorParallelSize);
    return {t * chunk, chunk, blocks, chunk * tensorParallelSize, begin,
            std::min(shard, local - begin)};
  }
  if ((partitionGroup(state) == CommGroup::Expert ||
       partitionGroup(state) == CommGroup::ExpertData) &&
      state.partitionBlocks >= 1) {
    // The rank's experts of its tensor-parallel slice: blocks
    // [e * B / P, (e + 1) * B / P) of [B, T, C], at tensor index t, e the
    // rank's index in its expert group; ZeRO's shard of them over the
    // expert-data group a run of those blocks.
    int64_t blocks = state.partitionBlocks / expertParallelSize;
    int64_t chunk = numel / tensorParallelSize / state.partitionBlocks;
    int64_t stride = chunk * tensorParallelSize;
    int64_t t = groupIndex(CommGroup::Tensor, rank, expertParallelSize,
                           tensorParallelSize);
    int64_t e = groupIndex(CommGroup::Expert, rank, expertParallelSize,
                           tensorParallelSize);
    StateSlice slice{e * blocks * stride + t * chunk, chunk, blocks, stride};
    if (partitionGroup(state) == CommGroup::ExpertData) {
      int64_t local = blocks * chunk;
      slice.first = std::min(local, shard * index);
      slice.size = std::min(shard, local - slice.first);
    }
    return slice;
  }
  if (partitionGroup(state) == CommGroup::ExpertData) {
    // A shard of the rank's experts: block r % P of the whole.
    int64_t block = numel / expertParallelSize;
    int64_t first =
        block * groupIndex(CommGroup::Expert, rank, expertParallelSize,
                           tensorParallelSize);
    int64_t begin = std::min(block, shard * index);
    return {first + begin, std::min(shard, block - begin)};
  }
  int64_t begin = std::min(numel, shard * index);
  return {begin, std::min(shard, numel - begin)};
}

void readState(const StateDesc &state, const SafeTensorsFile &weights, int rank,
               int expertParallelSize, void *dst, int tensorParallelSize) {
  if (hasInitRule(state) && !weights.contains(state.tensor.name)) {
    initState(state, weights, rank, expertParallelSize, dst, tensorParallelSize);
    return;
  }
  const std::string source = stateSource(
      state, [&](const std::string &name) { return weights.contains(name); });
  DType stored = weights.info(source).dtype;
  size_t bytes = tensorBytes(state.tensor);
  StateSlice slice = stateSlice(state, rank, expertParallelSize,
                                tensorParallelSize);
  if (isPartitioned(state))
    std::memset(dst, 0, bytes);
  size_t element = dtypeSize(stored);
  if (!isPartitioned(state) && !roundsOnLoad(state.tensor.type, stored)) {
    weights.read(source, dst, bytes);
    checkFinite(dst, stored, size_t(slice.count), weights.path(), source);
    return;
  }
  // Run by run (one but for a tensor-parallel slice), rounded where a
  // 16-bit state reads an fp32 tensor.
  const bool rounds = roundsOnLoad(state.tensor.type, stored);
  size_t held = elementSize(state.tensor.type);
  std::vector<char> wide(rounds ? size_t(slice.count) * element : 0);
  slice.forEachRun([&](int64_t begin, int64_t at, int64_t n) {
    char *out = static_cast<char *>(dst) + size_t(at) * held;
    char *into = rounds ? wide.data() : out;
    weights.readRange(source, size_t(begin) * element, into,
                      size_t(n) * element);
    checkFinite(into, stored, size_t(n), weights.path(), source);
    if (rounds)
      copyStored(out, state.tensor.type, wide.data(), stored, size_t(n));
  });
}

void forEachState(const ArtifactInfo &info, const SafeTensorsFile &weights,
                  const std::function<void(int32_t, const std::string &,
                                           size_t, bool)> &read) {
  const std::string &file = weights.path();
  for (int32_t i = 0; i < info.numStates; ++i) {
    const TensorDesc &state = info.states[i].tensor;
    std::string name = stateSource(info.states[i], [&](const std::string &n) {
      return weights.contains(n);
    });
    bool present = weights.contains(name);
    StateRole role = info.states[i].role;
    // A teacher's weight comes from its own file (forEachTeacherState).
    if (role == StateRole::Teacher) {
      read(i, state.name, tensorBytes(state), false);
      continue;
    }
    if (!present &&
        (role == StateRole::Optimizer || role == StateRole::Gradient)) {
      read(i, name, tensorBytes(state), false);
      continue;
    }
    // A state a rewrite added fills itself from its rule (readState).
    if (!present && hasInitRule(info.states[i])) {
      read(i, state.name, tensorBytes(state), true);
      continue;
    }
    // A partitioned state is the whole tensor in the file.
    TensorDesc whole = wholeTensor(info.states[i]);
    whole.name = name.c_str();
    checkStatePresent(present, file, whole);
    const TensorInfo &stored = weights.info(name);
    checkStateMatches(file, whole, stored.dtype, stored.shape);
    read(i, state.name, tensorBytes(state), true);
  }
}

bool hasTeacher(const ArtifactInfo &info) {
  for (int32_t i = 0; i < info.numStates; ++i)
    if (info.states[i].role == StateRole::Teacher)
      return true;
  return false;
}

void forEachTeacherState(
    const ArtifactInfo &info, const SafeTensorsFile &teacher,
    const std::function<void(int32_t, const StateDesc &)> &read) {
  const std::string prefix = "teacher.";
  for (int32_t i = 0; i < info.numStates; ++i) {
    const StateDesc &state = info.states[i];
    if (state.role != StateRole::Teacher)
      continue;
    std::string full = state.tensor.name;
    check(full.compare(0, prefix.size(), prefix) == 0 &&
              full.size() > prefix.size(),
          "artifact: teacher state '" + full + "' is not named 'teacher.X'");
    std::string name = full.substr(prefix.size());
    // The teacher's own name, the role of a parameter (a 16-bit teacher
    // from an f32 file is rounded as it is read: roundsOnLoad).
    StateDesc own = state;
    own.tensor.name = name.c_str();
    own.role = StateRole::Parameter;
    TensorDesc whole = wholeTensor(own);
    checkStatePresent(teacher.contains(name), teacher.path(), whole);
    const TensorInfo &stored = teacher.info(name);
    checkStateMatches(teacher.path(), whole, stored.dtype, stored.shape);
    read(i, own);
  }
}

std::vector<void *> loadStates(const ArtifactInfo &info,
                               const SafeTensorsFile &weights,
                               MemoryPool &pool, int rank,
                               MemoryPool *hostPool, MemoryPool *nvmePool) {
  std::vector<void *> buffers;
  buffers.reserve(static_cast<size_t>(info.numStates));
  forEachState(info, weights,
               [&](int32_t i, const std::string &, size_t bytes, bool present) {
                 // loadTeacherStates allocates a teacher's, when it runs.
                 if (info.states[i].role == StateRole::Teacher) {
                   buffers.push_back(nullptr);
                   return;
                 }
                 void *buffer =
                     statePool(info.states[i], pool, hostPool, nvmePool).allocate(bytes);
                 buffers.push_back(buffer);
                 if (present)
                   readState(info.states[i], weights, stageLocalRank(info, rank),
                             info.expertParallelSize, buffer,
                             tensorParallelSize(info));
                 else
                   std::memset(buffer, 0, bytes);
               });
  return buffers;
}

} // namespace dsc::rt
