#!/usr/bin/env bash
# The README's second command (and CI's, via .ci/run): install, build, and run
# every test: the lit suite (FileCheck, -verify-diagnostics, bad input, a
# libFuzzer smoke run) and the GoogleTest suite, all under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)"
