#!/usr/bin/env bash
# Packs what a GPU machine without MLIR or MPI needs to run dsc's CUDA
# artifacts: dsc-run with the shared libraries it links (MPI, OpenBLAS,
# libstdc++; not the CUDA libraries, which the GPU machine has), Open MPI's
# plugins, CUDA artifacts of the GPT-2 zoo model compiled here, and the
# torch-1.13 exports of the zoo models to compare torch.export's with.
#
#   bench/cuda/make-bundle.sh [BUILD_DIR]      -> BUILD_DIR/gpu-bundle.tar.xz
#
# bench/cuda/run-on-gpu.sh unpacks and uses it (see docs/BENCHMARKS.md).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=$BUILD/gpu-bundle
PY=/usr/bin/python3
export PYTHONPATH=$ROOT/python
rm -rf "$OUT" && mkdir -p "$OUT"/{bin,lib,exports,artifacts,tests}

cp "$BUILD/bin/dsc-run" "$OUT/bin/"
# The CUDA backend's own tests, which skip where there is no GPU.
for t in RuntimeCudaTest RuntimeStreamCudaTest RuntimeCudaNcclTest; do
  cp "$BUILD/runtime/tests/$t" "$OUT/tests/"
done
# Every library dsc-run and Open MPI's plugins load, except glibc's own and
# CUDA's.
plugins=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
cp -r "$plugins" "$OUT/openmpi3"
{ ldd "$BUILD/bin/dsc-run" "$OUT"/tests/*; ldd "$plugins"/*.so; } | awk '/=>/ {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libcudart|libcublas|libcublasLt|libnccl|libcuda)\.so' |
  while read -r lib; do cp -L "$lib" "$OUT/lib/"; done

# The torch-1.13 exports (make_fx) of every model the comparison covers.
while read -r name model sets; do
  # shellcheck disable=SC2086
  $PY -m dsc.export "$ROOT/$model" -o "$OUT/exports/$name" $sets > /dev/null
  rm "$OUT/exports/$name/model.safetensors"
done < "$ROOT/bench/cuda/models.txt"

# CUDA artifacts of GPT-2: tiny for parity, 124M for step time.
while read -r name sets; do
  # shellcheck disable=SC2086
  $PY -m dsc.export "$ROOT/examples/models/gpt2.py" -o "$OUT/artifacts/$name" $sets --no-check > /dev/null
  rm "$OUT/artifacts/$name/model.safetensors"
  "$BUILD/bin/dsc-compile" "$OUT/artifacts/$name/model.mlir" --target=cuda \
    -o "$OUT/artifacts/$name/step_cuda.so" > /dev/null
  echo "$sets" > "$OUT/artifacts/$name/sets.txt"
done <<'LIST'
tiny --set batch=4 --set seq=16
small-b8-t512 --set size=small --set batch=8 --set seq=512
LIST
$PY -m dsc.data -o "$OUT/data.bin" > /dev/null
tar -C "$BUILD" -cJf "$BUILD/gpu-bundle.tar.xz" gpu-bundle
du -h "$BUILD/gpu-bundle.tar.xz"
