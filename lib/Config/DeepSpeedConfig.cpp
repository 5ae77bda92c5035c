//===- DeepSpeedConfig.cpp - ds_config.json as --dsc-pipeline options -----===//
//
// Follows DeepSpeed v0.19's reading of its config: integers may be written
// 5e8, the batch triple is completed and checked as DeepSpeed's
// `_set_batch_related_parameters` and `_batch_assertion` do, and an
// optimizer named "Adam" is AdamW unless `adam_w_mode` is false (its
// FusedAdam default). "auto" values are filled as DeepSpeed's Hugging Face
// integration fills them: with the value the run would have without the
// key, except `bf16.enabled`, which follows the device (every dsc target
// has bf16). Keys dsc does not know are errors rather than silently
// ignored, because a misspelt key in a config otherwise trains a different
// model than the user asked for; a feature dsc lacks is accepted at
// DeepSpeed's default value, where it does nothing, and refused otherwise.
//
// Every key ends with a disposition (ConfigReader::mark), so that dsc-opt
// can say what it did with each; and every section is read to its end
// after an error, so that one run reports every mistake of the file.
//
//===----------------------------------------------------------------------===//

#include "dsc/Config/DeepSpeedConfig.h"

#include "dsc/Config/LocatedJson.h"
#include "dsc/Config/OptionRanges.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <set>

using namespace mlir;
using namespace mlir::dsc;
using llvm::json::Object;
using llvm::json::Value;

namespace {

std::string formatNumber(double value) { return formatPipelineNumber(value); }

/// What an option is when nothing sets it (TrainingPipeline.h's defaults,
/// the schedules' and the scaler's), for the account of an "auto" key.
StringRef optionDefault(StringRef option) {
  return llvm::StringSwitch<StringRef>(option)
      .Case("lr", "0.001")
      .Case("betas", "0.9,0.999")
      .Case("eps", "1e-08")
      .Case("weight-decay", "0")
      .Case("momentum", "0")
      .Case("grad-clip", "0 (no clipping)")
      .Case("warmup-min-lr", "0")
      .Case("warmup-max-lr", "the optimizer's lr")
      .Case("warmup-num-steps", "1000")
      .Case("warmup-type", "log")
      .Case("warmup-min-ratio", "0")
      .Case("cos-min-ratio", "0.0001")
      .Case("loss-scale", "0 (dynamic)")
      .Case("initial-scale-power", "16")
      .Case("loss-scale-window", "1000")
      .Case("hysteresis", "2")
      .Case("min-loss-scale", "1")
      .Case("zero-stage", "0")
      .Case("zero-persistence-threshold", "100000")
      .Case("zero-prefetch-bucket-size", "50000000")
      .Case("zero-max-live-parameters", "1000000000")
      .Case("zero-reduce-bucket-size", "500000000")
      .Case("zero-allgather-bucket-size", "500000000")
      .Case("zero-overlap-comm", "true")
      .Case("steps-per-print", "1 (dsc-run's default)")
      .Default("");
}

class ConfigReader {
public:
  ConfigReader(llvm::SourceMgr &sourceMgr, const LocatedJson &json)
      : sourceMgr(sourceMgr), json(json) {}

  /// Records what happened to `path`. A refusal replaces anything else;
  /// a key used for two options names both.
  void mark(StringRef path, KeyDisposition disposition, const Twine &detail) {
    auto [it, inserted] =
        marks.try_emplace(path.str(), Mark{disposition, detail.str()});
    if (inserted || it->second.disposition == KeyDisposition::Refused)
      return;
    if (disposition == KeyDisposition::Refused)
      it->second = {disposition, detail.str()};
    else if (disposition == KeyDisposition::Used &&
             it->second.disposition == KeyDisposition::Used)
      it->second.detail += ", " + detail.str();
  }
  void noEffect(StringRef path, const Twine &why) {
    mark(path, KeyDisposition::NoEffect, why);
  }

  /// Records an error at `path`'s key; printErrors prints them all.
  LogicalResult error(StringRef path, const Twine &message) {
    std::string text = message.str();
    std::string located = path.empty() ? text : ("'" + path + "': " + text).str();
    errors.push_back({json.locate(path), std::move(located),
                      unsigned(errors.size())});
    mark(path, KeyDisposition::Refused, text);
    return failure();
  }

  /// The errors in the order of the file (the reader visits the top-level
  /// keys in llvm::json's hash order), each once.
  void printErrors() {
    llvm::sort(errors, [](const Error &a, const Error &b) {
      return std::make_pair(a.where.getPointer(), a.order) <
             std::make_pair(b.where.getPointer(), b.order);
    });
    for (size_t i = 0; i < errors.size(); ++i)
      if (i == 0 || errors[i].where != errors[i - 1].where ||
          errors[i].message != errors[i - 1].message)
        sourceMgr.PrintMessage(errors[i].where, llvm::SourceMgr::DK_Error,
                               errors[i].message);
    errors.clear();
  }

