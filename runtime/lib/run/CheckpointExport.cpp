//===- CheckpointExport.cpp - consolidated weights from a checkpoint ------===//
//
// The checkpoint reader (CheckpointLoad.cpp) reassembles each tensor from
// the pieces that hold it, checking their checksums; this file decides
// which tensors are the model's and writes them with the safetensors
// writer, which replaces a regular file atomically and writes a device or
// FIFO in place (OutputFile.h).
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/CheckpointExport.h"

#include "dsc/runtime/ArtifactLibrary.h"
#include "dsc/runtime/Error.h"
#include "dsc/runtime/Float16.h"
#include "dsc/runtime/OutputFile.h"

#include <map>
#include <sstream>

namespace dsc::rt {

namespace {

using TensorRecord = Checkpoint::TensorRecord;

bool isModelTensor(const TensorRecord &record) {
  return record.role == StateRole::Parameter ||
         record.role == StateRole::Buffer;
}

bool isFloat(DType dtype) {
  return dtype == DType::F64 || dtype == DType::F32 || dtype == DType::F16 ||
         dtype == DType::BF16;
}

/// What an export writes for a tensor stored as `dtype`: fp32 weights, so
/// 16-bit floats are widened; f64 and integer tensors stay what the model
/// declared them.
DType exportedDType(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16 ? DType::F32 : dtype;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  return formatShape(static_cast<int32_t>(shape.size()), shape.data());
}

/// `count` 16-bit floats of `dtype` at `src`, widened into `dst`.
void widen(DType dtype, const uint16_t *src, float *dst, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    dst[i] = dtype == DType::BF16 ? bf16ToFloat(src[i]) : f16ToFloat(src[i]);
}

} // namespace

std::vector<ExportedTensor> planWeightsExport(const Checkpoint &checkpoint) {
  const std::string where = "checkpoint " + checkpoint.directory();
  std::map<std::string, TensorRecord> byName;
  for (TensorRecord &record : checkpoint.tensors()) {
    check(record.role.has_value(),
          where + ": metadata.json records no role for tensor '" +
              record.name +
              "' (saved by a dsc-run that did not record roles): the "
              "model's tensors cannot be told from the optimizer's");
    byName.emplace(record.name, std::move(record));
  }

  std::vector<ExportedTensor> plan;
  for (const auto &[name, record] : byName) {
    if (!isModelTensor(record))
      continue;
    // A master copy is exported under its tensor's name, never its own.
    const std::string suffix = kMasterSuffix;
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) ==
            0) {
      auto owner = byName.find(name.substr(0, name.size() - suffix.size()));
      if (owner != byName.end() && isModelTensor(owner->second))
        continue;
    }
    const TensorRecord *source = &record;
    auto master = byName.find(name + kMasterSuffix);
    if (master != byName.end()) {
      source = &master->second;
      check(source->shape == record.shape && isFloat(source->dtype),
            where + ": the master copy '" + source->name + "' is " +
                dtypeName(source->dtype) + " " + shapeText(source->shape) +
                ", but '" + name + "' is " + dtypeName(record.dtype) + " " +
                shapeText(record.shape) +
                ": a master copy is a float tensor of its parameter's shape");
    }
    plan.push_back({name, source->name, source->dtype,
                    exportedDType(source->dtype), record.shape});
  }
  bool anyParameter = false;
  for (const ExportedTensor &tensor : plan)
    anyParameter |= byName.at(tensor.name).role == StateRole::Parameter;
  check(anyParameter, where + ": holds no parameter to export");
  return plan;
}

std::vector<ExportedTensor> exportWeights(const Checkpoint &checkpoint,
                                          const std::string &path) {
  // Refuse an output nobody can write before reading a byte of the
  // checkpoint (the writer would refuse it too, but only after).
  (void)resolveOutputFile(path);

  std::vector<ExportedTensor> plan = planWeightsExport(checkpoint);
  std::vector<std::vector<char>> data(plan.size());
  std::vector<TensorView> views;
  views.reserve(plan.size());
  for (size_t i = 0; i < plan.size(); ++i) {
    const ExportedTensor &tensor = plan[i];
    int64_t numel = 1;
    for (int64_t d : tensor.shape)
      numel *= d;
    std::vector<char> stored(size_t(numel) * dtypeSize(tensor.stored));
    checkpoint.readTensor(tensor.source, stored.data(), stored.size());
    if (tensor.written == tensor.stored) {
      data[i] = std::move(stored);
    } else {
      data[i].resize(size_t(numel) * dtypeSize(tensor.written));
      widen(tensor.stored, reinterpret_cast<const uint16_t *>(stored.data()),
            reinterpret_cast<float *>(data[i].data()), numel);
    }
    views.push_back({tensor.name, tensor.written, tensor.shape, data[i].data()});
  }
  // "format": "pt", as the safetensors files of PyTorch models say; the
  // step, so that the file says which save it came from. Nothing that
  // differs between two saves of the same weights (paths, world size), so
  // that their exports are the same bytes.
  writeSafeTensors(path, views,
                   {{"format", "pt"},
                    {"step", std::to_string(checkpoint.job().step)}});
  return plan;
}

