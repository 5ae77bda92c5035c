//===- ConfigReader.h - reading ds_config.json, key by key ------*- C++ -*-===//
//
// The reader behind readDeepSpeedConfig (DeepSpeedConfig.h), shared by the
// files that read its sections: DeepSpeedConfig.cpp (the batch, optimizer,
// scheduler, precision and dsc sections) and DeepSpeedFeatures.cpp (the
// features dsc lacks, monitors, checkpoints, ZeRO). Private to lib/Config.
//
// Every key ends with a disposition (mark), so that dsc-opt can say what it
// did with each; errors are collected and printed in the file's order, so
// that one run reports every mistake of the file.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_CONFIG_CONFIGREADER_H
#define DSC_LIB_CONFIG_CONFIGREADER_H

#include "dsc/Config/DeepSpeedConfig.h"
#include "dsc/Config/LocatedJson.h"
#include "dsc/Config/OptionRanges.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace mlir::dsc::config {

using llvm::json::Object;
using llvm::json::Value;

inline std::string formatNumber(double value) {
  return formatPipelineNumber(value);
}

/// What an option is when nothing sets it (TrainingPipeline.h's defaults,
/// the schedules' and the scaler's), for the account of an "auto" key.
StringRef optionDefault(StringRef option);

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

  /// Sets `option` from the boolean at `key` of `object`, if there is one.
  LogicalResult setBoolean(const Object &object, StringRef path, StringRef key,
                           StringRef option) {
    FailureOr<std::optional<bool>> value = boolean(object, path, key);
    if (failed(value))
      return failure();
    if (!*value)
      return success();
    return set(join(path, key), option, **value ? "true" : "false");
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

  LogicalResult read(const Object &root, int64_t worldSize, MeshFlags flags);
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
  /// An offload section's `nvme_path` (at `at`), when given: --nvme-path.
  LogicalResult readNvmePath(const Object &offload, StringRef at);
  LogicalResult readDsc(const Object &dsc);
  FailureOr<MeshFlags> readMesh(const Object &root);
  LogicalResult readMoe(const Object &moe);
  LogicalResult readCurriculum(const Object &cl);
  LogicalResult readDataEfficiency(const Object &de);
  LogicalResult readRandomLtd(const Object &ltd);
  /// Sets `option` from the array of integers at `key`, if there is one.
  LogicalResult setIntegerList(const Object &object, StringRef path,
                               StringRef key, StringRef option);
  LogicalResult readDistill(const Object &distill);

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

} // namespace mlir::dsc::config

#endif // DSC_LIB_CONFIG_CONFIGREADER_H
