#!/usr/bin/env bash
# Installs every system dependency of dsc on Debian 12 with apt-get.
# Idempotent: when every package is already present it only checks and
# returns (a dpkg-query, well under a second).
set -euo pipefail

PACKAGES=(
  # build
  cmake ninja-build ccache g++ git pkg-config
  # MLIR/LLVM 22 (mlir-22-tools provides mlir-tblgen, which MLIR's CMake
  # config imports; llvm-22-tools provides lit and FileCheck)
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  # libFuzzer target: clang 22 and its fuzzer runtime
  clang-22 libclang-rt-22-dev
  # OpenMP for the CPU kernel library (runtime/lib/kernels/), built by clang 22
  libomp-22-dev
  # tests and runtime
  libgtest-dev libgmock-dev libopenmpi-dev openmpi-bin libopenblas-dev
  # runtime: JSON (safetensors headers, checkpoint metadata)
  nlohmann-json3-dev
  # runtime: asynchronous I/O of the NVMe tier (io_uring), and fio, the
  # reference of its benchmark (bench/nvme_io.sh)
  liburing-dev fio
  # exporter and golden numbers (Debian's torch 1.13, CPU)
  python3 python3-torch python3-numpy
  # dsc-plot (loss and learning-rate curves)
  python3-matplotlib
)

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