std::string describeCheckpoint(const Checkpoint &checkpoint) {
  const CheckpointJob &job = checkpoint.job();
  std::vector<TensorRecord> records = checkpoint.tensors();
  std::ostringstream out;
  out << "checkpoint " << checkpoint.directory() << "\n"
      << "step " << job.step << ", saved by " << job.worldSize << " rank(s)";
  // Each stage's ranks wrote its states; the tensors are the model's.
  if (job.pipelineParallelSize > 1)
    out << " in " << job.pipelineParallelSize << " pipeline stages";
  out << ", target " << job.target;
  if (!job.model.empty())
    out << ", model " << job.model;
  out << ", global batch " << job.globalBatch << ", sequence " << job.seq
      << "\n";

  // Per role: tensors, elements, and how many are partitioned (ZeRO's
  // partitions over the world, expert parallelism's over its group, ZeRO's
  // of experts over their expert-data group).
  struct Count {
    size_t tensors = 0, partitioned = 0, expertPartitioned = 0,
           expertDataPartitioned = 0;
    int64_t elements = 0;
  };
  std::map<std::string, Count> counts;
  bool anyUnknown = false;
  for (const TensorRecord &record : records) {
    std::string role = record.role ? stateRoleName(*record.role) : "unknown";
    anyUnknown |= !record.role;
    Count &count = counts[role];
    ++count.tensors;
    count.elements += record.numel();
    bool split = record.partitionWorldSize > 0;
    count.partitioned += split && record.partitionGroup == CommGroup::World;
    count.expertPartitioned +=
        split && record.partitionGroup == CommGroup::Expert;
    count.expertDataPartitioned +=
        split && record.partitionGroup == CommGroup::ExpertData;
  }
  out << "tensors: " << records.size() << "\n";
  for (const char *role :
       {"parameter", "master", "buffer", "optimizer", "gradient", "unknown"}) {
    auto found = counts.find(role);
    if (found == counts.end())
      continue;
    const Count &count = found->second;
    out << "  " << role << ": " << count.tensors << " tensor(s), "
        << count.elements << " element(s), " << count.partitioned
        << " partitioned";
    if (count.expertPartitioned)
      out << ", " << count.expertPartitioned << " over the expert group";
    if (count.expertDataPartitioned)
      out << ", " << count.expertDataPartitioned
          << " experts' over their expert-data group";
    out << "\n";
  }

  // The stage, from what is partitioned: stage 3 partitions parameters
  // (those under the persistence threshold stay whole), stages 1 and 2 the
  // optimizer state and fp32 masters (stage 2 also the gradient
  // accumulators, which exist only with gradient accumulation), stage 0
  // nothing. Expert parallelism's partitions say nothing of the stage;
  // ZeRO's of the experts, over their expert-data group, do.
  auto partitioned = [&](const char *role) {
    auto found = counts.find(role);
    return found != counts.end() && (found->second.partitioned > 0 ||
                                     found->second.expertDataPartitioned > 0);
  };
  std::string stage;
  if (anyUnknown)
    stage = "unknown (no roles recorded)";
  else if (partitioned("parameter")) {
    // Those at most stage3_param_persistence_threshold elements (or kept
    // by the unshard budget) stay whole on every rank.
    const Count &p = counts["parameter"];
    size_t whole = p.tensors - p.partitioned - p.expertPartitioned -
                   p.expertDataPartitioned;
    stage = "3 (parameters partitioned: " +
            std::to_string(p.partitioned + p.expertDataPartitioned) +
            " partitioned, " + std::to_string(whole) +
            " whole on every rank under the persistence threshold)";
  }
  else if (partitioned("gradient"))
    stage = "2 (gradients and optimizer state partitioned)";
  else if (partitioned("optimizer") || partitioned("master"))
    stage = "1 or 2 (optimizer state partitioned, no gradient state)";
  else
    stage = "0 (nothing partitioned)";
  out << "zero stage: " << stage << "\n";

  for (const TensorRecord &record : records) {
    out << "  " << record.name << "  "
        << (record.role ? stateRoleName(*record.role) : "unknown") << " "
        << dtypeName(record.dtype) << " " << shapeText(record.shape);
    if (record.partitionWorldSize > 0 &&
        record.partitionGroup == CommGroup::Expert)
      out << "  partitioned over the expert group ("
          << record.partitionGroupSize << " of " << record.partitionWorldSize
          << " ranks) by " << record.shardElements << ", " << record.pieces
          << " piece(s)";
    else if (record.partitionWorldSize > 0 &&
             record.partitionGroup == CommGroup::ExpertData)
      // (W / D is the expert group's size times the tensor group's, which
      // the checkpoint does not record: the expert group goes unsized.)
      out << "  partitioned over its expert group, then over the expert_data "
             "group ("
          << record.partitionGroupSize << " of " << record.partitionWorldSize
          << " ranks) by " << record.shardElements << ", " << record.pieces
          << " piece(s)";
    else if (record.partitionWorldSize > 0)
      out << "  partitioned over " << record.partitionWorldSize << " by "
          << record.shardElements << ", " << record.pieces << " piece(s)";
    out << "\n";
  }
  return out.str();
}

} // namespace dsc::rt
