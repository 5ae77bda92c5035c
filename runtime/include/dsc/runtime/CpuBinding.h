//===- CpuBinding.h - is a rank bound to fewer cores than it could use? ----===//
//
// `mpirun -np N` binds each rank to one core when N <= 2 (OpenMPI's default
// for small jobs), so dsc-run's OpenMP and OpenBLAS threads all share that
// core: the GPT-2 124M CPU step takes 8.0 s under `mpirun -np 1` against
// 5.3-5.5 s with `--bind-to none` on a 2-core machine. dsc-run says so.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_CPUBINDING_H
#define DSC_RUNTIME_CPUBINDING_H

#include <optional>
#include <string>

namespace dsc::rt {

/// The warning dsc-run prints when a rank may run on `allowed` CPUs (its
/// affinity mask) while the node has `online` CPUs for `ranksOnNode` ranks:
/// when it is held to fewer than its share, ceil(online / ranksOnNode) and
/// at least 2. Nothing (nullopt) otherwise, or when a count is unknown (<= 0).
std::optional<std::string> cpuBindingWarning(int rank, int allowed, int online,
                                             int ranksOnNode);

/// This process's allowed CPUs (sched_getaffinity) and the online CPUs of
/// the machine; 0 when unknown.
int allowedCpus();
int onlineCpus();

} // namespace dsc::rt

#endif // DSC_RUNTIME_CPUBINDING_H
