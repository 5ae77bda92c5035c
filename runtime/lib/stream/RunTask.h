//===- RunTask.h - running a host task, capturing its failure ---*- C++ -*-===//

#ifndef DSC_RUNTIME_LIB_STREAM_RUNTASK_H
#define DSC_RUNTIME_LIB_STREAM_RUNTASK_H

#include "dsc/runtime/Stream.h"

#include <cstdint>
#include <optional>
#include <string>

namespace dsc::rt::detail {

/// Runs `task`, the stream's task number `number` (from 1). Returns nullopt,
/// or, when it throws, "task #<number> (<label>) failed: <what()>" (without
/// the parenthesis when `label` is empty; "unknown exception" for what is
/// not a std::exception).
std::optional<std::string> runTask(const Stream::Task &task,
                                   std::uint64_t number,
                                   const std::string &label);

} // namespace dsc::rt::detail

#endif // DSC_RUNTIME_LIB_STREAM_RUNTASK_H
