#!/usr/bin/env bash
# The README's first command: install, build, and run dsc-opt on the bundled
# 2-layer GPT-2 example, printing the verified IR and then a summary of the
# model.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
# The verified IR, then the summary last so it is what stays on the screen.
"$BUILD_DIR/bin/dsc-opt" examples/gpt2_tiny.mlir
"$BUILD_DIR/bin/dsc-opt" examples/gpt2_tiny.mlir --dsc-print-summary -o /dev/null
