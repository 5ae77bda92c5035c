//===- DeepSpeedFeatures.cpp - ds_config keys beyond the training step ---===//
//
// The top-level keys other than the batch, optimizer, scheduler and
// precision, and the zero_optimization section. A DeepSpeed feature dsc
// does not have is accepted at DeepSpeed's default value, where it does
// nothing, and refused otherwise; a monitor or profiler works (csv_monitor,
// steps_per_print: dsc-run writes them) or is refused when enabled.
//
//===----------------------------------------------------------------------===//

#include "ConfigReader.h"

#include <tuple>

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::config;

namespace {
/// `enabled` (false by default): accepted off, refused on.
struct SwitchedSection {
  StringRef key;
  StringRef refusal;
};
constexpr SwitchedSection kSwitchedSections[] = {
    {"tensorboard", "dsc-run does not write TensorBoard events; csv_monitor "
                    "(which dsc-run writes) or dsc-run --metrics FILE.csv "
                    "carry the same figures"},
    {"wandb", "dsc-run does not log to Weights & Biases; csv_monitor (which "
              "dsc-run writes) or dsc-run --metrics FILE.csv carry the same "
              "figures"},
    {"comet", "dsc-run does not log to Comet; csv_monitor (which dsc-run "
              "writes) or dsc-run --metrics FILE.csv carry the same figures"},
    {"flops_profiler", "the FLOPs profiler is not supported by dsc; "
                       "dsc-opt --dsc-report=memory,comm describes the step"},
    {"comms_logger", "the communication logger is not supported by dsc; "
                     "dsc-run prints each rank's collectives at the end and "
                     "dsc-opt --dsc-report=comm predicts them"},
    {"autotuning", "autotuning is not supported by dsc"},
    {"amp", "Apex AMP is not supported by dsc; use bf16 or fp16"},
    {"elasticity", "elastic training is not supported by dsc"},
    {"nebula", "Nebula checkpointing is not supported by dsc"},
    {"eigenvalue", "this DeepSpeed feature is not supported by dsc"},
    {"progressive_layer_drop", "this DeepSpeed feature is not supported by dsc"},
    {"quantize_training", "this DeepSpeed feature is not supported by dsc"},
};

/// Top-level booleans of features dsc lacks, accepted at `expected`.
struct SwitchKey {
  StringRef key;
  bool expected;
  StringRef refusal;
};
constexpr SwitchKey kSwitchKeys[] = {
    {"prescale_gradients", false,
     "gradients are averaged after the reduction in dsc (only false)"},
    {"sparse_gradients", false, "sparse gradients are not supported by dsc"},
    {"wall_clock_breakdown", false,
     "dsc-run prints the step's time, not a forward/backward/optimizer "
     "breakdown (only false)"},
    {"dump_state", false, "dumping the engine's state is not supported by dsc"},
};

// DeepSpeed features dsc recognises and refuses whatever their value.
constexpr StringRef kUnsupportedKeys[] = {
    "sparse_attention", "pipeline", "compression_training"};
} // namespace

