//===- EnvLookup.h - environment variables as a function --------*- C++ -*-===//
//
// Code that reads the environment takes the lookup as a callback, so that
// tests can hand it a map instead of setting real variables (setenv is not
// thread-safe and leaks between tests).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_ENVLOOKUP_H
#define DSC_RUNTIME_ENVLOOKUP_H

#include <functional>
#include <optional>
#include <string>

namespace dsc::rt {

/// The value of the variable `name`, or nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const char *name)>;

/// The lookup that reads this process's environment (getenv).
std::optional<std::string> processEnvironment(const char *name);

} // namespace dsc::rt

#endif // DSC_RUNTIME_ENVLOOKUP_H