  /// Sets pipeline option `option` from the config's `key`, if the value
  /// is one the option accepts (OptionRanges.h); otherwise an error at the
  /// key, in DeepSpeed's spelling.
  LogicalResult set(StringRef key, StringRef option, const std::string &value) {
    if (std::optional<std::string> problem = checkPipelineOption(option, value))
      return error(key, *problem);
    settings[option.str()] = value;
    keys[option.str()] = key.str();
    mark(key, KeyDisposition::Used, option + "=" + value);
    return success();
  }

  /// Sets `option` from the number at `key` of `object`, if there is one.
  LogicalResult setNumber(const Object &object, StringRef path, StringRef key,
                          StringRef option) {
    optionOf(join(path, key), option);
    FailureOr<std::optional<double>> value = number(object, path, key);
    if (failed(value))
      return failure();
    if (!*value)
      return success();
    return set(join(path, key), option, formatNumber(**value));
  }

  /// Sets `option` from the integer at `key` of `object`, if there is one.
  LogicalResult setInteger(const Object &object, StringRef path, StringRef key,
                           StringRef option) {
    optionOf(join(path, key), option);
    FailureOr<std::optional<int64_t>> value = integer(object, path, key);
    if (failed(value))
      return failure();
    if (!*value)
      return success();
    return set(join(path, key), option, std::to_string(**value));
  }

  /// The option `path` would set: an "auto" there leaves it at its value.
  void optionOf(StringRef path, StringRef option) {
    autoOptions[path.str()] = option.str();
  }

  /// Keys of `object` (at `path`) outside `known` are errors, each.
  LogicalResult onlyKeys(const Object &object, StringRef path,
                         ArrayRef<StringRef> known, StringRef what) {
    bool ok = true;
    for (const auto &[key, value] : object)
      if (!llvm::is_contained(known, StringRef(key)))
        ok &= succeeded(error(join(path, key), "unknown key in " + what));
    return success(ok);
  }

  static std::string join(StringRef path, StringRef key) {
    return path.empty() ? key.str() : (path + "." + key).str();
  }

  /// The value of `key`, absent when missing, null or "auto" (recorded, so
  /// that the account says what the key was given).
  const Value *get(const Object &object, StringRef path, StringRef key) {
    const Value *value = object.get(key);
    if (!value || value->kind() == Value::Null)
      return nullptr;
    if (auto text = value->getAsString(); text && *text == "auto") {
      autoKeys.insert(join(path, key));
      return nullptr;
    }
    return value;
  }

  /// `"key": null` where a number or a boolean belongs: DeepSpeed passes
  /// the None on (to the optimizer's constructor, say), which rejects it;
  /// it is not the default.
  LogicalResult checkNotNull(const Object &object, StringRef path, StringRef key,
                             StringRef expected) {
    const Value *value = object.get(key);
    if (value && value->kind() == Value::Null)
      return error(join(path, key), "expected " + expected +
                                        ", got null (leave the key out for "
                                        "the default)");
    return success();
  }

  FailureOr<std::optional<double>> number(const Object &object, StringRef path,
                                          StringRef key) {
    if (failed(checkNotNull(object, path, key, "a number")))
      return failure();
    const Value *value = get(object, path, key);
    if (!value)
      return std::optional<double>();
    std::optional<double> number = value->getAsNumber();
    if (!number)
      return error(join(path, key), "expected a number");
    // llvm::json reads 1e400 as inf.
    if (!std::isfinite(*number))
      return error(join(path, key), "expected a finite number");
    return std::optional<double>(*number);
  }

  /// An integer, also written as 5e8 (DeepSpeed accepts it).
  FailureOr<std::optional<int64_t>> integer(const Object &object, StringRef path,
                                            StringRef key) {
    FailureOr<std::optional<double>> value = number(object, path, key);
    if (failed(value))
      return failure();
    if (!*value)
      return std::optional<int64_t>();
    double v = **value;
    if (v != std::floor(v))
      return error(join(path, key), "expected an integer, got " + formatNumber(v));
    // Beyond 2^53 a double no longer holds every integer.
    if (std::fabs(v) > double(kMaxCount)) {
      char text[32];
      std::snprintf(text, sizeof text, "%.0f", v);
      return error(join(path, key), "expected an integer of magnitude at most " +
                                        Twine(kMaxCount) + ", got " + text);
    }
    return std::optional<int64_t>(int64_t(v));
  }

  FailureOr<std::optional<bool>> boolean(const Object &object, StringRef path,
                                         StringRef key) {
    if (failed(checkNotNull(object, path, key, "true or false")))
      return failure();
    const Value *value = get(object, path, key);
    if (!value)
      return std::optional<bool>();
    if (std::optional<bool> b = value->getAsBoolean())
      return std::optional<bool>(*b);
    return error(join(path, key), "expected true or false");
  }

  FailureOr<const Object *> section(const Object &object, StringRef path,
                                    StringRef key) {
    const Value *value = get(object, path, key);
    if (!value)
      return static_cast<const Object *>(nullptr);
    if (const Object *o = value->getAsObject())
      return o;
    return error(join(path, key), "expected an object");
  }