LogicalResult ConfigReader::readTopLevelKey(const Object &root, StringRef k) {
  for (const SwitchedSection &s : kSwitchedSections)
    if (s.key == k)
      return readSwitchedSection(root, k, s.refusal);
  for (const SwitchKey &s : kSwitchKeys)
    if (s.key == k)
      return onlyBoolean(root, "", k, s.expected, s.refusal);
  if (k == "steps_per_print")
    return setInteger(root, "", k, "steps-per-print");
  if (k == "csv_monitor") {
    FailureOr<const Object *> csv = section(root, "", k);
    return failed(csv) ? failure() : *csv ? readCsvMonitor(**csv) : success();
  }
  if (k == "checkpoint") {
    FailureOr<const Object *> checkpoint = section(root, "", k);
    return failed(checkpoint) ? failure()
           : *checkpoint      ? readCheckpointSection(**checkpoint)
                              : success();
  }
  if (k == "curriculum_learning" || k == "data_efficiency") {
    FailureOr<const Object *> s = section(root, "", k);
    if (failed(s) || !*s)
      return failure(failed(s));
    return k == "curriculum_learning" ? readCurriculum(**s)
                                      : readDataEfficiency(**s);
  }
  if (k == "activation_checkpointing") {
    FailureOr<const Object *> ac = section(root, "", k);
    return failed(ac) ? failure() : *ac ? readActivationCheckpointing(**ac)
                                        : success();
  }
  if (k == "memory_breakdown") {
    FailureOr<std::optional<bool>> v = boolean(root, "", k);
    if (succeeded(v) && *v)
      noEffect(k, "dsc-run's step lines always carry the memory in use");
    return failure(failed(v));
  }
  if (k == "zero_allow_untested_optimizer" || k == "zero_force_ds_cpu_optimizer") {
    FailureOr<std::optional<bool>> v = boolean(root, "", k);
    if (succeeded(v) && *v)
      noEffect(k, "dsc's optimizers are its own (Adam, AdamW, SGD), each "
                  "built for every ZeRO stage");
    return failure(failed(v));
  }
  if (k == "gradient_predivide_factor") {
    FailureOr<std::optional<double>> v = number(root, "", k);
    if (failed(v) || !*v)
      return failure(failed(v));
    if (**v != 1.0)
      return error(k, "dsc averages gradients after the reduction (only 1.0, "
                      "DeepSpeed's default)");
    noEffect(k, "1.0, DeepSpeed's default");
    return success();
  }
  if (k == "communication_data_type" ||
      k == "seq_parallel_communication_data_type") {
    // null (DeepSpeed's default: the gradients' own type) passes get().
    if (get(root, "", k))
      return error(k, "dsc reduces gradients in their own type (only null, "
                      "DeepSpeed's default)");
    if (root.get(k) && !marks.count(k.str()))
      noEffect(k, "null, DeepSpeed's default");
    return success();
  }
  if (k == "data_types") {
    FailureOr<const Object *> types = section(root, "", k);
    if (failed(types) || !*types)
      return failure(failed(types));
    bool ok = succeeded(onlyKeys(**types, k, {"grad_accum_dtype"}, k));
    if (get(**types, k, "grad_accum_dtype"))
      ok &= succeeded(error(join(k, "grad_accum_dtype"),
                            "dsc accumulates gradients in fp32 (only null, "
                            "DeepSpeed's default)"));
    else if ((*types)->get("grad_accum_dtype"))
      noEffect(join(k, "grad_accum_dtype"), "null, DeepSpeed's default");
    return success(ok);
  }
  if (k == "aio") {
    noEffect(k, "dsc's NVMe engine sets its own I/O: io_uring, 1 MiB "
                "blocks, queue depth 8 (aio's block_size and queue_depth "
                "defaults)");
    return success();
  }
  if (llvm::is_contained(kUnsupportedKeys, k))
    return error(k, "this DeepSpeed feature is not supported by dsc");
  return error(k, "unknown key");
}

// A section with an `enabled` switch: off (DeepSpeed's default), every key
// in it is without effect; on, the section is refused.
LogicalResult ConfigReader::readSwitchedSection(const Object &root,
                                                StringRef key,
                                                const Twine &refusal) {
  FailureOr<const Object *> s = section(root, "", key);
  if (failed(s) || !*s)
    return failure(failed(s));
  FailureOr<std::optional<bool>> on = boolean(**s, key, "enabled");
  if (failed(on))
    return failure();
  if (on->value_or(false))
    return error(join(key, "enabled"), refusal);
  noEffect(key, "not enabled (DeepSpeed's default)");
  return success();
}

