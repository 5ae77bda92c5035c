//===- RunMetrics.cpp - the per-step log line and the metrics files -------===//

#include "dsc/runtime/Run.h"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

namespace dsc::rt {

namespace {

std::string format(const char *pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

/// Throughput and times: six significant digits are plenty to read, and
/// %g keeps tiny step times from printing as 0.000000.
std::string figure(double value) { return format("%.6g", value); }

/// Scalars the artifact computed in f32 (lr, norms, scales): nine digits
/// round-trip a float.
std::string scalar(double value) { return format("%.9g", value); }

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

std::string gib(size_t bytes) {
  return format("%.4g", static_cast<double>(bytes) / kBytesPerGiB);
}

} // namespace

StepRecord makeStepRecord(int64_t step, double loss, ElementType lossType,
                          double seconds, int64_t globalBatch,
                          int64_t seqLen) {
  StepRecord record;
  record.step = step;
  record.loss = loss;
  record.lossType = lossType;
  record.seconds = seconds;
  record.samples = step * globalBatch;
  if (seconds > 0) {
    record.samplesPerSecond = static_cast<double>(globalBatch) / seconds;
    record.tokensPerSecond =
        static_cast<double>(globalBatch) * static_cast<double>(seqLen) /
        seconds;
  }
  return record;
}

std::string formatLoss(double loss, ElementType type) {
  return format(type == ElementType::F64 ? "%.17g" : "%.9g", loss);
}

std::string localTimestamp() {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &local);
  return text;
}

std::string formatStepLine(const StepRecord &record) {
  std::string line = "step=" + std::to_string(record.step) +
                     " loss=" + formatLoss(record.loss, record.lossType);
  for (const auto &[name, value] : record.lossTerms)
    line += " " + name + "=" + formatLoss(value, record.lossType);
  line += " samples/s=" + figure(record.samplesPerSecond) +
                     " tokens/s=" + figure(record.tokensPerSecond) +
                     " step_time_s=" + figure(record.seconds);
  if (record.averageSamplesPerSecond > 0)
    line += " avg_samples/s=" + figure(record.averageSamplesPerSecond) +
            " avg_tokens/s=" + figure(record.averageTokensPerSecond);
  if (record.lr)
    line += " lr=" + scalar(*record.lr);
  if (record.gradNorm)
    line += " grad_norm=" + scalar(*record.gradNorm);
  if (record.lossScale)
    line += " loss_scale=" + scalar(*record.lossScale);
  if (record.skipped)
    line += " skipped=" + std::to_string(*record.skipped);
  if (record.moeDropped)
    line += " moe_dropped=" + std::to_string(*record.moeDropped);
  if (record.memoryBytes)
    line += " mem_gib=" + gib(*record.memoryBytes);
  if (record.seqlen)
    line += " seqlen=" + std::to_string(*record.seqlen);
  if (record.ltdKept)
    line += " ltd_kept=" + std::to_string(*record.ltdKept);
  if (record.layerTokens)
    line += " layer_tokens=" + std::to_string(*record.layerTokens);
  if (!record.timestamp.empty())
    line += " time=" + record.timestamp;
  return line;
}

MetricsCsv::MetricsCsv(const std::string &path, bool dataColumns,
                       std::vector<std::string> expertLayers,
                       std::vector<std::string> lossTerms)
    : path_(path), experts_(!expertLayers.empty()), dataColumns_(dataColumns) {
  file_ = std::fopen(path.c_str(), "w");
  if (!file_)
    throw Error(path + ": cannot write metrics: " + std::strerror(errno));
  std::string header = "step,loss,step_time_s,samples_per_s,tokens_per_s,lr,"
                       "grad_norm,loss_scale,memory_gib,time";
  if (dataColumns)
    header += ",seqlen,ltd_kept,layer_tokens";
  if (experts_)
    header += ",moe_dropped";
  for (const std::string &layer : expertLayers)
    header += ",exp_counts:" + layer;
  for (const std::string &term : lossTerms)
    header += "," + term;
  header += "\n";
  if (std::fputs(header.c_str(), file_) < 0 ||
      std::fflush(file_) != 0) {
    std::string reason = std::strerror(errno);
    std::fclose(file_);
    throw Error(path + ": cannot write metrics: " + reason);
  }
}

MetricsCsv::~MetricsCsv() {
  if (file_)
    std::fclose(file_);
}

void MetricsCsv::append(const StepRecord &record) {
  check(file_ != nullptr, path_ + ": metrics file is closed");
  auto optional = [](const std::optional<double> &value) {
    return value ? scalar(*value) : std::string();
  };
  std::string row =
      std::to_string(record.step) + "," +
      formatLoss(record.loss, record.lossType) + "," + figure(record.seconds) +
      "," + figure(record.samplesPerSecond) + "," +
      figure(record.tokensPerSecond) + "," + optional(record.lr) + "," +
      optional(record.gradNorm) + "," + optional(record.lossScale) + "," +
      (record.memoryBytes ? gib(*record.memoryBytes) : std::string()) + "," +
      record.timestamp;
  if (dataColumns_) {
    auto count = [](const std::optional<int64_t> &value) {
      return value ? std::to_string(*value) : std::string();
    };
    row += "," + count(record.seqlen) + "," + count(record.ltdKept) + "," +
           count(record.layerTokens);
  }
  if (experts_)
    row += "," + (record.moeDropped ? std::to_string(*record.moeDropped)
                                    : std::string());
  for (const std::vector<int64_t> &counts : record.expCounts) {
    row += ",";
    for (size_t e = 0; e < counts.size(); ++e)
      row += (e ? " " : "") + std::to_string(counts[e]);
  }
  for (const auto &term : record.lossTerms)
    row += "," + formatLoss(term.second, record.lossType);
  row += "\n";
  if (std::fputs(row.c_str(), file_) < 0 || std::fflush(file_) != 0)
    throw Error(path_ + ": cannot write metrics: " + std::strerror(errno));
}

void MetricsCsv::close() {
  if (!file_)
    return;
  std::FILE *file = file_;
  file_ = nullptr;
  if (std::fclose(file) != 0)
    throw Error(path_ + ": cannot write metrics: " + std::strerror(errno));
}

CsvMonitor::CsvMonitor(const std::string &directory) : directory_(directory) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error || !std::filesystem::is_directory(directory))
    throw Error(directory + ": cannot create the csv_monitor directory: " +
                (error ? error.message() : "not a directory"));
}

