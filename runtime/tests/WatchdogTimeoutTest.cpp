// The program behind the CommWatchdogTimeout tests (WatchdogTimeoutCheck.py
// runs it under mpirun with DSC_COLLECTIVE_TIMEOUT=2): two collectives
// succeed, then rank 1 never joins the third. Rank 0's watchdog must end the
// job with the report naming collective #3; if the allReduce ever returned,
// rank 0 says so and exits 0, which the check counts as a failure.
//
// With the argument "expert" (4 ranks), the same happens on the Expert
// group of expert-parallel size 2 (ranks {0, 1} and {2, 3}), a communicator
// split from the job's with its own numbering: rank 0's report names that
// group, and its abort must end the whole job, ranks 2 and 3 included,
// which finish their group's collectives and then wait outside any.

#include "dsc/runtime/CommGroups.h"
#include "dsc/runtime/MpiComm.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace {

/// Longer than the check waits for the job: a rank sleeping this long can
/// only be ended in time by the watchdog's abort.
void sleepPastTheCheck() {
  std::this_thread::sleep_for(std::chrono::seconds(90));
}

void hangOn(dsc::rt::Communicator &comm, int stuckRank) {
  float value = 1;
  comm.allReduce(&value, &value, 1, dsc::rt::CommDType::F32,
                 dsc::rt::ReduceOp::Sum);
  comm.barrier();
  if (comm.rank() == stuckRank) {
    sleepPastTheCheck(); // never joins
    return;
  }
  comm.allReduce(&value, &value, 1, dsc::rt::CommDType::F32,
                 dsc::rt::ReduceOp::Sum);
  std::fprintf(stderr,
               "rank %d: the collective completed; the watchdog did not "
               "fire\n",
               comm.jobRank());
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  {
    dsc::rt::MpiCommunicator world; // timeout from DSC_COLLECTIVE_TIMEOUT
    if (argc > 1 && std::strcmp(argv[1], "expert") == 0) {
      dsc::rt::GroupCommunicators groups(world, 2);
      dsc::rt::Communicator &expert =
          *groups.communicator(dsc::rt::CommGroup::Expert);
      // Rank 1 is stuck in the first group; the second group completes
      // its three collectives.
      if (world.rank() < 2) {
        hangOn(expert, 1);
      } else {
        float value = 1;
        for (int i = 0; i < 3; ++i)
          expert.allReduce(&value, &value, 1, dsc::rt::CommDType::F32,
                           dsc::rt::ReduceOp::Sum);
        sleepPastTheCheck();
      }
    } else {
      hangOn(world, 1);
    }
  }
  MPI_Finalize();
  return 0;
}
