#!/usr/bin/env bash
# Packs what a GPU machine without MLIR or MPI needs to run dsc's CUDA
# artifacts: dsc-run with the shared libraries it links (MPI, OpenBLAS,
# libstdc++; not the CUDA libraries, which the GPU machine has), Open MPI's
# plugins, CUDA artifacts of the GPT-2 zoo model compiled here (eval and
# training steps, and CPU artifacts of the tiny training steps to compare
# the two targets), and the torch-1.13 exports of the zoo models to compare
# torch.export's with.
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
rm -rf "$OUT" && mkdir -p "$OUT"/{bin,lib,exports,artifacts,train,tests,offload}

cp "$BUILD/bin/dsc-run" "$OUT/bin/"
# The CUDA backend's own tests, which skip where there is no GPU.
for t in RuntimeCudaTest RuntimeStreamCudaTest RuntimeCudaNcclTest; do
  cp "$BUILD/runtime/tests/$t" "$OUT/tests/"
done
# ZeRO-Offload's copies, pinned vs pageable (bench/cuda/offload_cuda.py).
cp "$BUILD/runtime/bench/bench-offload-copy-cuda" "$OUT/bin/"
# Copies every library the ldd output on stdin names into the bundle's
# folder $1, except glibc's own and CUDA's and those lib/ has.
copy_libs() {
  mkdir -p "$OUT/$1"
  awk '/=>/ {print $3}' | sort -u |
    grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libcudart|libcublas|libcublasLt|libnccl|libcuda)\.so' |
    while read -r lib; do
      [[ -e $OUT/lib/$(basename "$lib") ]] || cp -L "$lib" "$OUT/$1/"
    done
}
# What dsc-run and Open MPI's plugins load.
plugins=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
cp -r "$plugins" "$OUT/openmpi3"
{ ldd "$BUILD/bin/dsc-run" "$OUT"/tests/*; ldd "$plugins"/*.so; } | copy_libs lib

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

# Training steps (bench/cuda/gpt2_train_cuda.py): NAME, the artifact above
# whose model.mlir it compiles, and dsc-compile's flags (optimizer: its
# defaults, AdamW lr 1e-3). One GPU runs one rank, so all are world size 1,
# where ZeRO's partitioned layout is built but has no collectives; a stage-3
# persistence threshold of 0 partitions every parameter. The default step is
# the eval artifact itself. The tiny steps are also compiled for the CPU.
while read -r name model flags; do
  dir=$OUT/train/$name
  mkdir -p "$dir"
  cp "$OUT/artifacts/$model/sets.txt" "$dir/"
  echo "$flags" > "$dir/flags.txt"
  targets=cuda
  [[ $model == tiny ]] && targets="cuda cpu"
  for target in $targets; do
    if [[ $target == cuda && -z $flags ]]; then
      cp "$OUT/artifacts/$model/step_cuda.so" "$dir/"
      continue
    fi
    # shellcheck disable=SC2086
    "$BUILD/bin/dsc-compile" "$OUT/artifacts/$model/model.mlir" --target=$target $flags \
      -o "$dir/step_$target.so" > /dev/null
  done
done <<'LIST'
tiny-fp32-z0 tiny
tiny-fp32-z3 tiny --zero-stage=3 --zero-persistence-threshold=0
tiny-bf16-z0 tiny --precision=bf16
tiny-bf16-z2 tiny --precision=bf16 --zero-stage=2
small-fp32-z0 small-b8-t512
small-bf16-z0 small-b8-t512 --precision=bf16
LIST
# ZeRO-Offload's training step and the same step without offload
# (bench/cuda/offload_cuda.py): GPT-2 124M, bf16, ZeRO stage 2, one rank.
while read -r name model flags; do
  dir=$OUT/offload/$name
  mkdir -p "$dir"
  cp "$OUT/artifacts/$model/sets.txt" "$dir/"
  echo "$flags" > "$dir/flags.txt"
  # shellcheck disable=SC2086
  "$BUILD/bin/dsc-compile" "$OUT/artifacts/$model/model.mlir" --target=cuda $flags \
    -o "$dir/step_cuda.so" > /dev/null
done <<'LIST'
small-bf16-z2 small-b8-t512 --precision=bf16 --zero-stage=2
small-bf16-z2-offload small-b8-t512 --precision=bf16 --zero-stage=2 --offload-optimizer=cpu
LIST
# What the CPU artifacts load beside dsc-run's libraries (OpenMP's
# runtime): in lib-cpu/, which only their dsc-run sees (run-on-gpu.sh puts
# lib/ on every process's path, PyTorch's too).
ldd "$OUT"/train/*/step_cpu.so | copy_libs lib-cpu
$PY -m dsc.data -o "$OUT/data.bin" > /dev/null
tar -C "$BUILD" -cJf "$BUILD/gpu-bundle.tar.xz" gpu-bundle
du -h "$BUILD/gpu-bundle.tar.xz"