  /// A boolean `key` that dsc has only at `expected` (DeepSpeed's default,
  /// or the behaviour dsc has): accepted without effect there, refused with
  /// `refusal` otherwise.
  LogicalResult onlyBoolean(const Object &object, StringRef path, StringRef key,
                            bool expected, const Twine &refusal) {
    FailureOr<std::optional<bool>> v = boolean(object, path, key);
    if (failed(v))
      return failure();
    if (!*v)
      return success();
    if (**v != expected)
      return error(join(path, key), refusal);
    noEffect(join(path, key), expected ? "true is what dsc does"
                                       : "false, DeepSpeed's default");
    return success();
  }

  LogicalResult read(const Object &root, int64_t worldSize);
  LogicalResult readTopLevelKey(const Object &root, StringRef key);
  LogicalResult readSwitchedSection(const Object &root, StringRef key,
                                    const Twine &refusal);
  LogicalResult readCsvMonitor(const Object &csv);
  LogicalResult readCheckpointSection(const Object &checkpoint);
  LogicalResult readActivationCheckpointing(const Object &section);
  LogicalResult readBatch(const Object &root, int64_t worldSize);
  LogicalResult readOptimizer(const Object &optimizer);
  LogicalResult readAdamParams(const Object &params, StringRef name);
  LogicalResult readSgdParams(const Object &params);
  LogicalResult readScheduler(const Object &scheduler);
  LogicalResult readPrecision(const Object &root);
  LogicalResult readFp16(const Object &fp16);
  LogicalResult readZero(const Object &zero);
  LogicalResult readZeroOffload(const Object &zero, StringRef key, int64_t stage);
  LogicalResult readDsc(const Object &dsc);
  LogicalResult readMoe(const Object &moe);

  /// The marks of the "auto" keys nothing else marked: the value the
  /// option they would set has without them.
  void markAutoKeys() {
    for (const std::string &key : autoKeys) {
      if (marks.count(key))
        continue;
      auto option = autoOptions.find(key);
      if (option == autoOptions.end()) {
        mark(key, KeyDisposition::Defaulted, "DeepSpeed's default");
        continue;
      }
      auto chosen = settings.find(option->second);
      StringRef fallback = optionDefault(option->second);
      std::string value = chosen != settings.end() ? chosen->second
                          : fallback.empty() ? "dsc's default"
                                             : fallback.str();
      mark(key, KeyDisposition::Defaulted, option->second + "=" + value);
    }
  }

