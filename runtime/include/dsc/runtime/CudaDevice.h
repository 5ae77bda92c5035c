//===- CudaDevice.h - the CUDA backend: devices and CUDA errors -*- C++ -*-===//
//
// The CUDA backend (docs/cuda.md) lives in its own library, dsc_runtime_cuda,
// built when the CUDA toolkit is found. It compiles and links on machines
// without a GPU (CI has none); what needs a GPU checks for one first and
// fails with a clear Error when there is none.
//
// Device selection: every rank uses one GPU, chosen by its local rank (its
// index among the ranks on the same host), which launchers publish as
//
//   1. OpenMPI's mpirun      OMPI_COMM_WORLD_LOCAL_RANK
//   2. Slurm's srun          SLURM_LOCALID
//   3. torchrun and friends  LOCAL_RANK
//
// (the first one set wins), modulo the number of visible devices: with one
// GPU per rank made visible by CUDA_VISIBLE_DEVICES (srun --gpus-per-task)
// every rank sees one device and uses it. Without any of these variables the
// global rank stands in for the local rank (a job on one host).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_CUDADEVICE_H
#define DSC_RUNTIME_CUDADEVICE_H

#include "dsc/runtime/EnvLookup.h"

#include <cuda_runtime_api.h>

#include <optional>
#include <string>

namespace dsc::rt::cuda {

/// Throws Error("<what>: <cudaErrorName>: <description>") unless `status`
/// is cudaSuccess; clears CUDA's last-error state first, so that a
/// reported error does not resurface from a later, unrelated call.
void checkCuda(cudaError_t status, const std::string &what);

/// "cudaErrorNoDevice: no CUDA-capable device is detected".
std::string describeCudaError(cudaError_t status);

/// A local rank and the variable it was read from.
struct LocalRank {
  int index = 0;
  std::string variable; // "OMPI_COMM_WORLD_LOCAL_RANK", ...
};

class Device {
public:
  /// The number of visible GPUs; 0 when there is none or CUDA cannot tell
  /// (no driver). Never throws: for decisions, not for errors.
  static int count() noexcept;

  /// The number of visible GPUs, at least 1. Throws Error when there is
  /// none, naming `who` ("the CUDA artifact needs a GPU, but
  /// cudaGetDeviceCount found none on host H (cudaErrorNoDevice: no
  /// CUDA-capable device is detected)"), and saying so plainly when the
  /// cause is that no CUDA driver is installed (libcuda.so.1 missing: what
  /// cudart reports as cudaErrorInsufficientDriver) or that the driver is
  /// older than the runtime, and what CUDA_VISIBLE_DEVICES is when it is set.
  static int requireDevice(const std::string &who = "the CUDA artifact");

  /// The local rank from the launcher's variables (see above), or nullopt
  /// when none is set. Throws Error naming the variable when its value is
  /// not a non-negative decimal integer.
  static std::optional<LocalRank> localRank(const EnvLookup &lookup);

  /// The device ordinal for `rank` among `deviceCount` (>= 1) devices:
  /// local rank (or, without one, `rank`) modulo deviceCount.
  static int chooseOrdinal(int rank, int deviceCount, const EnvLookup &lookup);

  /// This thread's current device (cudaGetDevice). When that fails because
  /// there is no GPU, throws requireDevice(who)'s Error; on any other
  /// failure, checkCuda's.
  static int current(const std::string &who);

  /// requireDevice(who), then cudaSetDevice(chooseOrdinal(...)) for this
  /// thread; returns the ordinal.
  static int select(int rank, const std::string &who = "the CUDA artifact",
                    const EnvLookup &lookup = processEnvironment);
};

} // namespace dsc::rt::cuda

#endif // DSC_RUNTIME_CUDADEVICE_H
