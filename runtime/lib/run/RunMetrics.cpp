//===- RunMetrics.cpp - the per-step log line and the metrics CSV ---------===//

#include "dsc/runtime/Run.h"

#include <cerrno>
#include <cstring>

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

} // namespace

StepRecord makeStepRecord(int64_t step, double loss, ElementType lossType,
                          double seconds, int64_t globalBatch,
                          int64_t seqLen) {
  StepRecord record;
  record.step = step;
  record.loss = loss;
  record.lossType = lossType;
  record.seconds = seconds;
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

std::string formatStepLine(const StepRecord &record) {
  return "step=" + std::to_string(record.step) +
         " loss=" + formatLoss(record.loss, record.lossType) +
         " samples/s=" + figure(record.samplesPerSecond) +
         " tokens/s=" + figure(record.tokensPerSecond) +
         " step_time_s=" + figure(record.seconds) +
         (record.lr ? " lr=" + format("%.9g", *record.lr) : std::string()) +
         (record.lossScale ? " loss_scale=" + format("%.9g", *record.lossScale)
                           : std::string()) +
         (record.skipped ? " skipped=" + std::to_string(*record.skipped)
                         : std::string());
}

MetricsCsv::MetricsCsv(const std::string &path) : path_(path) {
  file_ = std::fopen(path.c_str(), "w");
  if (!file_)
    throw Error(path + ": cannot write metrics: " + std::strerror(errno));
  if (std::fputs("step,loss,step_time_s,samples_per_s,tokens_per_s\n",
                 file_) < 0 ||
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
  std::string row = std::to_string(record.step) + "," +
                    formatLoss(record.loss, record.lossType) + "," +
                    figure(record.seconds) + "," +
                    figure(record.samplesPerSecond) + "," +
                    figure(record.tokensPerSecond) + "\n";
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

} // namespace dsc::rt
