//===- ErrorOf.h - the message of the Error a test expects ------*- C++ -*-===//
//
// Tests check what an Error says (EXPECT_THAT(errorOf(...), HasSubstr(...))),
// not only that one was thrown.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_TESTS_ERROROF_H
#define DSC_RUNTIME_TESTS_ERROROF_H

#include "dsc/runtime/Error.h"

#include <string>

namespace dsc::rt::test {

/// The message of the Error that `body` throws ("" if none).
template <typename Body> std::string errorOf(Body &&body) {
  try {
    body();
  } catch (const Error &error) {
    return error.what();
  }
  return "";
}

} // namespace dsc::rt::test

#endif // DSC_RUNTIME_TESTS_ERROROF_H
