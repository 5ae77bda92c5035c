//===- Stream.cpp - what all stream backends share ------------------------===//

#include "dsc/runtime/Stream.h"

#include "RunTask.h"

#include "dsc/runtime/Error.h"

#include <exception>

namespace dsc::rt {

Event::~Event() = default;

Stream::Stream(std::string name) : name_(std::move(name)) {}

Stream::~Stream() = default;

void Stream::enqueue(Task task, std::string label) {
  check(static_cast<bool>(task),
        "stream '" + name_ + "': enqueue of an empty task");
  enqueueTask(std::move(task), std::move(label));
}

std::unique_ptr<Event> Stream::recordEvent() {
  std::unique_ptr<Event> event = createEvent();
  record(*event);
  return event;
}

void Stream::throwForeignEvent(const Event &event, const char *action) const {
  throw Error("stream '" + name_ + "' (" + backend() + ") cannot " + action +
              " an event of the " + event.backend() + " backend");
}

namespace detail {

std::optional<std::string> runTask(const Stream::Task &task,
                                   std::uint64_t number,
                                   const std::string &label) {
  std::string what;
  try {
    task();
    return std::nullopt;
  } catch (const std::exception &e) {
    what = e.what();
  } catch (...) {
    what = "unknown exception";
  }
  std::string failure = "task #" + std::to_string(number);
  if (!label.empty())
    failure += " (" + label + ")";
  return failure + " failed: " + what;
}

} // namespace detail

} // namespace dsc::rt
