#include "dsc/runtime/Error.h"

namespace dsc::rt {

void check(bool condition, const std::string &message) {
  if (!condition)
    throw Error(message);
}

} // namespace dsc::rt
