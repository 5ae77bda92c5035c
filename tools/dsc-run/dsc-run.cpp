//===- dsc-run.cpp - run a step artifact on every rank of an MPI job ------===//
//
//   mpirun -np N dsc-run ARTIFACT --weights W.safetensors --data D.bin
//          --batch B --seq T --steps S [--eval] [--metrics FILE.csv]
//
// The logic is in the runtime (runtime/lib/run, dsc/runtime/Run.h); see
// docs/running.md.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/Run.h"

int main(int argc, char **argv) { return dsc::rt::runMain(argc, argv); }
