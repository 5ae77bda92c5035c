//===- Error.h - runtime errors ---------------------------------*- C++ -*-===//
//
// The runtime reports bad input (missing files, corrupt checkpoints, shape
// mismatches) by throwing dsc::rt::Error with a one-line message; dsc-run
// prints it and exits non-zero.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_ERROR_H
#define DSC_RUNTIME_ERROR_H

#include <stdexcept>
#include <string>

namespace dsc::rt {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string &message) : std::runtime_error(message) {}
};

/// Throws Error(message) when `condition` is false.
void check(bool condition, const std::string &message);

} // namespace dsc::rt

#endif // DSC_RUNTIME_ERROR_H
