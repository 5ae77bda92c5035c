#include "dsc/runtime/Error.h"

#include <gtest/gtest.h>

TEST(RuntimeError, CheckThrowsWithTheMessage) {
  EXPECT_NO_THROW(dsc::rt::check(true, "unused"));
  try {
    dsc::rt::check(false, "weights.safetensors: missing tensor 'w'");
    FAIL() << "check(false) must throw";
  } catch (const dsc::rt::Error &e) {
    EXPECT_STREQ(e.what(), "weights.safetensors: missing tensor 'w'");
  }
}
