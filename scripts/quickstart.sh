#!/usr/bin/env bash
# The README's first command: install, build, and run dsc-opt on the bundled
# 2-layer GPT-2 example, printing the verified IR (stdout) and a summary of
# the model (stderr).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
"$BUILD_DIR/bin/dsc-opt" examples/gpt2_tiny.mlir --dsc-print-summary
