//===- DeepSpeedConfig.cpp - ds_config.json as --dsc-pipeline options -----===//
//
// Follows DeepSpeed v0.19's reading of its config: "auto" values count as
// absent, integers may be written 5e8, the batch triple is completed and
// checked as DeepSpeed's `_set_batch_related_parameters` and
// `_batch_assertion` do, and an optimizer named "Adam" is AdamW unless
// `adam_w_mode` is false (its FusedAdam default). Keys dsc does not know are
// errors rather than silently ignored, because a misspelt key in a config
// otherwise trains a different model than the user asked for.
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

using namespace mlir;
using namespace mlir::dsc;
using llvm::json::Object;
using llvm::json::Value;

namespace {

std::string formatNumber(double value) { return formatPipelineNumber(value); }

class ConfigReader {
public:
  ConfigReader(llvm::SourceMgr &sourceMgr, const LocatedJson &json)
      : sourceMgr(sourceMgr), json(json) {}

  LogicalResult error(StringRef path, const Twine &message) {
    sourceMgr.PrintMessage(json.locate(path), llvm::SourceMgr::DK_Error,
                           path.empty() ? message : "'" + path + "': " + message);
    return failure();
  }

  /// Sets pipeline option `option` from the config's `key`, if the value
  /// is one the option accepts (OptionRanges.h); otherwise an error at the
  /// key, in DeepSpeed's spelling.
  LogicalResult set(StringRef key, StringRef option, const std::string &value) {
    if (std::optional<std::string> problem = checkPipelineOption(option, value))
      return error(key, *problem);
    settings[option.str()] = value;
    keys[option.str()] = key.str();
    return success();
  }

  /// Sets `option` from the number at `key` of `object`, if there is one.
  LogicalResult setNumber(const Object &object, StringRef path, StringRef key,
                          StringRef option) {
    FailureOr<std::optional<double>> value = number(object, path, key);
    if (failed(value))
      return failure();
    if (!*value)
      return success();
    return set(join(path, key), option, formatNumber(**value));
  }

  /// Keys of `object` (at `path`) outside `known` are errors.
  LogicalResult onlyKeys(const Object &object, StringRef path,
                         ArrayRef<StringRef> known, StringRef what) {
    for (const auto &[key, value] : object)
      if (!llvm::is_contained(known, StringRef(key)))
        return error(join(path, key), "unknown key in " + what);
    return success();
  }

  static std::string join(StringRef path, StringRef key) {
    return path.empty() ? key.str() : (path + "." + key).str();
  }

  /// The value of `key`, absent when missing, null or "auto".
  static const Value *get(const Object &object, StringRef key) {
    const Value *value = object.get(key);
    if (!value || value->kind() == Value::Null)
      return nullptr;
    if (auto text = value->getAsString(); text && *text == "auto")
      return nullptr;
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
    const Value *value = get(object, key);
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
    const Value *value = get(object, key);
    if (!value)
      return std::optional<bool>();
    if (std::optional<bool> b = value->getAsBoolean())
      return std::optional<bool>(*b);
    return error(join(path, key), "expected true or false");
  }

  FailureOr<const Object *> section(const Object &object, StringRef key) {
    const Value *value = get(object, key);
    if (!value)
      return static_cast<const Object *>(nullptr);
    if (const Object *o = value->getAsObject())
      return o;
    return error(key, "expected an object");
  }

  LogicalResult read(const Object &root, int64_t worldSize);
  LogicalResult readBatch(const Object &root, int64_t worldSize);
  LogicalResult readOptimizer(const Object &optimizer);
  LogicalResult readScheduler(const Object &scheduler);
  LogicalResult readPrecision(const Object &root);
  LogicalResult readZero(const Object &zero);
  LogicalResult readDsc(const Object &dsc);
  LogicalResult readMoe(const Object &moe);

