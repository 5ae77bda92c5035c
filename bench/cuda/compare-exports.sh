#!/usr/bin/env bash
# Exports every model of bench/cuda/models.txt with this machine's torch by
# both tracers and compares the IR with the torch-1.13 exports in REFDIR
# (made by make-bundle.sh). The first line of model.mlir names the torch
# version and is left out of the comparison.
#
#   bench/cuda/compare-exports.sh REFDIR OUTDIR
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REF=$1 OUT=$2
PY=${PYTHON:-python3}
export PYTHONPATH=$ROOT/python
mkdir -p "$OUT"
status=0
while read -r name model sets; do
  for method in torch.export make_fx; do
    dir=$OUT/$name-$method
    # shellcheck disable=SC2086
    if ! $PY -m dsc.export "$ROOT/$model" -o "$dir" --capture $method $sets \
        > "$dir.log" 2>&1; then
      echo "$name $method: export FAILED"; tail -5 "$dir.log"; status=1; continue
    fi
    if diff <(tail -n +2 "$REF/$name/model.mlir") <(tail -n +2 "$dir/model.mlir") \
        > "$dir.diff"; then
      echo "$name $method: same IR as torch 1.13 ($(wc -l < "$dir/model.mlir") lines)"
    else
      echo "$name $method: IR DIFFERS from torch 1.13 ($(wc -l < "$dir.diff") diff lines)"
      status=1
    fi
  done
done < "$ROOT/bench/cuda/models.txt"
exit $status
