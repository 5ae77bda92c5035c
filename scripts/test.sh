#!/usr/bin/env bash
# The README's second command (and CI's, via .ci/run): install, build, and run
# every test under ctest: the fast lit suite (FileCheck, -verify-diagnostics,
# bad input, a libFuzzer smoke run), the GoogleTest suites, the e2e suite
# (label e2e: one test per scenario file after the e2e-inputs fixture) and
# the ZeRO, mixed-precision and MoE parity files again with OpenBLAS forced
# to another core type than this machine's (label e2e-coretype). See
# docs/testing.md; `ctest --test-dir build -LE e2e` runs the fast part alone.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)"
