//===- DataEfficiencyConfig.cpp - curriculum_learning, data_efficiency ----===//
//
// DeepSpeed's legacy `curriculum_learning` block (sequence-length warmup)
// and `data_efficiency.data_routing.random_ltd` as --dsc-pipeline options:
// the schedules, which --dsc-data-variants turns into the artifact's step
// variants. Keys that describe the model to DeepSpeed's Python wrappers
// (hidden_state_order, model_mask_name, total_layer_num) have no effect:
// dsc finds the sequence dimension and the blocks in the graph.
//
//===----------------------------------------------------------------------===//

#include "ConfigReader.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::dsc;
using namespace mlir::dsc::config;

/// An array of integers at `key` as a comma-separated option value.
LogicalResult ConfigReader::setIntegerList(const Object &object, StringRef path,
                                           StringRef key, StringRef option) {
  const Value *list = get(object, path, key);
  if (!list)
    return success();
  const llvm::json::Array *items = list->getAsArray();
  std::vector<std::string> values;
  for (const Value &item : items ? *items : llvm::json::Array()) {
    std::optional<int64_t> n = item.getAsInteger();
    if (!n)
      return error(join(path, key), "expected an array of integers");
    values.push_back(std::to_string(*n));
  }
  if (!items || values.empty())
    return error(join(path, key), "expected a non-empty array of integers");
  return set(join(path, key), option, llvm::join(values, ","));
}

LogicalResult ConfigReader::readCurriculum(const Object &cl) {
  StringRef path = "curriculum_learning";
  bool ok = succeeded(onlyKeys(cl, path,
                               {"enabled", "curriculum_type", "min_difficulty",
                                "max_difficulty", "schedule_type",
                                "schedule_config"},
                               path));
  FailureOr<std::optional<bool>> on = boolean(cl, path, "enabled");
  if (failed(on))
    return failure();
  if (!on->value_or(false)) {
    noEffect(path, "not enabled (DeepSpeed's default)");
    return success(ok);
  }
  mark(join(path, "enabled"), KeyDisposition::Used, "curriculum learning");
  const Value *type = get(cl, path, "curriculum_type");
  if (!type || type->getAsString() != StringRef("seqlen"))
    ok &= succeeded(error(join(path, "curriculum_type"),
                          "dsc's curriculum is the sequence length (only "
                          "\"seqlen\")"));
  else
    mark(join(path, "curriculum_type"), KeyDisposition::Used, "seqlen");
  const Value *schedule = get(cl, path, "schedule_type");
  std::optional<StringRef> name = schedule ? schedule->getAsString() : std::nullopt;
  if (!name || !llvm::is_contained({StringRef("fixed_linear"), StringRef("fixed_root"),
                                    StringRef("fixed_discrete")},
                                   *name))
    return error(join(path, "schedule_type"),
                 "expected \"fixed_linear\", \"fixed_root\" or \"fixed_discrete\"");
  ok &= succeeded(set(join(path, "schedule_type"), "curriculum-schedule", name->str()));
  ok &= succeeded(setInteger(cl, path, "min_difficulty", "curriculum-min"));
  ok &= succeeded(setInteger(cl, path, "max_difficulty", "curriculum-max"));
  FailureOr<const Object *> config = section(cl, path, "schedule_config");
  if (failed(config) || !*config)
    return failed(config) ? failure()
                          : error(join(path, "schedule_config"), "missing");
  std::string configPath = join(path, "schedule_config");
  if (*name == "fixed_discrete") {
    ok &= succeeded(onlyKeys(**config, configPath, {"difficulty", "max_step"},
                             "fixed_discrete's schedule_config"));
    ok &= succeeded(setIntegerList(**config, configPath, "difficulty",
                                   "curriculum-difficulty"));
    ok &= succeeded(setIntegerList(**config, configPath, "max_step",
                                   "curriculum-max-step"));
    return success(ok);
  }
  SmallVector<StringRef> keys{"total_curriculum_step", "difficulty_step"};
  if (*name == "fixed_root")
    keys.push_back("root_degree");
  ok &= succeeded(onlyKeys(**config, configPath, keys,
                           name->str() + "'s schedule_config"));
  ok &= succeeded(setInteger(**config, configPath, "total_curriculum_step",
                             "curriculum-total-steps"));
  ok &= succeeded(setInteger(**config, configPath, "difficulty_step",
                             "curriculum-difficulty-step"));
  if (*name == "fixed_root")
    ok &= succeeded(setNumber(**config, configPath, "root_degree",
                              "curriculum-root-degree"));
  return success(ok);
}