// DeepSpeed's csv_monitor: dsc-run writes its files (docs/running.md).
LogicalResult ConfigReader::readCsvMonitor(const Object &csv) {
  StringRef path = "csv_monitor";
  bool ok = succeeded(
      onlyKeys(csv, path, {"enabled", "output_path", "job_name"}, "csv_monitor"));
  FailureOr<std::optional<bool>> on = boolean(csv, path, "enabled");
  if (failed(on))
    return failure();
  auto text = [&](StringRef key, StringRef fallback) -> std::optional<std::string> {
    const Value *value = get(csv, path, key);
    if (!value)
      return fallback.str();
    if (std::optional<StringRef> s = value->getAsString())
      return s->str();
    (void)error(join(path, key), "expected a string");
    return std::nullopt;
  };
  // DeepSpeed's defaults: output_path "" (the working directory), job_name
  // "DeepSpeedJobName"; the files go to output_path/job_name/.
  std::optional<std::string> output = text("output_path", "");
  std::optional<std::string> job = text("job_name", "DeepSpeedJobName");
  if (!output || !job)
    return failure();
  if (!on->value_or(false)) {
    noEffect(path, "not enabled (DeepSpeed's default)");
    return success(ok);
  }
  std::string directory = output->empty() ? *job : *output + "/" + *job;
  if (job->empty() || directory.find_first_of(" \t\n") != std::string::npos)
    return error(join(path, csv.get("job_name") ? "job_name" : "output_path"),
                 "the directory '" + directory +
                     "' must be a non-empty path without white space");
  ok &= succeeded(set(join(path, "enabled"), "csv-monitor", directory));
  for (StringRef key : {"output_path", "job_name"})
    if (csv.get(key))
      mark(join(path, key), KeyDisposition::Used, "csv-monitor=" + directory);
  return success(ok);
}

// DeepSpeed's checkpoint section configures its engine's checkpoint files;
// dsc-run's are its own (Checkpoint.h).
LogicalResult ConfigReader::readCheckpointSection(const Object &checkpoint) {
  StringRef path = "checkpoint";
  bool ok = succeeded(onlyKeys(checkpoint, path,
                               {"tag_validation", "load_universal",
                                "use_node_local_storage", "parallel_write"},
                               "checkpoint"));
  if (const Value *tag = get(checkpoint, path, "tag_validation")) {
    std::optional<StringRef> name = tag->getAsString();
    std::string lower = name ? name->lower() : "";
    if (lower != "ignore" && lower != "warn" && lower != "fail")
      ok &= succeeded(error(join(path, "tag_validation"),
                            "expected \"Ignore\", \"Warn\" or \"Fail\""));
    else
      noEffect(join(path, "tag_validation"),
               "dsc-run names checkpoints by step, the same on every rank "
               "(checked when they are saved)");
  }
  ok &= succeeded(onlyBoolean(checkpoint, path, "load_universal", false,
                              "universal checkpoints are not supported by dsc; "
                              "dsc-ckpt reshards dsc checkpoints"));
  ok &= succeeded(onlyBoolean(checkpoint, path, "use_node_local_storage", false,
                              "dsc-run writes checkpoints to a directory "
                              "every rank shares (only false)"));
  if (const Value *parallel = get(checkpoint, path, "parallel_write")) {
    const Object *o = parallel->getAsObject();
    if (!o)
      return error(join(path, "parallel_write"), "expected an object");
    ok &= succeeded(onlyKeys(*o, join(path, "parallel_write"),
                             {"pipeline_stage"}, "checkpoint.parallel_write"));
    ok &= succeeded(onlyBoolean(*o, join(path, "parallel_write"),
                                "pipeline_stage", false,
                                "dsc has no pipeline stages (only false)"));
  }
  return success(ok);
}

// DeepSpeed's activation checkpointing API (deepspeed.checkpointing) does
// nothing unless the model calls it; its settings at their defaults are
// harmless, others ask for what dsc does with --checkpoint-activations.
LogicalResult ConfigReader::readActivationCheckpointing(const Object &section) {
  StringRef path = "activation_checkpointing";
  bool ok = succeeded(onlyKeys(
      section, path,
      {"partition_activations", "contiguous_memory_optimization",
       "cpu_checkpointing", "number_checkpoints",
       "synchronize_checkpoint_boundary", "profile"},
      "activation_checkpointing"));
  const char *refusal = "DeepSpeed's checkpointing API settings do not apply: "
                        "dsc recomputes blocks with --checkpoint-activations";
  for (StringRef key : {"partition_activations", "contiguous_memory_optimization",
                        "cpu_checkpointing", "synchronize_checkpoint_boundary",
                        "profile"})
    ok &= succeeded(onlyBoolean(section, path, key, false, refusal));
  if (get(section, path, "number_checkpoints"))
    ok &= succeeded(error(join(path, "number_checkpoints"), refusal));
  else if (section.get("number_checkpoints"))
    noEffect(join(path, "number_checkpoints"), "null, DeepSpeed's default");
  return success(ok);
}