  PipelineSettings settings;
  /// The config key each checked setting came from, by option.
  std::map<std::string, std::string> keys;

private:
  llvm::SourceMgr &sourceMgr;
  const LocatedJson &json;
};

// Top-level keys that only change logging or monitoring: dsc-run prints
// every step and writes its own metrics, so they have no effect here.
constexpr StringRef kLoggingKeys[] = {
    "steps_per_print", "wall_clock_breakdown", "dump_state", "tensorboard",
    "wandb", "csv_monitor", "comet", "flops_profiler", "comms_logger",
    "memory_breakdown", "checkpoint"};

// DeepSpeed features dsc recognises but does not implement.
constexpr StringRef kUnsupportedKeys[] = {
    "amp", "activation_checkpointing", "data_efficiency", "curriculum_learning",
    "sparse_attention", "elasticity", "pipeline", "aio", "compression_training",
    "communication_data_type", "prescale_gradients", "gradient_predivide_factor",
    "sparse_gradients", "zero_allow_untested_optimizer", "autotuning",
    "data_types", "seq_parallel_communication_data_type", "nebula",
    "eigenvalue", "progressive_layer_drop", "quantize_training"};

constexpr StringRef kHandledKeys[] = {
    "train_batch_size", "train_micro_batch_size_per_gpu",
    "gradient_accumulation_steps", "optimizer", "scheduler", "fp16", "bf16",
    "gradient_clipping", "zero_optimization", "dsc"};

LogicalResult ConfigReader::read(const Object &root, int64_t worldSize) {
  // Every key and every section is read, so that one run reports each
  // mistake of the file (within a section, its first).
  bool ok = true;
  auto check = [&](LogicalResult result) { ok &= succeeded(result); };
  for (const auto &[key, value] : root) {
    StringRef k = key;
    if (llvm::is_contained(kHandledKeys, k) || llvm::is_contained(kLoggingKeys, k))
      continue;
    if (k == "activation_checkpointing")
      check(error(k, "DeepSpeed's checkpointing API settings do not apply: "
                     "dsc recomputes blocks with --checkpoint-activations"));
    else if (llvm::is_contained(kUnsupportedKeys, k))
      check(error(k, "this DeepSpeed feature is not supported by dsc"));
    else
      check(error(k, "unknown key"));
  }
  check(readBatch(root, worldSize));

  FailureOr<const Object *> optimizer = section(root, "optimizer");
  check(failed(optimizer) || (*optimizer && failed(readOptimizer(**optimizer)))
            ? failure()
            : success());
  FailureOr<const Object *> scheduler = section(root, "scheduler");
  check(failed(scheduler) || (*scheduler && failed(readScheduler(**scheduler)))
            ? failure()
            : success());
  check(readPrecision(root));

  FailureOr<std::optional<double>> clip = number(root, "", "gradient_clipping");
  check(failed(clip) || (*clip && failed(set("gradient_clipping", "grad-clip",
                                              formatNumber(**clip))))
            ? failure()
            : success());

  FailureOr<const Object *> zero = section(root, "zero_optimization");
  check(failed(zero) || (*zero && failed(readZero(**zero))) ? failure()
                                                             : success());
  FailureOr<const Object *> dsc = section(root, "dsc");
  check(failed(dsc) || (*dsc && failed(readDsc(**dsc))) ? failure() : success());
  return success(ok);
}

// dsc's own section: what DeepSpeed configures in model code (its MoE
// layer's arguments) that dsc does as a rewrite.
LogicalResult ConfigReader::readDsc(const Object &dsc) {
  if (failed(onlyKeys(dsc, "dsc", {"moe"}, "the dsc section")))
    return failure();
  FailureOr<const Object *> moe = section(dsc, "moe");
  if (failed(moe))
    return failure();
  return *moe ? readMoe(**moe) : success();
}

// dsc.moe: deepspeed.moe.layer.MoE's argument names where it has them.
LogicalResult ConfigReader::readMoe(const Object &moe) {
  StringRef path = "dsc.moe";
  if (failed(onlyKeys(moe, path,
                      {"num_experts", "k", "capacity_factor",
                       "eval_capacity_factor", "min_capacity", "drop_tokens",
                       "aux_loss_coef", "every", "experts_per_layer", "init",
                       "seed", "ep_size", "use_rts", "noisy_gate_policy",
                       "use_residual"},
                      "dsc.moe")))
    return failure();
  for (auto [key, option] : {std::pair<StringRef, StringRef>{"num_experts", "moe-experts"},
                             {"k", "moe-top-k"},
                             {"min_capacity", "moe-min-capacity"},
                             {"every", "moe-every"},
                             {"seed", "moe-seed"},
                             {"ep_size", "moe-ep-size"}}) {
    FailureOr<std::optional<int64_t>> v = integer(moe, path, key);
    if (failed(v) || (*v && failed(set(join(path, key), option, std::to_string(**v)))))
      return failure();
  }
  for (auto [key, option] :
       {std::pair<StringRef, StringRef>{"capacity_factor", "moe-capacity-factor"},
        {"eval_capacity_factor", "moe-eval-capacity-factor"},
        {"aux_loss_coef", "moe-aux-loss-coef"}})
    if (failed(setNumber(moe, path, key, option)))
      return failure();
  FailureOr<std::optional<bool>> drop = boolean(moe, path, "drop_tokens");
  if (failed(drop) ||
      (*drop && failed(set(join(path, "drop_tokens"), "moe-drop-tokens",
                           **drop ? "true" : "false"))))
    return failure();
  if (const Value *list = get(moe, "experts_per_layer")) {
    const llvm::json::Array *counts = list->getAsArray();
    std::vector<std::string> items;
    for (const Value &count : counts ? *counts : llvm::json::Array()) {
      std::optional<int64_t> n = count.getAsInteger();
      if (!n)
        return error(join(path, "experts_per_layer"), "expected integers");
      items.push_back(std::to_string(*n));
    }
    if (!counts || items.empty())
      return error(join(path, "experts_per_layer"),
                   "expected a non-empty array of expert counts");
    if (failed(set(join(path, "experts_per_layer"), "moe-experts-per-layer",
                   llvm::join(items, ","))))
      return failure();
  }
  if (const Value *init = get(moe, "init")) {
    std::optional<StringRef> name = init->getAsString();
    if (!name)
      return error(join(path, "init"), "expected \"upcycle\" or \"random\"");
    if (failed(set(join(path, "init"), "moe-init", name->str())))
      return failure();
  }
  // Accepted at the values that need nothing dsc lacks.
  for (StringRef key : {"use_rts", "use_residual"}) {
    FailureOr<std::optional<bool>> v = boolean(moe, path, key);
    if (failed(v))
      return failure();
    if (*v && **v)
      return error(join(path, key),
                   key == "use_rts"
                       ? "random token selection needs a random-number op "
                         "in the step, which dsc does not have yet (false only)"
                       : "residual MoE is not supported by the rewrite yet "
                         "(false only)");
  }
  if (const Value *policy = get(moe, "noisy_gate_policy")) {
    std::optional<StringRef> name = policy->getAsString();
    if (!name || *name != "none")
      return error(join(path, "noisy_gate_policy"),
                   "noisy gating needs a random-number op in the step, which "
                   "dsc does not have yet (null or \"none\" only)");
  }
  return success();
}

LogicalResult ConfigReader::readBatch(const Object &root, int64_t worldSize) {
  FailureOr<std::optional<int64_t>> train = integer(root, "", "train_batch_size");
  FailureOr<std::optional<int64_t>> micro =
      integer(root, "", "train_micro_batch_size_per_gpu");
  FailureOr<std::optional<int64_t>> accum =
      integer(root, "", "gradient_accumulation_steps");
  if (failed(train) || failed(micro) || failed(accum))
    return failure();
  std::optional<int64_t> t = *train, m = *micro, g = *accum;
  if (!t && !m && !g)
    return success(); // the exported inputs fix the micro-batch
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
  return success();
}

LogicalResult ConfigReader::readOptimizer(const Object &optimizer) {
  if (failed(onlyKeys(optimizer, "optimizer", {"type", "params"}, "optimizer")))
    return failure();
  const Value *typeValue = get(optimizer, "type");
  std::optional<StringRef> type = typeValue ? typeValue->getAsString() : std::nullopt;
  if (!type)
    return error("optimizer.type", "expected a string (Adam, AdamW or SGD)");
  std::string name = type->lower();
  bool adam = name == "adam" || name == "adamw";
  if (!adam && name != "sgd")
    return error("optimizer.type", "optimizer '" + *type +
                                       "' is not supported by dsc (Adam, AdamW, SGD)");
  const Object empty;
  FailureOr<const Object *> paramsOr = section(optimizer, "params");
  if (failed(paramsOr))
    return failure();
  const Object &params = *paramsOr ? **paramsOr : empty;
  StringRef path = "optimizer.params";
  // The numbers are each checked, so that one run reports all of them.
  bool numbersOk = true;
  if (adam) {
    if (failed(onlyKeys(params, path,
                        {"lr", "betas", "eps", "weight_decay", "adam_w_mode",
                         "torch_adam", "bias_correction", "amsgrad"},
                        "Adam's parameters")))
      return failure();
    FailureOr<std::optional<bool>> wMode = boolean(params, path, "adam_w_mode");
    FailureOr<std::optional<bool>> torchAdam = boolean(params, path, "torch_adam");
    FailureOr<std::optional<bool>> bias = boolean(params, path, "bias_correction");
    FailureOr<std::optional<bool>> amsgrad = boolean(params, path, "amsgrad");
    if (failed(wMode) || failed(torchAdam) || failed(bias) || failed(amsgrad))
      return failure();
    if (bias->value_or(true) == false)
      return error(join(path, "bias_correction"), "only true is supported");
    if (amsgrad->value_or(false))
      return error(join(path, "amsgrad"), "AMSGrad is not supported");
    // "Adam" forces AdamW's decoupled decay unless adam_w_mode is false.
    bool decoupled = name == "adamw" || wMode->value_or(true);
    settings["optimizer"] = decoupled ? "adamw" : "adam";
    keys["optimizer"] = "optimizer.type";
    // FusedAdam's default decay is 0; torch.optim.AdamW's is 0.01.
    settings["weight-decay"] =
        torchAdam->value_or(false) && decoupled ? "0.01" : "0";
    if (const Value *betas = get(params, "betas")) {
      const llvm::json::Array *array = betas->getAsArray();
      if (!array || array->size() != 2 || !(*array)[0].getAsNumber() ||
          !(*array)[1].getAsNumber())
        numbersOk = succeeded(
            error(join(path, "betas"), "expected two numbers [beta1, beta2]"));
      else if (failed(set(join(path, "betas"), "betas",
                          formatNumber(*(*array)[0].getAsNumber()) + "," +
                              formatNumber(*(*array)[1].getAsNumber()))))
        numbersOk = false;
    }
    numbersOk &= succeeded(setNumber(params, path, "eps", "eps"));
  } else {
    if (failed(onlyKeys(params, path,
                        {"lr", "momentum", "weight_decay", "dampening", "nesterov"},
                        "SGD's parameters")))
      return failure();
    FailureOr<std::optional<double>> dampening = number(params, path, "dampening");
    FailureOr<std::optional<bool>> nesterov = boolean(params, path, "nesterov");
    FailureOr<std::optional<double>> momentum = number(params, path, "momentum");
    if (failed(dampening) || failed(nesterov) || failed(momentum))
      return failure();
    if (dampening->value_or(0) != 0)
      return error(join(path, "dampening"), "only 0 is supported");
    if (nesterov->value_or(false))
      return error(join(path, "nesterov"), "Nesterov momentum is not supported");
    if (!get(params, "lr"))
      return error("optimizer", "SGD needs params.lr (torch.optim.SGD has no default)");
    settings["optimizer"] = "sgd";
    keys["optimizer"] = "optimizer.type";
    settings["weight-decay"] = "0";
    if (failed(set(join(path, "momentum"), "momentum",
                   formatNumber(momentum->value_or(0)))))
      return failure();
  }
  numbersOk &= succeeded(setNumber(params, path, "lr", "lr"));
  numbersOk &= succeeded(setNumber(params, path, "weight_decay", "weight-decay"));
  return success(numbersOk);
}

LogicalResult ConfigReader::readScheduler(const Object &scheduler) {
  if (failed(onlyKeys(scheduler, "scheduler", {"type", "params"}, "scheduler")))
    return failure();
  const Value *typeValue = get(scheduler, "type");
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
  settings["scheduler"] = name.str();
  keys["scheduler"] = "scheduler.type";
  const Object empty;
  FailureOr<const Object *> paramsOr = section(scheduler, "params");
  if (failed(paramsOr))
    return failure();
  const Object &values = *paramsOr ? **paramsOr : empty;
  StringRef path = "scheduler.params";
  SmallVector<StringRef> known = {"warmup_type", "last_batch_iteration"};
  for (const Param &param : params)
    known.push_back(param.key);
  if (failed(onlyKeys(values, path, known, (*type + "'s parameters").str())))
    return failure();
  for (const Param &param : params) {
    if (isIntegerPipelineOption(param.option)) {
      FailureOr<std::optional<int64_t>> v = integer(values, path, param.key);
      if (failed(v))
        return failure();
      if (*v && failed(set(join(path, param.key), param.option,
                           std::to_string(**v))))
        return failure();
      continue;
    }
    FailureOr<std::optional<double>> v = number(values, path, param.key);
    if (failed(v))
      return failure();
    if (*v &&
        failed(set(join(path, param.key), param.option, formatNumber(**v))))
      return failure();
  }
  if (const Value *warmupType = get(values, "warmup_type")) {
    std::optional<StringRef> t = warmupType->getAsString();
    if (!t || (*t != "log" && *t != "linear"))
      return error(join(path, "warmup_type"), "expected \"log\" or \"linear\"");
    settings["warmup-type"] = t->str();
    keys["warmup-type"] = join(path, "warmup_type");
  }
  // A required argument of these schedules' constructors.
  if (scheduleNeedsTotal(name) && !settings.count("total-num-steps"))
    return error(*paramsOr ? StringRef(path) : StringRef("scheduler.type"),
                 *type + " needs total_num_steps");
  FailureOr<std::optional<int64_t>> last = integer(values, path, "last_batch_iteration");
  if (failed(last))
    return failure();
  if (last->value_or(-1) != -1)
    return error(join(path, "last_batch_iteration"),
                 "only -1 (a fresh schedule) is supported; resume from a "
                 "checkpoint instead, which carries optimizer.step");
  return success();
}

LogicalResult ConfigReader::readPrecision(const Object &root) {
  FailureOr<const Object *> fp16 = section(root, "fp16");
  FailureOr<const Object *> bf16 = section(root, "bf16");
  if (failed(fp16) || failed(bf16))
    return failure();
  bool fp16On = false, bf16On = false;
  if (*fp16) {
    if (failed(onlyKeys(**fp16, "fp16",
                        {"enabled", "auto_cast", "loss_scale", "initial_scale_power",
                         "loss_scale_window", "hysteresis", "consecutive_hysteresis",
                         "min_loss_scale", "fp16_master_weights_and_grads"},
                        "fp16")))
      return failure();
    FailureOr<std::optional<bool>> on = boolean(**fp16, "fp16", "enabled");
    if (failed(on))
      return failure();
    fp16On = on->value_or(false);
  }
  if (*bf16) {
    if (failed(onlyKeys(**bf16, "bf16", {"enabled", "immediate_grad_update"}, "bf16")))
      return failure();
    FailureOr<std::optional<bool>> on = boolean(**bf16, "bf16", "enabled");
    if (failed(on))
      return failure();
    bf16On = on->value_or(false);
  }
  if (fp16On && bf16On)
    return error("bf16", "bf16 and fp16 modes cannot be simultaneously enabled");
  if (fp16On) {
    const Object &fp16Section = **fp16;
    if (FailureOr<std::optional<bool>> autoCast =
            boolean(fp16Section, "fp16", "auto_cast");
        failed(autoCast) || autoCast->value_or(false))
      return failed(autoCast) ? failure()
                              : error("fp16.auto_cast", "auto_cast is not supported");
    settings["precision"] = "fp16";
    keys["precision"] = "fp16.enabled";
    settings["loss-scaling"] = "true";
    struct Key {
      StringRef key, option;
      bool integer;
    };
    for (Key k : {Key{"loss_scale", "loss-scale", false},
                  Key{"initial_scale_power", "initial-scale-power", true},
                  Key{"loss_scale_window", "loss-scale-window", true},
                  Key{"hysteresis", "hysteresis", true},
                  Key{"min_loss_scale", "min-loss-scale", false}}) {
      if (k.integer) {
        FailureOr<std::optional<int64_t>> v = integer(fp16Section, "fp16", k.key);
        if (failed(v))
          return failure();
        if (*v && failed(set(join("fp16", k.key), k.option,
                             std::to_string(**v))))
          return failure();
      } else {
        FailureOr<std::optional<double>> v = number(fp16Section, "fp16", k.key);
        if (failed(v))
          return failure();
        if (*v && failed(set(join("fp16", k.key), k.option,
                             formatNumber(**v))))
          return failure();
      }
    }
    for (StringRef unsupported : {"consecutive_hysteresis", "fp16_master_weights_and_grads"}) {
      FailureOr<std::optional<bool>> v = boolean(fp16Section, "fp16", unsupported);
      if (failed(v))
        return failure();
      if (v->value_or(false))
        return error(join("fp16", unsupported), "only false is supported");
    }
  }
  if (bf16On) {
    settings["precision"] = "bf16";
    keys["precision"] = "bf16.enabled";
  }
  return success();
}

LogicalResult ConfigReader::readZero(const Object &zero) {
  StringRef path = "zero_optimization";
  if (failed(onlyKeys(
          zero, path,
          {"stage", "contiguous_gradients", "reduce_scatter", "reduce_bucket_size",
           "allgather_partitions", "allgather_bucket_size", "overlap_comm",
           "load_from_fp32_weights", "elastic_checkpoint", "offload_param",
           "offload_optimizer", "sub_group_size", "stage3_prefetch_bucket_size",
           "stage3_param_persistence_threshold", "stage3_max_live_parameters",
           "stage3_max_reuse_distance", "stage3_gather_16bit_weights_on_model_save",
           "stage3_gather_fp16_weights_on_model_save", "round_robin_gradients",
           "ignore_unused_parameters", "cpu_offload", "zero_hpz_partition_size",
           "zero_quantized_weights", "zero_quantized_gradients", "mics_shard_size",
           "mics_hierarchical_params_gather", "memory_efficient_linear",
           "use_multi_rank_bucket_allreduce", "log_trace_cache_warnings"},
          "zero_optimization")))
    return failure();
  FailureOr<std::optional<int64_t>> stage = integer(zero, path, "stage");
  if (failed(stage))
    return failure();
  int64_t s = stage->value_or(0);
  if (s < 0 || s > 3)
    return error(join(path, "stage"), "ZeRO stage must be 0, 1, 2 or 3, got " + Twine(s));
  for (StringRef offload : {"offload_param", "offload_optimizer"}) {
    const Value *value = get(zero, offload);
    if (!value)
      continue;
    const Object *o = value->getAsObject();
    if (!o)
      return error(join(path, offload), "expected an object");
    const Value *device = get(*o, "device");
    std::optional<StringRef> name = device ? device->getAsString() : std::nullopt;
    if (name && *name == "none")
      continue;
    // DeepSpeed's own rule first: parameters are only partitioned, and so
    // only offloadable, at stage 3.
    if (offload == "offload_param" && s != 3)
      return error(join(path, offload),
                   "parameter offload needs ZeRO stage 3, got stage " + Twine(s) +
                       " (and dsc does not support offload at any stage yet)");
    return error(join(path, offload),
                 "offload is not supported yet by dsc: model states stay in "
                 "the ranks' device memory");
  }
  settings["zero-stage"] = std::to_string(s);
  keys["zero-stage"] = join(path, "stage");
  for (auto [key, option] :
       {std::pair<StringRef, StringRef>{"stage3_param_persistence_threshold",
                                        "zero-persistence-threshold"},
        {"stage3_prefetch_bucket_size", "zero-prefetch-bucket-size"},
        {"stage3_max_live_parameters", "zero-max-live-parameters"},
        {"reduce_bucket_size", "zero-reduce-bucket-size"},
        {"allgather_bucket_size", "zero-allgather-bucket-size"}}) {
    FailureOr<std::optional<int64_t>> v = integer(zero, path, key);
    if (failed(v))
      return failure();
    if (*v && failed(set(join(path, key), option, std::to_string(**v))))
      return failure();
  }
  FailureOr<std::optional<bool>> overlap = boolean(zero, path, "overlap_comm");
  if (failed(overlap))
    return failure();
  if (*overlap)
    settings["zero-overlap-comm"] = **overlap ? "true" : "false";
  return success();
}

} // namespace

std::string mlir::dsc::formatPipelineNumber(double value) {
  // %.17g reads back as the same double.
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

FailureOr<PipelineSettings>
mlir::dsc::readDeepSpeedConfig(llvm::SourceMgr &sourceMgr, unsigned bufferId,
                               int64_t worldSize, ConfigOrigins *origins) {
  FailureOr<LocatedJson> json = parseLocatedJson(sourceMgr, bufferId);
  if (failed(json))
    return failure();
  ConfigReader reader(sourceMgr, *json);
  const Object *root = json->value.getAsObject();
  if (!root)
    return reader.error("", "a DeepSpeed config is a JSON object");
  if (failed(reader.read(*root, worldSize)))
    return failure();
  if (origins)
    for (const auto &[option, key] : reader.keys) {
      auto [line, column] = sourceMgr.getLineAndColumn(json->locate(key), bufferId);
      (*origins)[option] = {
          key, sourceMgr.getMemoryBuffer(bufferId)->getBufferIdentifier().str(),
          line, column};
    }
  return std::move(reader.settings);
}