LogicalResult ConfigReader::readDataEfficiency(const Object &de) {
  StringRef path = "data_efficiency";
  bool ok = succeeded(onlyKeys(de, path,
                               {"enabled", "seed", "data_sampling", "data_routing"},
                               path));
  FailureOr<std::optional<bool>> on = boolean(de, path, "enabled");
  if (failed(on))
    return failure();
  if (!on->value_or(false)) {
    noEffect(path, "not enabled (DeepSpeed's default)");
    return success(ok);
  }
  mark(join(path, "enabled"), KeyDisposition::Used, "data efficiency");
  ok &= succeeded(setInteger(de, path, "seed", "ltd-seed"));
  FailureOr<const Object *> sampling = section(de, path, "data_sampling");
  if (failed(sampling))
    return failure();
  if (*sampling) {
    FailureOr<std::optional<bool>> sampled =
        boolean(**sampling, join(path, "data_sampling"), "enabled");
    if (failed(sampled))
      return failure();
    if (sampled->value_or(false))
      ok &= succeeded(error(join(join(path, "data_sampling"), "enabled"),
                            "curriculum data sampling is not supported by "
                            "dsc (curriculum_learning's seqlen schedule is)"));
    else
      noEffect(join(path, "data_sampling"), "not enabled (DeepSpeed's default)");
  }
  FailureOr<const Object *> routing = section(de, path, "data_routing");
  if (failed(routing) || !*routing)
    return success(ok && succeeded(routing));
  std::string routingPath = join(path, "data_routing");
  ok &= succeeded(onlyKeys(**routing, routingPath, {"enabled", "random_ltd"},
                           routingPath));
  FailureOr<std::optional<bool>> routed = boolean(**routing, routingPath, "enabled");
  if (failed(routed))
    return failure();
  if (!routed->value_or(false)) {
    noEffect(routingPath, "not enabled (DeepSpeed's default)");
    return success(ok);
  }
  mark(join(routingPath, "enabled"), KeyDisposition::Used, "data routing");
  FailureOr<const Object *> ltd = section(**routing, routingPath, "random_ltd");
  if (failed(ltd) || !*ltd)
    return success(ok && succeeded(ltd));
  return success(ok && succeeded(readRandomLtd(**ltd)));
}