// dsc's own section: what DeepSpeed configures in model code (its MoE

LogicalResult ConfigReader::readNvmePath(const Object &offload, StringRef at) {
  const Value *dir = get(offload, at, "nvme_path");
  if (!dir)
    return success();
  std::optional<StringRef> text = dir->getAsString();
  if (!text || text->empty())
    return error(join(at, "nvme_path"), "expected a directory name");
  return set(join(at, "nvme_path"), "nvme-path", text->str());
}

LogicalResult ConfigReader::readZeroOffload(const Object &zero, StringRef key,
                                            int64_t stage) {
  StringRef path = "zero_optimization";
  const Value *value = get(zero, path, key);
  if (!value)
    return success();
  const Object *o = value->getAsObject();
  if (!o)
    return error(join(path, key), "expected an object");
  std::string at = join(path, key);
  const Value *device = get(*o, at, "device");
  std::optional<StringRef> name = device ? device->getAsString() : std::nullopt;
  if (!device || (name && *name == "none")) {
    noEffect(at, "device \"none\": no offload");
    return success();
  }
  if (key == "offload_param") {
    // DeepSpeed's own rule first: parameters are only partitioned, and so
    // only offloadable, at stage 3.
    if (stage != 3)
      return error(at, "parameter offload needs ZeRO stage 3, got stage " +
                           Twine(stage));
    bool ok = succeeded(onlyKeys(*o, at,
                                 {"device", "nvme_path", "buffer_count",
                                  "buffer_size", "max_in_cpu", "pin_memory"},
                                 at));
    if (!name || (*name != "cpu" && *name != "nvme"))
      return error(join(at, "device"), "expected \"none\", \"cpu\" or \"nvme\"");
    bool nvme = *name == "nvme";
    ok &= succeeded(set(join(at, "device"), "offload-param", name->str()));
    ok &= succeeded(onlyBoolean(*o, at, "pin_memory", true,
                                "dsc's host tier is pinned memory (only true, "
                                "DeepSpeed's default)"));
    if (nvme) {
      ok &= succeeded(
          setInteger(*o, at, "buffer_count", "offload-param-buffer-count"));
      ok &= succeeded(
          setInteger(*o, at, "buffer_size", "offload-param-buffer-size"));
      ok &= succeeded(readNvmePath(*o, at));
      if (get(*o, at, "max_in_cpu"))
        noEffect(join(at, "max_in_cpu"),
                 "dsc holds in host memory only the buffer_count parameters "
                 "read ahead");
      return success(ok);
    }
    for (StringRef knob : {"buffer_count", "buffer_size", "max_in_cpu",
                           "nvme_path"})
      if (get(*o, at, knob))
        noEffect(join(at, knob), "NVMe parameter swapping, which parameters "
                                 "in host memory do without");
    return success(ok);
  }
  // offload_optimizer, with DeepSpeed's keys and defaults.
  bool ok = succeeded(onlyKeys(*o, at,
                               {"device", "nvme_path", "buffer_count",
                                "pin_memory", "pipeline_read", "pipeline_write",
                                "fast_init", "ratio"},
                               at));
  std::string devicePath = join(at, "device");
  if (!name)
    return error(devicePath, "expected \"none\", \"cpu\" or \"nvme\"");
  if (*name != "cpu" && *name != "nvme")
    return error(devicePath, "expected \"none\", \"cpu\" or \"nvme\", got \"" +
                                 *name + "\"");
  bool nvme = *name == "nvme";
  if (nvme && stage != 3)
    return error(devicePath, "NVMe optimizer offload needs ZeRO stage 3, got "
                             "stage " + Twine(stage));
  if (stage < 1)
    return error(devicePath, "ZeRO-Offload needs ZeRO stage 1, 2 or 3, got "
                             "stage 0");
  ok &= succeeded(set(devicePath, "offload-optimizer", name->str()));
  // What dsc's offload does as DeepSpeed's defaults say; other values ask
  // for what it does not build.
  ok &= succeeded(onlyBoolean(*o, at, "pin_memory", true,
                              "dsc's host tier is pinned memory (only true, "
                              "DeepSpeed's default)"));
  ok &= succeeded(onlyBoolean(*o, at, "fast_init", false,
                              "dsc creates the NVMe files at start (only "
                              "false, DeepSpeed's default)"));
  for (StringRef flag : {"pipeline_read", "pipeline_write"}) {
    if (!nvme) {
      ok &= succeeded(onlyBoolean(*o, at, flag, false,
                                  "CPU offload does no NVMe swapping (only "
                                  "false, DeepSpeed's default)"));
      continue;
    }
    FailureOr<std::optional<bool>> given = boolean(*o, at, flag);
    ok &= succeeded(given);
    if (succeeded(given) && *given)
      noEffect(join(at, flag), "dsc always reads NVMe states ahead of their "
                               "update and writes them behind it, on its "
                               "static schedule");
  }
  if (nvme) {
    ok &= succeeded(setInteger(*o, at, "buffer_count", "offload-buffer-count"));
    ok &= succeeded(readNvmePath(*o, at));
  } else {
    FailureOr<std::optional<int64_t>> buffers = integer(*o, at, "buffer_count");
    ok &= succeeded(buffers);
    if (succeeded(buffers) && *buffers)
      noEffect(join(at, "buffer_count"), "NVMe swap buffers, which CPU "
                                         "offload has none of");
    if (get(*o, at, "nvme_path"))
      noEffect(join(at, "nvme_path"), "only NVMe offload reads it");
  }
  FailureOr<std::optional<double>> ratio = number(*o, at, "ratio");
  ok &= succeeded(ratio);
  if (succeeded(ratio) && *ratio) {
    if (**ratio != 1.0)
      ok &= succeeded(error(join(at, "ratio"),
                            "partial optimizer offload (ratio < 1, ZeRO stage 3) "
                            "is not built yet by dsc (only 1.0, DeepSpeed's "
                            "default)"));
    else
      noEffect(join(at, "ratio"), "1.0, DeepSpeed's default: all of it");
  }
  return success(ok);
}