  struct Mark {
    KeyDisposition disposition;
    std::string detail;
  };
  std::map<std::string, Mark> marks;
  PipelineSettings settings;
  /// The config key each checked setting came from, by option.
  std::map<std::string, std::string> keys;

private:
  struct Error {
    llvm::SMLoc where;
    std::string message;
    unsigned order; // of reporting, among errors at one key
  };
  llvm::SourceMgr &sourceMgr;
  const LocatedJson &json;
  std::vector<Error> errors;
  std::set<std::string> autoKeys;
  std::map<std::string, std::string> autoOptions;
};

constexpr StringRef kHandledKeys[] = {
    "train_batch_size", "train_micro_batch_size_per_gpu",
    "gradient_accumulation_steps", "optimizer", "scheduler", "fp16", "bf16",
    "gradient_clipping", "zero_optimization", "dsc"};

/// Sections of DeepSpeed features dsc does not have, each switched by its
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
    {"curriculum_learning", "this DeepSpeed feature is not supported by dsc"},
    {"data_efficiency", "this DeepSpeed feature is not supported by dsc"},
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

LogicalResult ConfigReader::read(const Object &root, int64_t worldSize) {
  // Every key and every section is read, so that one run reports each
  // mistake of the file.
  bool ok = true;
  auto check = [&](LogicalResult result) { ok &= succeeded(result); };
  for (const auto &[key, value] : root)
    if (!llvm::is_contained(kHandledKeys, StringRef(key)))
      check(readTopLevelKey(root, key));
  check(readBatch(root, worldSize));

  FailureOr<const Object *> optimizer = section(root, "", "optimizer");
  check(failed(optimizer) || (*optimizer && failed(readOptimizer(**optimizer)))
            ? failure()
            : success());
  FailureOr<const Object *> scheduler = section(root, "", "scheduler");
  check(failed(scheduler) || (*scheduler && failed(readScheduler(**scheduler)))
            ? failure()
            : success());
  check(readPrecision(root));
  check(setNumber(root, "", "gradient_clipping", "grad-clip"));
  FailureOr<const Object *> zero = section(root, "", "zero_optimization");
  check(failed(zero) || (*zero && failed(readZero(**zero))) ? failure()
                                                             : success());
  FailureOr<const Object *> dsc = section(root, "", "dsc");
  check(failed(dsc) || (*dsc && failed(readDsc(**dsc))) ? failure() : success());
  markAutoKeys();
  return success(ok);
}

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
    noEffect(k, "asynchronous I/O serves NVMe offload, which dsc does not do");
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
// layer's arguments) that dsc does as a rewrite.
LogicalResult ConfigReader::readDsc(const Object &dsc) {
  bool ok = succeeded(onlyKeys(dsc, "dsc", {"moe"}, "the dsc section"));
  FailureOr<const Object *> moe = section(dsc, "dsc", "moe");
  if (failed(moe))
    return failure();
  return success(ok && (!*moe || succeeded(readMoe(**moe))));
}

// dsc.moe: deepspeed.moe.layer.MoE's argument names where it has them.
LogicalResult ConfigReader::readMoe(const Object &moe) {
  StringRef path = "dsc.moe";
  bool ok = succeeded(onlyKeys(moe, path,
                               {"num_experts", "k", "capacity_factor",
                                "eval_capacity_factor", "min_capacity",
                                "drop_tokens", "aux_loss_coef", "every",
                                "experts_per_layer", "init", "seed", "ep_size",
                                "use_rts", "noisy_gate_policy", "use_residual"},
                               "dsc.moe"));
  for (auto [key, option] : {std::pair<StringRef, StringRef>{"num_experts", "moe-experts"},
                             {"k", "moe-top-k"},
                             {"min_capacity", "moe-min-capacity"},
                             {"every", "moe-every"},
                             {"seed", "moe-seed"},
                             {"ep_size", "moe-ep-size"}})
    ok &= succeeded(setInteger(moe, path, key, option));
  for (auto [key, option] :
       {std::pair<StringRef, StringRef>{"capacity_factor", "moe-capacity-factor"},
        {"eval_capacity_factor", "moe-eval-capacity-factor"},
        {"aux_loss_coef", "moe-aux-loss-coef"}})
    ok &= succeeded(setNumber(moe, path, key, option));
  FailureOr<std::optional<bool>> drop = boolean(moe, path, "drop_tokens");
  ok &= succeeded(drop) &&
        (!*drop || succeeded(set(join(path, "drop_tokens"), "moe-drop-tokens",
                                 **drop ? "true" : "false")));
  if (const Value *list = get(moe, path, "experts_per_layer")) {
    const llvm::json::Array *counts = list->getAsArray();
    std::vector<std::string> items;
    bool integers = true;
    for (const Value &count : counts ? *counts : llvm::json::Array()) {
      std::optional<int64_t> n = count.getAsInteger();
      integers &= n.has_value();
      if (n)
        items.push_back(std::to_string(*n));
    }
    if (!integers)
      ok &= succeeded(error(join(path, "experts_per_layer"), "expected integers"));
    else if (!counts || items.empty())
      ok &= succeeded(error(join(path, "experts_per_layer"),
                            "expected a non-empty array of expert counts"));
    else
      ok &= succeeded(set(join(path, "experts_per_layer"),
                          "moe-experts-per-layer", llvm::join(items, ",")));
  }
  if (const Value *init = get(moe, path, "init")) {
    std::optional<StringRef> name = init->getAsString();
    if (!name)
      ok &= succeeded(
          error(join(path, "init"), "expected \"upcycle\" or \"random\""));
    else
      ok &= succeeded(set(join(path, "init"), "moe-init", name->str()));
  }
  // Accepted at the values that need nothing dsc lacks.
  ok &= succeeded(onlyBoolean(moe, path, "use_rts", false,
                              "random token selection needs a random-number "
                              "op in the step, which dsc does not have yet "
                              "(false only)"));
  ok &= succeeded(onlyBoolean(moe, path, "use_residual", false,
                              "residual MoE is not supported by the rewrite "
                              "yet (false only)"));
  if (const Value *policy = get(moe, path, "noisy_gate_policy")) {
    std::optional<StringRef> name = policy->getAsString();
    if (!name || *name != "none")
      ok &= succeeded(error(join(path, "noisy_gate_policy"),
                            "noisy gating needs a random-number op in the "
                            "step, which dsc does not have yet (null or "
                            "\"none\" only)"));
    else
      noEffect(join(path, "noisy_gate_policy"), "\"none\": no noise");
  } else if (moe.get("noisy_gate_policy")) {
    noEffect(join(path, "noisy_gate_policy"), "null: no noise");
  }
  return success(ok);
}

LogicalResult ConfigReader::readBatch(const Object &root, int64_t worldSize) {
  FailureOr<std::optional<int64_t>> train = integer(root, "", "train_batch_size");
  FailureOr<std::optional<int64_t>> micro =
      integer(root, "", "train_micro_batch_size_per_gpu");
  FailureOr<std::optional<int64_t>> accum =
      integer(root, "", "gradient_accumulation_steps");
  if (failed(train) || failed(micro) || failed(accum))
    return failure();
  // "auto" (the trainer's value in DeepSpeed's Hugging Face integration):
  // the exported model's micro-batch, one micro-batch per step.
  std::optional<int64_t> t = *train, m = *micro, g = *accum;
  if (!t && !m && !g) {
    for (StringRef key : {"train_batch_size", "train_micro_batch_size_per_gpu",
                          "gradient_accumulation_steps"})
      if (root.get(key))
        mark(key, KeyDisposition::Defaulted,
             key == "gradient_accumulation_steps" ? "grad-accum=1"
             : key == "train_batch_size"
                 ? "the exported micro-batch x world size"
                 : "the exported model's micro-batch");
    return success(); // the exported inputs fix the micro-batch
  }
  // Bounded before they are multiplied (OptionRanges.h).
  struct Given {
    StringRef key;
    std::optional<int64_t> value;
    int64_t max;
  } given[] = {
      {"train_batch_size", t, kMaxBatchFactor * kMaxBatchFactor * kMaxWorldSize},
      {"train_micro_batch_size_per_gpu", m, kMaxBatchFactor},
      {"gradient_accumulation_steps", g, kMaxBatchFactor}};
  bool inRange = true;
  for (const Given &b : given)
    if (b.value && (*b.value < 1 || *b.value > b.max)) {
      (void)error(b.key, "must be in [1, " + Twine(b.max) + "], got " +
                             Twine(*b.value));
      inRange = false;
    }
  if (!inRange)
    return failure();
  // DeepSpeed's completion of the triple, with its integer divisions.
  if (t && m && !g)
    g = *m > 0 ? *t / *m / worldSize : 0;
  else if (t && g && !m)
    m = *g > 0 ? *t / worldSize / *g : 0;
  else if (m && g && !t)
    t = *m * *g * worldSize;
  else if (t && !m && !g)
    g = 1, m = *t / worldSize;
  else if (m && !t && !g)
    g = 1, t = *m * worldSize;
  else if (g && !t && !m)
    return error("gradient_accumulation_steps",
                 "train_batch_size or train_micro_batch_size_per_gpu must be "
                 "given with it");
  StringRef where = train->has_value() ? "train_batch_size"
                    : micro->has_value() ? "train_micro_batch_size_per_gpu"
                                         : "gradient_accumulation_steps";
  if (*t <= 0 || *m <= 0 || *g <= 0)
    return error(where, "batch sizes must be positive (train_batch_size " +
                            Twine(*t) + ", micro-batch " + Twine(*m) +
                            ", gradient accumulation " + Twine(*g) + ")");
  if (*t != *m * *g * worldSize)
    return error(where, "train_batch_size is not equal to micro_batch_per_gpu * "
                        "gradient_acc_step * world_size: " +
                            Twine(*t) + " != " + Twine(*m) + " * " + Twine(*g) +
                            " * " + Twine(worldSize));
  if (failed(set(where, "micro-batch", std::to_string(*m))) ||
      failed(set(where, "grad-accum", std::to_string(*g))))
    return failure();
  // The other two keys given say the same thing; "auto" ones are derived.
  for (const Given &b : given) {
    if (b.key == where || !root.get(b.key))
      continue;
    int64_t value = b.key == "train_batch_size" ? *t
                    : b.key == "gradient_accumulation_steps" ? *g
                                                             : *m;
    mark(b.key, b.value ? KeyDisposition::Used : KeyDisposition::Defaulted,
         (b.value ? "consistent with " + where.str()
                  : "derived from the batch triple") +
             ": " + std::to_string(value));
  }
  return success();
}

LogicalResult ConfigReader::readOptimizer(const Object &optimizer) {
  bool ok = succeeded(
      onlyKeys(optimizer, "optimizer", {"type", "params"}, "optimizer"));
  const Value *typeValue = get(optimizer, "optimizer", "type");
  std::optional<StringRef> type = typeValue ? typeValue->getAsString() : std::nullopt;
  if (!type)
    return error("optimizer.type", "expected a string (Adam, AdamW or SGD)");
  std::string name = type->lower();
  bool adam = name == "adam" || name == "adamw";
  if (!adam && name != "sgd")
    return error("optimizer.type", "optimizer '" + *type +
                                       "' is not supported by dsc (Adam, AdamW, SGD)");
  const Object empty;
  FailureOr<const Object *> paramsOr = section(optimizer, "optimizer", "params");
  if (failed(paramsOr))
    return failure();
  const Object &params = *paramsOr ? **paramsOr : empty;
  ok &= succeeded(adam ? readAdamParams(params, name) : readSgdParams(params));
  mark("optimizer.type", KeyDisposition::Used,
       "optimizer=" + (settings.count("optimizer") ? settings["optimizer"]
                                                    : std::string(name)));
  return success(ok);
}

LogicalResult ConfigReader::readAdamParams(const Object &params, StringRef name) {
  StringRef path = "optimizer.params";
  // Each key is checked, so that one run reports all of them.
  bool ok = succeeded(onlyKeys(params, path,
                               {"lr", "betas", "eps", "weight_decay",
                                "adam_w_mode", "torch_adam", "bias_correction",
                                "amsgrad"},
                               "Adam's parameters"));
  FailureOr<std::optional<bool>> wMode = boolean(params, path, "adam_w_mode");
  FailureOr<std::optional<bool>> torchAdam = boolean(params, path, "torch_adam");
  ok &= succeeded(wMode) && succeeded(torchAdam);
  ok &= succeeded(onlyBoolean(params, path, "bias_correction", true,
                              "only true is supported"));
  ok &= succeeded(onlyBoolean(params, path, "amsgrad", false,
                              "AMSGrad is not supported"));
  // "Adam" forces AdamW's decoupled decay unless adam_w_mode is false.
  bool decoupled =
      name == "adamw" || (succeeded(wMode) ? wMode->value_or(true) : true);
  bool torch = succeeded(torchAdam) && torchAdam->value_or(false);
  settings["optimizer"] = decoupled ? "adamw" : "adam";
  keys["optimizer"] = "optimizer.type";
  // FusedAdam's default decay is 0; torch.optim.AdamW's is 0.01.
  settings["weight-decay"] = torch && decoupled ? "0.01" : "0";
  if (succeeded(wMode) && *wMode)
    mark(join(path, "adam_w_mode"), KeyDisposition::Used,
         "optimizer=" + settings["optimizer"]);
  if (succeeded(torchAdam) && *torchAdam)
    mark(join(path, "torch_adam"), KeyDisposition::Used,
         "default weight-decay=" + settings["weight-decay"]);
  optionOf(join(path, "betas"), "betas");
  if (const Value *betas = get(params, path, "betas")) {
    const llvm::json::Array *array = betas->getAsArray();
    if (!array || array->size() != 2 || !(*array)[0].getAsNumber() ||
        !(*array)[1].getAsNumber())
      ok &= succeeded(
          error(join(path, "betas"), "expected two numbers [beta1, beta2]"));
    else
      ok &= succeeded(set(join(path, "betas"), "betas",
                          formatNumber(*(*array)[0].getAsNumber()) + "," +
                              formatNumber(*(*array)[1].getAsNumber())));
  }
  ok &= succeeded(setNumber(params, path, "eps", "eps"));
  ok &= succeeded(setNumber(params, path, "lr", "lr"));
  ok &= succeeded(setNumber(params, path, "weight_decay", "weight-decay"));
  return success(ok);
}

LogicalResult ConfigReader::readSgdParams(const Object &params) {
  StringRef path = "optimizer.params";
  bool ok = succeeded(onlyKeys(
      params, path, {"lr", "momentum", "weight_decay", "dampening", "nesterov"},
      "SGD's parameters"));
  FailureOr<std::optional<double>> dampening = number(params, path, "dampening");
  if (succeeded(dampening) && *dampening) {
    if (**dampening != 0)
      ok &= succeeded(error(join(path, "dampening"), "only 0 is supported"));
    else
      noEffect(join(path, "dampening"), "0, torch.optim.SGD's default");
  }
  ok &= succeeded(dampening);
  ok &= succeeded(onlyBoolean(params, path, "nesterov", false,
                              "Nesterov momentum is not supported"));
  settings["optimizer"] = "sgd";
  keys["optimizer"] = "optimizer.type";
  settings["weight-decay"] = "0";
  if (!get(params, path, "lr"))
    ok &= succeeded(
        error("optimizer", "SGD needs params.lr (torch.optim.SGD has no default)"));
  ok &= succeeded(setNumber(params, path, "momentum", "momentum"));
  ok &= succeeded(setNumber(params, path, "lr", "lr"));
  ok &= succeeded(setNumber(params, path, "weight_decay", "weight-decay"));
  return success(ok);
}

LogicalResult ConfigReader::readScheduler(const Object &scheduler) {
  bool ok = succeeded(
      onlyKeys(scheduler, "scheduler", {"type", "params"}, "scheduler"));
  const Value *typeValue = get(scheduler, "scheduler", "type");
  std::optional<StringRef> type = typeValue ? typeValue->getAsString() : std::nullopt;
  if (!type)
    return error("scheduler.type",
                 "expected a string (WarmupLR, WarmupDecayLR or WarmupCosineLR)");
  StringRef name = llvm::StringSwitch<StringRef>(*type)
                       .Case("WarmupLR", "warmup-lr")
                       .Case("WarmupDecayLR", "warmup-decay-lr")
                       .Case("WarmupCosineLR", "warmup-cosine-lr")
                       .Default("");
  if (name.empty())
    return error("scheduler.type",
                 "scheduler '" + *type +
                     "' is not supported by dsc (WarmupLR, WarmupDecayLR, "
                     "WarmupCosineLR)");
  // DeepSpeed's parameter names are the options' with `_` for `-`; each
  // schedule's constructor takes only its own.
  struct Param {
    std::string key;
    StringRef option;
  };
  SmallVector<Param> params;
  for (StringRef option : scheduleOptions(name))
    if (option != "warmup-type")
      params.push_back({llvm::join(llvm::split(option, '-'), "_"), option});
  (void)set("scheduler.type", "scheduler", name.str());
  const Object empty;
  FailureOr<const Object *> paramsOr = section(scheduler, "scheduler", "params");
  if (failed(paramsOr))
    return failure();
  const Object &values = *paramsOr ? **paramsOr : empty;
  StringRef path = "scheduler.params";
  SmallVector<StringRef> known = {"warmup_type", "last_batch_iteration"};
  for (const Param &param : params)
    known.push_back(param.key);
  ok &= succeeded(onlyKeys(values, path, known, (*type + "'s parameters").str()));
  for (const Param &param : params)
    ok &= succeeded(isIntegerPipelineOption(param.option)
                        ? setInteger(values, path, param.key, param.option)
                        : setNumber(values, path, param.key, param.option));
  optionOf(join(path, "warmup_type"), "warmup-type");
  if (const Value *warmupType = get(values, path, "warmup_type")) {
    std::optional<StringRef> t = warmupType->getAsString();
    if (!t || (*t != "log" && *t != "linear"))
      ok &= succeeded(
          error(join(path, "warmup_type"), "expected \"log\" or \"linear\""));
    else
      ok &= succeeded(set(join(path, "warmup_type"), "warmup-type", t->str()));
  }
  // A required argument of these schedules' constructors ("auto" too: dsc
  // does not know the run's length when it compiles).
  if (scheduleNeedsTotal(name) && !settings.count("total-num-steps") &&
      !marks.count(join(path, "total_num_steps")))
    ok &= succeeded(error(values.get("total_num_steps")
                              ? join(path, "total_num_steps")
                          : *paramsOr ? path.str()
                                      : std::string("scheduler.type"),
                          *type + " needs total_num_steps" +
                              (values.get("total_num_steps")
                                   ? " as a number: \"auto\" would be the "
                                     "trainer's step count, which dsc does "
                                     "not know when it compiles"
                                   : "")));
  FailureOr<std::optional<int64_t>> last = integer(values, path, "last_batch_iteration");
  if (succeeded(last) && *last) {
    if (**last != -1)
      ok &= succeeded(error(join(path, "last_batch_iteration"),
                            "only -1 (a fresh schedule) is supported; resume "
                            "from a checkpoint instead, which carries "
                            "optimizer.step"));
    else
      noEffect(join(path, "last_batch_iteration"),
               "-1, a fresh schedule (a resumed run takes its step from the "
               "checkpoint)");
  }
  return success(ok && succeeded(last));
}

LogicalResult ConfigReader::readFp16(const Object &fp16) {
  bool ok = true;
  const char *off = "fp16 is not enabled";
  auto keyOf = [](StringRef key) { return join("fp16", key); };
  struct Key {
    StringRef key, option;
    bool integer;
  };
  for (Key k : {Key{"loss_scale", "loss-scale", false},
                Key{"initial_scale_power", "initial-scale-power", true},
                Key{"loss_scale_window", "loss-scale-window", true},
                Key{"hysteresis", "hysteresis", true},
                Key{"min_loss_scale", "min-loss-scale", false}}) {
    if (settings["precision"] != "fp16") {
      if (fp16.get(k.key))
        noEffect(keyOf(k.key), off);
      continue;
    }
    ok &= succeeded(k.integer ? setInteger(fp16, "fp16", k.key, k.option)
                              : setNumber(fp16, "fp16", k.key, k.option));
  }
  ok &= succeeded(onlyBoolean(fp16, "fp16", "auto_cast", false,
                              "auto_cast is not supported"));
  for (StringRef unsupported : {"consecutive_hysteresis", "fp16_master_weights_and_grads"})
    ok &= succeeded(
        onlyBoolean(fp16, "fp16", unsupported, false, "only false is supported"));
  return success(ok);
}

LogicalResult ConfigReader::readPrecision(const Object &root) {
  FailureOr<const Object *> fp16 = section(root, "", "fp16");
  FailureOr<const Object *> bf16 = section(root, "", "bf16");
  if (failed(fp16) || failed(bf16))
    return failure();
  bool ok = true;
  std::optional<bool> fp16On, bf16On;
  if (*fp16) {
    ok &= succeeded(onlyKeys(**fp16, "fp16",
                             {"enabled", "auto_cast", "loss_scale",
                              "initial_scale_power", "loss_scale_window",
                              "hysteresis", "consecutive_hysteresis",
                              "min_loss_scale", "fp16_master_weights_and_grads"},
                             "fp16"));
    FailureOr<std::optional<bool>> on = boolean(**fp16, "fp16", "enabled");
    if (failed(on))
      return failure();
    fp16On = *on;
  }
  if (*bf16) {
    ok &= succeeded(
        onlyKeys(**bf16, "bf16", {"enabled", "immediate_grad_update"}, "bf16"));
    FailureOr<std::optional<bool>> on = boolean(**bf16, "bf16", "enabled");
    if (failed(on))
      return failure();
    bf16On = *on;
    if ((*bf16)->get("immediate_grad_update"))
      noEffect("bf16.immediate_grad_update",
               "dsc's compiled step schedules the gradient updates itself");
  }
  // "auto" (absent here): DeepSpeed's Hugging Face integration takes the
  // trainer's choice, which follows the device; every target dsc compiles
  // for computes in bf16 (CPU, and CUDA from sm_80, dsc-compile's default
  // being sm_90), so bf16, unless fp16 is enabled. fp16 "auto" is off:
  // bf16 is preferred wherever it exists.
  bool bf16Auto = *bf16 && (*bf16)->get("enabled") && !bf16On;
  bool fp16Auto = *fp16 && (*fp16)->get("enabled") && !fp16On;
  if (fp16Auto) {
    fp16On = false;
    mark("fp16.enabled", KeyDisposition::Defaulted,
         "false: bf16 is preferred where the device has it, as every dsc "
         "target does");
  }
  if (bf16Auto) {
    bf16On = !fp16On.value_or(false);
    mark("bf16.enabled", KeyDisposition::Defaulted,
         *bf16On ? "true (precision=bf16): every dsc target computes in bf16 "
                   "(CPU; CUDA from sm_80)"
                 : "false: fp16 is enabled");
  }
  if (fp16On.value_or(false) && bf16On.value_or(false))
    return error("bf16", "bf16 and fp16 modes cannot be simultaneously enabled");
  if (fp16On.value_or(false)) {
    (void)set("fp16.enabled", "precision", "fp16");
    settings["loss-scaling"] = "true";
  } else if (*fp16 && (*fp16)->get("enabled") && !fp16Auto) {
    noEffect("fp16.enabled", "false, DeepSpeed's default");
  }
  if (*fp16)
    ok &= succeeded(readFp16(**fp16));
  if (bf16On.value_or(false)) {
    settings["precision"] = "bf16";
    keys["precision"] = "bf16.enabled";
    if (!bf16Auto)
      mark("bf16.enabled", KeyDisposition::Used, "precision=bf16");
  } else if (*bf16 && (*bf16)->get("enabled") && !bf16Auto) {
    noEffect("bf16.enabled", "false, DeepSpeed's default");
  }
  return success(ok);
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
  const Value *device = get(*o, join(path, key), "device");
  std::optional<StringRef> name = device ? device->getAsString() : std::nullopt;
  if (!device || (name && *name == "none")) {
    noEffect(join(path, key), "device \"none\": no offload");
    return success();
  }
  // DeepSpeed's own rule first: parameters are only partitioned, and so
  // only offloadable, at stage 3.
  if (key == "offload_param" && stage != 3)
    return error(join(path, key),
                 "parameter offload needs ZeRO stage 3, got stage " +
                     Twine(stage) +
                     " (and dsc does not support offload at any stage yet)");
  return error(join(path, key),
               "offload is not supported yet by dsc: model states stay in "
               "the ranks' device memory");
}

LogicalResult ConfigReader::readZero(const Object &zero) {
  StringRef path = "zero_optimization";
  // Knobs of DeepSpeed's implementation that dsc's compiler decides by
  // itself (layouts, bucket orders, what a save gathers).
  static constexpr StringRef kLayoutKeys[] = {
      "contiguous_gradients", "reduce_scatter", "allgather_partitions",
      "load_from_fp32_weights", "elastic_checkpoint", "sub_group_size",
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
                "stage3_max_live_parameters", "cpu_offload",
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
                              "offload is not supported yet by dsc: model "
                              "states stay in the ranks' device memory"));
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

} // namespace

