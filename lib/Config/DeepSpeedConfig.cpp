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
// This file reads the batch triple, the optimizer, the scheduler, the
// precision and dsc's own section; DeepSpeedFeatures.cpp the rest.
//
//===----------------------------------------------------------------------===//

#include "ConfigReader.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::config;

/// What an option is when nothing sets it (TrainingPipeline.h's defaults,
/// the schedules' and the scaler's), for the account of an "auto" key.
StringRef mlir::dsc::config::optionDefault(StringRef option) {
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
      .Case("offload-optimizer", "none")
      .Case("zero-sub-group-size", "1000000000")
      .Case("steps-per-print", "1 (dsc-run's default)")
      .Default("");
}

namespace {
constexpr StringRef kHandledKeys[] = {
    "train_batch_size", "train_micro_batch_size_per_gpu",
    "gradient_accumulation_steps", "optimizer", "scheduler", "fp16", "bf16",
    "gradient_clipping", "zero_optimization", "dsc", "tensor_parallel",
    "pipeline"};

} // namespace

LogicalResult ConfigReader::read(const Object &root, int64_t worldSize,
                                 MeshFlags flags) {
  // Every key and every section is read, so that one run reports each
  // mistake of the file.
  bool ok = true;
  auto check = [&](LogicalResult result) { ok &= succeeded(result); };
  for (const auto &[key, value] : root)
    if (!llvm::is_contained(kHandledKeys, StringRef(key)))
      check(readTopLevelKey(root, key));
  // The batch triple counts data-parallel ranks: the world over the mesh's
  // tensor and pipeline sizes (the command line's, else the config's).
  FailureOr<MeshFlags> mesh = readMesh(root);
  check(failed(mesh) ? failure() : success());
  int64_t tensor = flags.tensor ? flags.tensor : succeeded(mesh) ? mesh->tensor : 1;
  int64_t stages =
      flags.pipeline ? flags.pipeline : succeeded(mesh) ? mesh->pipeline : 1;
  int64_t replicas = std::max<int64_t>(tensor, 1) * std::max<int64_t>(stages, 1);
  // An indivisible mesh is --dsc-data-parallel's error, at the model.
  check(readBatch(root, worldSize % replicas == 0 ? worldSize / replicas
                                                   : worldSize));

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

// The device mesh: DeepSpeed's AutoTP training key
// (tensor_parallel.autotp_size; tp_size is its inference spelling) and its
// pipeline engine's stage count (pipeline.stages).
FailureOr<MeshFlags> ConfigReader::readMesh(const Object &root) {
  MeshFlags mesh{1, 1};
  FailureOr<const Object *> tensor = section(root, "", "tensor_parallel");
  FailureOr<const Object *> pipeline = section(root, "", "pipeline");
  if (failed(tensor) || failed(pipeline))
    return failure();
  bool ok = true;
  if (*tensor) {
    StringRef path = "tensor_parallel";
    ok &= succeeded(onlyKeys(**tensor, path, {"autotp_size", "tp_size"},
                             "tensor_parallel"));
    if ((*tensor)->get("autotp_size") && (*tensor)->get("tp_size"))
      ok &= succeeded(error(join(path, "tp_size"),
                            "give one of autotp_size and tp_size"));
    for (StringRef key : {"autotp_size", "tp_size"}) {
      if (failed(setInteger(**tensor, path, key, "tensor-parallel"))) {
        ok = false;
        continue;
      }
      if (std::optional<int64_t> size = *integer(**tensor, path, key))
        mesh.tensor = *size;
    }
  }
  if (*pipeline) {
    StringRef path = "pipeline";
    ok &= succeeded(onlyKeys(**pipeline, path, {"stages"}, "pipeline"));
    if (failed(setInteger(**pipeline, path, "stages", "pipeline-parallel")))
      ok = false;
    else if (std::optional<int64_t> stages = *integer(**pipeline, path, "stages"))
      mesh.pipeline = *stages;
  }
  if (!ok)
    return failure();
  return mesh;
}

LogicalResult ConfigReader::readDsc(const Object &dsc) {
  bool ok = succeeded(
      onlyKeys(dsc, "dsc", {"moe", "distill"}, "the dsc section"));
  FailureOr<const Object *> moe = section(dsc, "dsc", "moe");
  FailureOr<const Object *> distill = section(dsc, "dsc", "distill");
  if (failed(moe) || failed(distill))
    return failure();
  ok &= !*moe || succeeded(readMoe(**moe));
  ok &= !*distill || succeeded(readDistill(**distill));
  return success(ok);
}

// dsc.distill: Megatron-DeepSpeed's --kd-beta-ce and --kd-temp, the
// teacher's export (its --load-teacher is a checkpoint: dsc-run takes the
// teacher's weights with --teacher-weights), and the step staged KD stops
// after (the paper's; Megatron-DeepSpeed has no flag for it).
LogicalResult ConfigReader::readDistill(const Object &distill) {
  StringRef path = "dsc.distill";
  bool ok = succeeded(onlyKeys(distill, path,
                               {"teacher", "beta", "temperature",
                                "teacher_precision", "stop_step"},
                               "dsc.distill"));
  ok &= succeeded(setNumber(distill, path, "beta", "kd-beta"));
  ok &= succeeded(setNumber(distill, path, "temperature", "kd-temperature"));
  ok &= succeeded(setInteger(distill, path, "stop_step", "kd-stop-step"));
  for (auto [key, option] :
       {std::pair<StringRef, StringRef>{"teacher", "distill-from"},
        {"teacher_precision", "kd-teacher-precision"}}) {
    const Value *value = get(distill, path, key);
    if (!value)
      continue;
    std::optional<StringRef> text = value->getAsString();
    if (!text) {
      ok &= succeeded(error(join(path, key), "expected a string"));
      continue;
    }
    ok &= succeeded(set(join(path, key), option, text->str()));
  }
  if (!distill.get("teacher"))
    ok &= succeeded(error(path, "needs \"teacher\": the teacher's exported "
                                "model.mlir"));
  return success(ok);
}

// dsc.moe: deepspeed.moe.layer.MoE's argument names where it has them.
LogicalResult ConfigReader::readMoe(const Object &moe) {
  StringRef path = "dsc.moe";
  bool ok = succeeded(onlyKeys(moe, path,
                               {"num_experts", "k", "capacity_factor",
                                "eval_capacity_factor", "min_capacity",
                                "drop_tokens", "aux_loss_coef", "every",
                                "experts_per_layer", "init", "seed", "ep_size",
                                "use_rts", "noisy_gate_policy", "use_residual",
                                "top2_2nd_expert_sampling",
                                "duplicate_token_dropping"},
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
  for (auto [key, option] :
       {std::pair<StringRef, StringRef>{"drop_tokens", "moe-drop-tokens"},
        {"use_residual", "moe-residual"},
        {"use_rts", "moe-use-rts"},
        {"top2_2nd_expert_sampling", "moe-top2-2nd-expert-sampling"},
        {"duplicate_token_dropping", "moe-duplicate-token-dropping"}})
    ok &= succeeded(setBoolean(moe, path, key, option));
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
  // DeepSpeed's spellings ("None", "Jitter", "RSample") or dsc's.
  if (const Value *policy = get(moe, path, "noisy_gate_policy")) {
    std::optional<StringRef> name = policy->getAsString();
    std::string lower = name ? name->lower() : "";
    if (lower != "none" && lower != "jitter" && lower != "rsample")
      ok &= succeeded(error(join(path, "noisy_gate_policy"),
                            "expected null, \"None\", \"Jitter\" or "
                            "\"RSample\""));
    else
      ok &= succeeded(set(join(path, "noisy_gate_policy"),
                          "moe-noisy-gate-policy", lower));
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
                               int64_t worldSize, MeshFlags flags,
                               ConfigOrigins *origins,
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
  bool ok = succeeded(reader.read(*root, worldSize, flags));
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

