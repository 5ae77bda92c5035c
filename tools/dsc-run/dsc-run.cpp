//===- dsc-run.cpp - run a step artifact on every rank of an MPI job ------===//
//
//   mpirun -np N dsc-run ARTIFACT --weights W.safetensors --data D.bin
//          --steps S [--batch B] [--seq T] [--eval] [--metrics FILE.csv]
//
// The logic is in the runtime (runtime/lib/run, dsc/runtime/Run.h); see
// docs/running.md.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/Run.h"

#include <cstdlib>

int main(int argc, char **argv) {
  // CPU artifacts alternate OpenMP loops with OpenBLAS GEMMs, which run on
  // OpenBLAS's own threads. OpenMP threads that spin-wait after a loop take
  // the cores those GEMMs need: on 2 cores GPT-2 124M's eval step took 2.5 s
  // with spinning and 1.2 s without. Set before the artifact loads the
  // OpenMP runtime; an explicit setting by the user wins.
  setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0);
  return dsc::rt::runMain(argc, argv);
}
