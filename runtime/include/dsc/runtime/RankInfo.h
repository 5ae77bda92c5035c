//===- RankInfo.h - this process's rank, as the launcher set it -*- C++ -*-===//
//
// Launchers tell each process its rank and the job's size through
// environment variables. detectRankFromEnvironment reads them in this order,
// the first launcher whose rank variable is set wins:
//
//   1. OpenMPI's mpirun      OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE
//   2. a PMIx launcher       PMIX_RANK / (see below)
//   3. Slurm's srun          SLURM_PROCID / SLURM_NTASKS
//   4. torchrun and friends  RANK / WORLD_SIZE
//
// PMIx publishes no size variable: the size lives in the PMIx server, which
// only MPI_Init asks. PMIX_RANK is therefore paired with the first size
// variable any launcher set (OMPI_COMM_WORLD_SIZE, SLURM_NTASKS, WORLD_SIZE;
// srun --mpi=pmix sets SLURM_NTASKS) and, when none is set, the size is left
// unknown (nullopt) rather than guessed; the MPI communicator then checks
// the rank alone.
//
// When no rank variable is set the process runs alone: rank 0 of 1.
// A set variable whose value is malformed (empty, not a decimal integer,
// negative, a size of 0, a rank not below the size) is an Error naming the
// variable; so is a rank variable whose size variable is missing (for the
// launchers that always set both).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_RANKINFO_H
#define DSC_RUNTIME_RANKINFO_H

#include "dsc/runtime/EnvLookup.h"

#include <optional>
#include <string>

namespace dsc::rt {

/// Which launcher's variables the rank came from.
enum class RankSource { None, OpenMpi, Pmix, Slurm, WorldSizeEnv };

/// "none", "OpenMPI", "PMIx", "Slurm", "RANK/WORLD_SIZE".
const char *name(RankSource source);

struct RankInfo {
  int rank = 0;
  /// nullopt only for PMIx without any size variable (see above).
  std::optional<int> size = 1;
  RankSource source = RankSource::None;
  /// The variables the figures came from, for messages ("" when none).
  std::string rankVariable;
  std::string sizeVariable;
};

/// Reads the launcher's rank and size through `lookup` (see the order above).
/// Throws Error on a malformed value.
RankInfo detectRankFromEnvironment(const EnvLookup &lookup);

/// The same over this process's environment.
RankInfo detectRankFromEnvironment();

/// Throws Error unless the launcher's figures agree with what the
/// communication library reports (e.g. MPI_Comm_rank/size of
/// MPI_COMM_WORLD): a mismatch means a wrong launcher or a mis-set variable,
/// and every rank-dependent decision would be wrong. Unknown figures (source
/// None, size nullopt) are not compared.
void checkRankAgrees(const RankInfo &fromEnvironment, int rank, int size,
                     const std::string &libraryName);

} // namespace dsc::rt

#endif // DSC_RUNTIME_RANKINFO_H
