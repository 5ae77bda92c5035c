#!/usr/bin/env bash
# Compile time and generated code size of the MoE rewrite by expert count:
# GPT-2 (tiny width) with 12 and 24 blocks, every MLP replaced by E = 8, 32
# and 128 top-2 experts. The goal: nothing grows with E.
#
#   bench/moe_compile_scale.sh [BUILD_DIR] [OUT_DIR]
#
# Prints one row per (layers, E): dsc-opt seconds (the training pipeline),
# dsc-compile seconds (the C++ compiler included), IR ops and states after
# the pipeline, lines and bytes of step.cpp, bytes of the artifact.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build}
OUT=${2:-$(mktemp -d)}
export PYTHONPATH=$SRC/python
echo "| layers | E | dsc-opt s | dsc-compile s | IR ops | states | step.cpp lines | step.cpp bytes | artifact bytes |"
echo "|---|---|---|---|---|---|---|---|---|"
for layers in 12 24; do
  model=$OUT/L$layers
  [[ -f $model/model.mlir ]] || /usr/bin/python3 -m dsc.export "$SRC/examples/models/gpt2.py" \
    -o "$model" --set batch=4 --set seq=16 --set layers=$layers > /dev/null
  for experts in 8 32 128; do
    flags=(--moe-experts=$experts --moe-top-k=2 --optimizer=adamw --lr=0.01)
    start=$(date +%s.%N)
    "$BUILD/bin/dsc-opt" "$model/model.mlir" "${flags[@]}" > "$OUT/opt.mlir"
    opt=$(echo "$(date +%s.%N) - $start" | bc)
    rm -rf "$OUT/keep"
    start=$(date +%s.%N)
    "$BUILD/bin/dsc-compile" "$model/model.mlir" "${flags[@]}" --keep "$OUT/keep" \
      -o "$OUT/step.so" > /dev/null
    compile=$(echo "$(date +%s.%N) - $start" | bc)
    printf "| %s | %s | %.2f | %.1f | %s | %s | %s | %s | %s |\n" "$layers" "$experts" \
      "$opt" "$compile" "$(grep -c ' = dsc\.' "$OUT/opt.mlir")" \
      "$(grep -c 'dsc.state' "$OUT/opt.mlir")" "$(wc -l < "$OUT/keep/step.cpp")" \
      "$(wc -c < "$OUT/keep/step.cpp")" "$(stat -c %s "$OUT/step.so")"
  done
done
