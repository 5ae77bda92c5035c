// The program behind the CommWatchdogTimeout test (WatchdogTimeoutCheck.py
// runs it under mpirun with DSC_COLLECTIVE_TIMEOUT=2): two collectives
// succeed, then rank 1 never joins the third. Rank 0's watchdog must end the
// job with the report naming collective #3; if the allReduce ever returned,
// rank 0 says so and exits 0, which the check counts as a failure.

#include "dsc/runtime/MpiComm.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <thread>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  {
    dsc::rt::MpiCommunicator comm; // timeout from DSC_COLLECTIVE_TIMEOUT
    float value = 1;
    comm.allReduce(&value, &value, 1, dsc::rt::CommDType::F32,
                   dsc::rt::ReduceOp::Sum);
    comm.barrier();
    if (comm.rank() == 1) {
      // Never joins: sleeps longer than the check waits for the job, so the
      // job can only end in time through the watchdog's abort.
      std::this_thread::sleep_for(std::chrono::seconds(90));
    } else {
      comm.allReduce(&value, &value, 1, dsc::rt::CommDType::F32,
                     dsc::rt::ReduceOp::Sum);
      std::fprintf(stderr,
                   "rank %d: the collective completed; the watchdog "
                   "did not fire\n",
                   comm.rank());
    }
  }
  MPI_Finalize();
  return 0;
}
