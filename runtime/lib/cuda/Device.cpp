//===- Device.cpp - GPU presence, device selection, CUDA errors -----------===//

#include "dsc/runtime/CudaDevice.h"

#include "dsc/runtime/Error.h"

#include <unistd.h>

#include <charconv>
#include <climits>
#include <cstdlib>

namespace dsc::rt::cuda {

namespace {

/// The launchers' local-rank variables, first set wins (CudaDevice.h).
constexpr const char *kLocalRankVariables[] = {"OMPI_COMM_WORLD_LOCAL_RANK",
                                               "SLURM_LOCALID", "LOCAL_RANK"};

std::string hostName() {
  char buffer[HOST_NAME_MAX + 1] = {};
  if (gethostname(buffer, sizeof buffer - 1) != 0 || buffer[0] == '\0')
    return "(unknown host)";
  return buffer;
}

/// "13.0" from CUDA's 13000.
std::string cudaVersionString(int version) {
  return std::to_string(version / 1000) + "." +
         std::to_string(version % 1000 / 10);
}

/// Why cudaGetDeviceCount found nothing, in words, before CUDA's own name
/// and description of `status`.
std::string whyNoDevice(cudaError_t status) {
  if (status == cudaErrorInsufficientDriver) {
    int driver = 0, runtime = 0;
    // Both report what they can without a driver: 0 for the driver's
    // version when libcuda.so.1 cannot be loaded.
    if (cudaDriverGetVersion(&driver) != cudaSuccess)
      driver = 0;
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess)
      runtime = CUDART_VERSION;
    (void)cudaGetLastError();
    if (driver == 0)
      return ": no NVIDIA driver is installed (libcuda.so.1 could not be "
             "loaded; cudaDriverGetVersion reports 0)";
    return ": the NVIDIA driver supports CUDA " + cudaVersionString(driver) +
           " but this runtime is CUDA " + cudaVersionString(runtime);
  }
  return "";
}

} // namespace

std::string describeCudaError(cudaError_t status) {
  const char *name = cudaGetErrorName(status);
  const char *text = cudaGetErrorString(status);
  return std::string(name ? name : "cudaError?") + ": " +
         (text ? text : "unknown error " + std::to_string(int(status)));
}

void checkCuda(cudaError_t status, const std::string &what) {
  if (status == cudaSuccess)
    return;
  (void)cudaGetLastError(); // reported here; not again by a later call
  throw Error(what + ": " + describeCudaError(status));
}

int Device::count() noexcept {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess)
    devices = 0;
  (void)cudaGetLastError();
  return devices;
}

int Device::requireDevice(const std::string &who) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();
  if (status == cudaSuccess && count > 0)
    return count;
  std::string message = who +
                        " needs a GPU, but cudaGetDeviceCount found "
                        "none on host " +
                        hostName() + whyNoDevice(status);
  message += status == cudaSuccess ? " (cudaGetDeviceCount returned 0 devices)"
                                   : " (" + describeCudaError(status) + ")";
  if (const char *visible = std::getenv("CUDA_VISIBLE_DEVICES"))
    message += "; CUDA_VISIBLE_DEVICES is '" + std::string(visible) + "'";
  throw Error(message);
}

std::optional<LocalRank> Device::localRank(const EnvLookup &lookup) {
  for (const char *variable : kLocalRankVariables) {
    std::optional<std::string> value = lookup(variable);
    if (!value)
      continue;
    int parsed = -1;
    const char *end = value->data() + value->size();
    auto [stop, ec] = std::from_chars(value->data(), end, parsed);
    check(!value->empty() && ec == std::errc() && stop == end && parsed >= 0,
          std::string(variable) + "='" + *value +
              "' is not a non-negative integer");
    return LocalRank{parsed, variable};
  }
  return std::nullopt;
}

int Device::chooseOrdinal(int rank, int deviceCount, const EnvLookup &lookup) {
  check(deviceCount > 0, "chooseOrdinal: device count " +
                             std::to_string(deviceCount) + " is not positive");
  check(rank >= 0,
        "chooseOrdinal: rank " + std::to_string(rank) + " is negative");
  std::optional<LocalRank> local = localRank(lookup);
  return (local ? local->index : rank) % deviceCount;
}

int Device::current(const std::string &who) {
  int device = -1;
  cudaError_t status = cudaGetDevice(&device);
  if (status == cudaSuccess)
    return device;
  (void)cudaGetLastError();
  requireDevice(who); // throws when there is no GPU
  checkCuda(status, who + ": cudaGetDevice");
  return device; // not reached
}

int Device::select(int rank, const std::string &who, const EnvLookup &lookup) {
  int count = requireDevice(who);
  int ordinal = chooseOrdinal(rank, count, lookup);
  checkCuda(cudaSetDevice(ordinal),
            "cudaSetDevice(" + std::to_string(ordinal) + ")");
  return ordinal;
}

} // namespace dsc::rt::cuda