StringRef mlir::dsc::dispositionName(KeyDisposition disposition) {
  switch (disposition) {
  case KeyDisposition::Used:
    return "used";
  case KeyDisposition::Defaulted:
    return "defaulted";
  case KeyDisposition::NoEffect:
    return "no effect";
  case KeyDisposition::Refused:
    return "refused";
  }
  return "";
}

std::string mlir::dsc::formatPipelineNumber(double value) {
  // %.17g reads back as the same double.
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

/// Every key of `value` (at `path`) in the order of the file: sections
/// the reader marked as a whole are one key, the others are descended.
static void listKeys(const Value &value, StringRef path,
                     const std::map<std::string, ConfigReader::Mark> &marks,
                     SmallVectorImpl<std::string> &keys) {
  const Object *object = value.getAsObject();
  if (!path.empty() && (!object || object->empty() || marks.count(path.str()))) {
    keys.push_back(path.str());
    return;
  }
  if (!object)
    return;
  for (const auto &[key, child] : *object)
    listKeys(child, ConfigReader::join(path, key), marks, keys);
}

FailureOr<PipelineSettings>
mlir::dsc::readDeepSpeedConfig(llvm::SourceMgr &sourceMgr, unsigned bufferId,
                               int64_t worldSize, ConfigOrigins *origins,
                               ConfigAccount *account) {
  FailureOr<LocatedJson> json = parseLocatedJson(sourceMgr, bufferId);
  if (failed(json))
    return failure();
  ConfigReader reader(sourceMgr, *json);
  const Object *root = json->value.getAsObject();
  if (!root) {
    (void)reader.error("", "a DeepSpeed config is a JSON object");
    reader.printErrors();
    return failure();
  }
  bool ok = succeeded(reader.read(*root, worldSize));
  reader.printErrors();
  std::string file =
      sourceMgr.getMemoryBuffer(bufferId)->getBufferIdentifier().str();
  auto where = [&](StringRef key) {
    return sourceMgr.getLineAndColumn(json->locate(key), bufferId);
  };
  if (account) {
    SmallVector<std::string> keys;
    listKeys(json->value, "", reader.marks, keys);
    // llvm::json::Object is a hash map: the file's order is the keys'.
    llvm::sort(keys, [&](const std::string &a, const std::string &b) {
      return json->locate(a).getPointer() < json->locate(b).getPointer();
    });
    for (const std::string &key : keys) {
      auto mark = reader.marks.find(key);
      // A key no reader looked at (a value inside a section that is not
      // switched on) changes nothing.
      KeyAccount entry{key,
                       mark == reader.marks.end() ? KeyDisposition::NoEffect
                                                  : mark->second.disposition,
                       mark == reader.marks.end() ? "not read by dsc"
                                                  : mark->second.detail,
                       file};
      std::tie(entry.line, entry.column) = where(key);
      account->push_back(std::move(entry));
    }
  }
  if (!ok)
    return failure();
  if (origins)
    for (const auto &[option, key] : reader.keys) {
      auto [line, column] = where(key);
      (*origins)[option] = {key, file, line, column};
    }
  return std::move(reader.settings);
}