LogicalResult ConfigReader::readZero(const Object &zero) {
  StringRef path = "zero_optimization";
  // Knobs of DeepSpeed's implementation that dsc's compiler decides by
  // itself (layouts, bucket orders, what a save gathers).
  static constexpr StringRef kLayoutKeys[] = {
      "contiguous_gradients", "reduce_scatter", "allgather_partitions",
      "load_from_fp32_weights", "elastic_checkpoint",
      "stage3_max_reuse_distance", "round_robin_gradients",
      "ignore_unused_parameters", "memory_efficient_linear",
      "use_multi_rank_bucket_allreduce", "log_trace_cache_warnings",
      "stage3_gather_16bit_weights_on_model_save",
      "stage3_gather_fp16_weights_on_model_save"};
  SmallVector<StringRef> known(std::begin(kLayoutKeys), std::end(kLayoutKeys));
  known.append({"stage", "reduce_bucket_size", "allgather_bucket_size",
                "overlap_comm", "offload_param", "offload_optimizer",
                "stage3_prefetch_bucket_size",
                "stage3_param_persistence_threshold",
                "stage3_max_live_parameters", "cpu_offload", "sub_group_size",
                "zero_hpz_partition_size", "zero_quantized_weights",
                "zero_quantized_nontrainable_weights",
                "zero_quantized_gradients", "mics_shard_size",
                "mics_hierarchical_params_gather"});
  bool ok = succeeded(onlyKeys(zero, path, known, "zero_optimization"));
  optionOf(join(path, "stage"), "zero-stage");
  FailureOr<std::optional<int64_t>> stage = integer(zero, path, "stage");
  if (failed(stage))
    return failure();
  int64_t s = stage->value_or(0);
  if (s < 0 || s > 3)
    return error(join(path, "stage"), "ZeRO stage must be 0, 1, 2 or 3, got " + Twine(s));
  settings["zero-stage"] = std::to_string(s);
  keys["zero-stage"] = join(path, "stage");
  if (*stage)
    mark(join(path, "stage"), KeyDisposition::Used, "zero-stage=" + Twine(s));
  for (StringRef offload : {"offload_param", "offload_optimizer"})
    ok &= succeeded(readZeroOffload(zero, offload, s));
  ok &= succeeded(onlyBoolean(zero, path, "cpu_offload", false,
                              "cpu_offload is DeepSpeed's old spelling (only "
                              "false); use offload_optimizer {\"device\": "
                              "\"cpu\"}"));
  // The host update's sub-groups (ZeRO-Offload); without offload the
  // update is one multi-tensor kernel whatever its size.
  if (settings.count("offload-optimizer"))
    ok &= succeeded(setInteger(zero, path, "sub_group_size", "zero-sub-group-size"));
  else if (zero.get("sub_group_size"))
    noEffect(join(path, "sub_group_size"),
             "only ZeRO-Offload's host update is cut into sub-groups");
  for (auto [key, option] :
       {std::pair<StringRef, StringRef>{"stage3_param_persistence_threshold",
                                        "zero-persistence-threshold"},
        {"stage3_prefetch_bucket_size", "zero-prefetch-bucket-size"},
        {"stage3_max_live_parameters", "zero-max-live-parameters"},
        {"reduce_bucket_size", "zero-reduce-bucket-size"},
        {"allgather_bucket_size", "zero-allgather-bucket-size"}})
    ok &= succeeded(setInteger(zero, path, key, option));
  optionOf(join(path, "overlap_comm"), "zero-overlap-comm");
  FailureOr<std::optional<bool>> overlap = boolean(zero, path, "overlap_comm");
  if (succeeded(overlap) && *overlap)
    ok &= succeeded(set(join(path, "overlap_comm"), "zero-overlap-comm",
                        **overlap ? "true" : "false"));
  ok &= succeeded(overlap);

  // ZeRO++ and MiCS: accepted at their defaults, which turn them off.
  const char *zeroPlusPlus = " is not supported by dsc (ZeRO++); only its "
                             "default, which turns it off";
  for (StringRef key : {"zero_quantized_weights", "zero_quantized_gradients",
                        "zero_quantized_nontrainable_weights"})
    ok &= succeeded(onlyBoolean(
        zero, path, key, false,
        (key == "zero_quantized_gradients" ? "quantized gradients"
                                           : "quantized weights") +
            Twine(zeroPlusPlus) + " (false)"));
  for (auto [key, off, what] :
       {std::tuple<StringRef, int64_t, StringRef>{
            "zero_hpz_partition_size", 1,
            "hierarchical partitioning (hpZ) is not supported by dsc (ZeRO++); "
            "only its default, 1, which turns it off"},
        {"mics_shard_size", -1,
         "MiCS is not supported by dsc; only its default, -1, which turns it "
         "off"}}) {
    FailureOr<std::optional<int64_t>> v = integer(zero, path, key);
    ok &= succeeded(v);
    if (failed(v) || !*v)
      continue;
    if (**v != off)
      ok &= succeeded(error(join(path, key), what));
    else
      noEffect(join(path, key), Twine(off) + ", DeepSpeed's default (off)");
  }
  ok &= succeeded(onlyBoolean(zero, path, "mics_hierarchical_params_gather",
                              false,
                              "MiCS is not supported by dsc (only false)"));
  for (StringRef key : kLayoutKeys)
    if (zero.get(key))
      noEffect(join(path, key),
               key.starts_with("stage3_gather")
                   ? "dsc-ckpt export writes whole weights from any checkpoint"
                   : "dsc's compiler fixes the layout and the collectives");
  return success(ok);
}
