#include "dsc/runtime/EnvLookup.h"

#include <cstdlib>

namespace dsc::rt {

std::optional<std::string> processEnvironment(const char *name) {
  if (const char *value = std::getenv(name))
    return std::string(value);
  return std::nullopt;
}

} // namespace dsc::rt