LogicalResult ConfigReader::readRandomLtd(const Object &ltd) {
  StringRef path = "data_efficiency.data_routing.random_ltd";
  bool ok = succeeded(onlyKeys(
      ltd, path,
      {"enabled", "total_layer_num", "random_ltd_layer_num", "random_ltd_layer_id",
       "model_mask_name", "model_type", "hidden_state_order",
       "random_ltd_schedule", "layer_token_lr_schedule"},
      "random_ltd"));
  FailureOr<std::optional<bool>> on = boolean(ltd, path, "enabled");
  if (failed(on))
    return failure();
  if (!on->value_or(false)) {
    noEffect(path, "not enabled (DeepSpeed's default)");
    return success(ok);
  }
  mark(join(path, "enabled"), KeyDisposition::Used, "random-LTD");
  for (StringRef key : {"total_layer_num", "model_mask_name", "hidden_state_order"})
    if (ltd.get(key))
      noEffect(join(path, key), "dsc finds the blocks and the sequence "
                                "dimension in the graph");
  if (const Value *type = get(ltd, path, "model_type")) {
    std::optional<StringRef> name = type->getAsString();
    if (name != StringRef("decoder") && name != StringRef("encoder"))
      ok &= succeeded(error(join(path, "model_type"),
                            "must be \"decoder\" or \"encoder\""));
    else
      noEffect(join(path, "model_type"),
               "dsc finds the attention in the graph: a causal mask over the "
               "kept tokens, an attention mask's kept rows and columns");
  }
  if (const Value *ids = get(ltd, path, "random_ltd_layer_id")) {
    ok &= succeeded(setIntegerList(ltd, path, "random_ltd_layer_id", "ltd-layers"));
    const llvm::json::Array *list = ids->getAsArray();
    FailureOr<std::optional<int64_t>> count =
        integer(ltd, path, "random_ltd_layer_num");
    if (succeeded(count) && *count && list && int64_t(list->size()) != **count)
      ok &= succeeded(error(join(path, "random_ltd_layer_num"),
                            "must count random_ltd_layer_id's " +
                                std::to_string(list->size()) + " layers"));
    else if (succeeded(count) && *count)
      noEffect(join(path, "random_ltd_layer_num"), "the length of random_ltd_layer_id");
  } else if (ltd.get("random_ltd_layer_num")) {
    ok &= succeeded(error(join(path, "random_ltd_layer_num"),
                          "give the layers as random_ltd_layer_id (without "
                          "it dsc drops tokens in every block but the first "
                          "and the last)"));
  }
  if (FailureOr<const Object *> lr = section(ltd, path, "layer_token_lr_schedule");
      failed(lr)) {
    ok = false;
  } else if (*lr) {
    FailureOr<std::optional<bool>> lrOn =
        boolean(**lr, join(path, "layer_token_lr_schedule"), "enabled");
    if (failed(lrOn) || lrOn->value_or(false))
      ok &= succeeded(error(join(join(path, "layer_token_lr_schedule"), "enabled"),
                            "the layer-token learning-rate schedule is not "
                            "supported by dsc"));
    else
      noEffect(join(path, "layer_token_lr_schedule"), "not enabled");
  }
  std::string schedulePath = join(path, "random_ltd_schedule");
  FailureOr<const Object *> schedule = section(ltd, path, "random_ltd_schedule");
  if (failed(schedule) || !*schedule)
    return failed(schedule) ? failure() : error(schedulePath, "missing");
  ok &= succeeded(onlyKeys(**schedule, schedulePath,
                           {"min_value", "max_value", "schedule_type",
                            "schedule_config"},
                           "random_ltd_schedule"));
  const Value *type = get(**schedule, schedulePath, "schedule_type");
  if (!type || type->getAsString() != StringRef("fixed_linear"))
    ok &= succeeded(error(join(schedulePath, "schedule_type"),
                          "expected \"fixed_linear\" (DeepSpeed's only "
                          "random-LTD schedule)"));
  else
    mark(join(schedulePath, "schedule_type"), KeyDisposition::Used, "fixed_linear");
  ok &= succeeded(setInteger(**schedule, schedulePath, "min_value", "ltd-min"));
  ok &= succeeded(setInteger(**schedule, schedulePath, "max_value", "ltd-max"));
  FailureOr<const Object *> config = section(**schedule, schedulePath, "schedule_config");
  if (failed(config) || !*config)
    return failed(config) ? failure()
                          : error(join(schedulePath, "schedule_config"), "missing");
  std::string configPath = join(schedulePath, "schedule_config");
  ok &= succeeded(onlyKeys(**config, configPath, {"require_steps", "seq_per_step"},
                           "random-LTD's schedule_config"));
  ok &= succeeded(setInteger(**config, configPath, "require_steps", "ltd-require-steps"));
  ok &= succeeded(setInteger(**config, configPath, "seq_per_step", "ltd-seq-per-step"));
  return success(ok);
}