void CsvMonitor::write(const std::string &name, int64_t samples,
                       const std::string &value) {
  std::string path = directory_ + "/Train_Samples_" + name + ".csv";
  std::FILE *file = std::fopen(path.c_str(), "a");
  if (!file)
    throw Error(path + ": cannot write csv_monitor file: " +
                std::strerror(errno));
  bool fresh = std::ftell(file) == 0;
  std::string text = (fresh ? "step," + name + "\n" : std::string()) +
                     std::to_string(samples) + "," + value + "\n";
  bool written = std::fputs(text.c_str(), file) >= 0;
  if (std::fclose(file) != 0 || !written)
    throw Error(path + ": cannot write csv_monitor file: " +
                std::strerror(errno));
}

void CsvMonitor::append(const StepRecord &record) {
  write("train_loss", record.samples, formatLoss(record.loss, record.lossType));
  for (const auto &[name, value] : record.lossTerms)
    write("train_" + name, record.samples, formatLoss(value, record.lossType));
  if (record.lr)
    write("lr", record.samples, scalar(*record.lr));
  if (record.lossScale)
    write("loss_scale", record.samples, scalar(*record.lossScale));
  if (record.gradNorm)
    write("grad_norm", record.samples, scalar(*record.gradNorm));
  if (record.memoryBytes)
    write("memory_gib", record.samples, gib(*record.memoryBytes));
  if (record.moeDropped)
    write("moe_dropped", record.samples, std::to_string(*record.moeDropped));
  // Data schedules: the step's lengths and DeepSpeed's layer-token counter,
  // under the step line's names.
  if (record.seqlen)
    write("seqlen", record.samples, std::to_string(*record.seqlen));
  if (record.ltdKept)
    write("ltd_kept", record.samples, std::to_string(*record.ltdKept));
  if (record.layerTokens)
    write("layer_tokens", record.samples, std::to_string(*record.layerTokens));
}

StepLog::StepLog(int64_t stepsPerPrint, int64_t firstStep, int64_t lastStep,
                 std::unique_ptr<MetricsCsv> metrics,
                 std::unique_ptr<CsvMonitor> monitor)
    : stepsPerPrint_(stepsPerPrint > 0 ? stepsPerPrint : 1),
      firstStep_(firstStep), lastStep_(lastStep), metrics_(std::move(metrics)),
      monitor_(std::move(monitor)) {}

StepLog::~StepLog() = default;

bool StepLog::prints(int64_t step) const {
  return step == firstStep_ || step == lastStep_ || step % stepsPerPrint_ == 0;
}

void StepLog::add(StepRecord &record) {
  double samples = record.samplesPerSecond * record.seconds;
  double tokens = record.tokensPerSecond * record.seconds;
  if (steps_++ == 0) {
    firstSeconds_ = record.seconds;
    firstSamples_ = static_cast<int64_t>(samples + 0.5);
    firstTokens_ = static_cast<int64_t>(tokens + 0.5);
  } else {
    seconds_ += record.seconds;
    samples_ += static_cast<int64_t>(samples + 0.5);
    tokens_ += static_cast<int64_t>(tokens + 0.5);
  }
  // The first step warms up (caches, thread pools, first-touch pages):
  // it counts only while it is the only one.
  double seconds = steps_ == 1 ? firstSeconds_ : seconds_;
  if (seconds > 0) {
    record.averageSamplesPerSecond =
        static_cast<double>(steps_ == 1 ? firstSamples_ : samples_) / seconds;
    record.averageTokensPerSecond =
        static_cast<double>(steps_ == 1 ? firstTokens_ : tokens_) / seconds;
  }
  record.timestamp = localTimestamp();
  if (prints(record.step)) {
    std::printf("%s\n", formatStepLine(record).c_str());
    std::fflush(stdout);
  }
  if (metrics_) {
    metrics_->append(record);
    if (record.step == lastStep_)
      metrics_->close();
  }
  if (monitor_)
    monitor_->append(record);
}

} // namespace dsc::rt
