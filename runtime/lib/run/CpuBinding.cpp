//===- CpuBinding.cpp - is a rank bound to fewer cores than it could use? --===//

#include "dsc/runtime/CpuBinding.h"

#include <sched.h>
#include <unistd.h>

namespace dsc::rt {

std::optional<std::string> cpuBindingWarning(int rank, int allowed, int online,
                                             int ranksOnNode) {
  if (allowed <= 0 || online <= 0 || ranksOnNode <= 0)
    return std::nullopt;
  int share = (online + ranksOnNode - 1) / ranksOnNode;
  if (share < 2 || allowed >= share)
    return std::nullopt;
  return "dsc-run: warning: rank " + std::to_string(rank) + " may run on " +
         std::to_string(allowed) + " of the " + std::to_string(online) +
         " CPUs of this machine, which has " + std::to_string(ranksOnNode) +
         " rank(s): its OpenMP threads (which run the GEMMs too) share " +
         (allowed == 1 ? std::string("that core") : std::string("those")) +
         " (mpirun binds each rank to one core for small jobs); run mpirun "
         "with --bind-to none, or --map-by slot:PE=" +
         std::to_string(share) + ", to give each rank its " +
         std::to_string(share) + " cores";
}

int allowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return 0;
  return CPU_COUNT(&set);
}

int onlineCpus() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 0;
}

} // namespace dsc::rt
