#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the
# main job: the zoo's GPT-2 (tiny) trained with ZeRO-3 on 2 CPU ranks on the
# bundled corpus (text from /usr/share/common-licenses) for 50 steps, after
# each ZeRO stage's predicted memory per rank; a checkpoint, consolidated
# weights, the loss curve and a summary end it. Outputs go to $OUT
# (default quickstart-out/); a second run reuses the cached export and
# artifact and starts training at once.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
OUT=${OUT:-quickstart-out}
mkdir -p "$OUT"
start=$(date +%s)
if [[ ! -f "$OUT/data.bin" ]]; then
  PYTHONPATH=python /usr/bin/python3 -m dsc.data -o "$OUT/data.bin" > /dev/null
fi
rm -rf "$OUT/checkpoints"
"$BUILD_DIR/bin/dsc-train" examples/models/gpt2.py --set seq=16 \
  --config examples/ds_config_zero3.json --data "$OUT/data.bin" -n 2 --steps 50 \
  --report --save "$OUT/checkpoints" --out "$OUT"
echo "quickstart: $(( $(date +%s) - start )) s after the build"
