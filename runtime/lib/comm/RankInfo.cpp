#include "dsc/runtime/RankInfo.h"

#include "dsc/runtime/Error.h"

#include <charconv>

namespace dsc::rt {

namespace {

/// The launchers, in the order they are tried (RankInfo.h).
struct Launcher {
  RankSource source;
  const char *rankVariable;
  const char *sizeVariable; // nullptr: PMIx, which has none
};

constexpr Launcher kLaunchers[] = {
    {RankSource::OpenMpi, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {RankSource::Pmix, "PMIX_RANK", nullptr},
    {RankSource::Slurm, "SLURM_PROCID", "SLURM_NTASKS"},
    {RankSource::WorldSizeEnv, "RANK", "WORLD_SIZE"},
};

/// Where PMIX_RANK's size comes from, first set wins.
constexpr const char *kPmixSizeVariables[] = {"OMPI_COMM_WORLD_SIZE",
                                              "SLURM_NTASKS", "WORLD_SIZE"};

/// The decimal integer `value` of `variable`, at least `minimum`. Only plain
/// digits (and a '-' that the range check then rejects): a value with
/// spaces, a '+', or trailing characters is a mis-set variable.
int parseCount(const char *variable, const std::string &value, int minimum) {
  const char *what =
      minimum > 0 ? "a positive integer" : "a non-negative integer";
  int parsed = 0;
  const char *end = value.data() + value.size();
  auto [stop, ec] = std::from_chars(value.data(), end, parsed);
  check(!value.empty() && ec == std::errc() && stop == end && parsed >= minimum,
        std::string(variable) + "='" + value + "' is not " + what);
  return parsed;
}

} // namespace

const char *name(RankSource source) {
  switch (source) {
  case RankSource::None:
    return "none";
  case RankSource::OpenMpi:
    return "OpenMPI";
  case RankSource::Pmix:
    return "PMIx";
  case RankSource::Slurm:
    return "Slurm";
  case RankSource::WorldSizeEnv:
    return "RANK/WORLD_SIZE";
  }
  throw Error("invalid RankSource " + std::to_string(int(source)));
}

RankInfo detectRankFromEnvironment(const EnvLookup &lookup) {
  for (const Launcher &launcher : kLaunchers) {
    std::optional<std::string> rankValue = lookup(launcher.rankVariable);
    if (!rankValue)
      continue;
    RankInfo info;
    info.source = launcher.source;
    info.rankVariable = launcher.rankVariable;
    info.rank = parseCount(launcher.rankVariable, *rankValue, 0);
    if (launcher.sizeVariable) {
      info.sizeVariable = launcher.sizeVariable;
      std::optional<std::string> sizeValue = lookup(launcher.sizeVariable);
      check(sizeValue.has_value(),
            info.rankVariable + " is set but " + info.sizeVariable + " is not");
      info.size = parseCount(launcher.sizeVariable, *sizeValue, 1);
    } else {
      info.size = std::nullopt;
      for (const char *sizeVariable : kPmixSizeVariables) {
        if (std::optional<std::string> sizeValue = lookup(sizeVariable)) {
          info.sizeVariable = sizeVariable;
          info.size = parseCount(sizeVariable, *sizeValue, 1);
          break;
        }
      }
    }
    check(!info.size || info.rank < *info.size,
          info.rankVariable + "=" + std::to_string(info.rank) +
              " is not below " + info.sizeVariable + "=" +
              std::to_string(info.size.value_or(0)));
    return info;
  }
  return RankInfo{};
}

RankInfo detectRankFromEnvironment() {
  return detectRankFromEnvironment(processEnvironment);
}

void checkRankAgrees(const RankInfo &env, int rank, int size,
                     const std::string &libraryName) {
  if (env.source == RankSource::None)
    return;
  check(env.rank == rank, "the launcher says rank " + std::to_string(env.rank) +
                              " (" + env.rankVariable + ") but " + libraryName +
                              " says rank " + std::to_string(rank));
  check(!env.size || *env.size == size,
        "the launcher says " + std::to_string(env.size.value_or(0)) +
            " ranks (" + env.sizeVariable + ") but " + libraryName + " says " +
            std::to_string(size));
}

} // namespace dsc::rt
