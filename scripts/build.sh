#!/usr/bin/env bash
# Installs what is missing, configures (once) and builds dsc into build/.
# Compiler: clang 22 from the LLVM install, which also builds the libFuzzer
# target. BUILD_DIR overrides the build directory.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh

BUILD_DIR=${BUILD_DIR:-build}
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22
fi
cmake --build "$BUILD_DIR"
