#!/usr/bin/env bash
# The GPU session: unpacks build/gpu-bundle.tar.xz (bench/cuda/make-bundle.sh),
# compares torch.export's IR with torch 1.13's, then runs the CUDA artifacts
# beside PyTorch: the eval steps (gpt2_eval_cuda.py), then the training
# steps (gpt2_train_cuda.py). OUT receives the logs.
#
#   [PARTS="tests exports eval train offload"] bench/cuda/run-on-gpu.sh OUT
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?usage: run-on-gpu.sh OUT}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
grep PRETTY_NAME /etc/os-release; ldd --version | head -1
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
nvcc --version | tail -1
tar -xJf "$ROOT/build/gpu-bundle.tar.xz" -C /tmp
B=/tmp/gpu-bundle
cuda_dirs=$(find /usr /opt -xdev \( -name 'libcublasLt.so.13' -o -name 'libnccl.so.2' \
  -o -name 'libcudart.so.13' \) -print0 2>/dev/null | xargs -0 -r -n1 dirname | sort -u | paste -sd:)
echo "CUDA libraries from: $cuda_dirs"
export LD_LIBRARY_PATH=$B/lib:$cuda_dirs
# A singleton MPI process: no mpirun, no daemon; plugins from the bundle.
export OMPI_MCA_mca_base_component_path=$B/openmpi3 OMPI_MCA_ess_singleton_isolated=1
export OMPI_MCA_mca_base_component_show_load_errors=0
ldd "$B/bin/dsc-run" | grep "not found"
# PARTS (default: all) picks what runs, e.g. PARTS="tests train".
PARTS=${PARTS:-tests exports eval train offload}
has() { [[ " $PARTS " == *" $1 "* ]]; }
if has tests; then
echo "== CUDA backend tests"
# LinksTheToolkitLibraries holds a build to the CUDA libraries it was linked
# with; here the GPU machine's own are loaded on purpose.
for t in "$B"/tests/*; do
  "$t" --gtest_brief=1 --gtest_filter=-CudaNccl.LinksTheToolkitLibraries 2>&1 | tail -15
done | tee "$OUT/cuda-tests.txt"
fi
if has exports; then
echo "== torch.export vs make_fx vs torch 1.13"
"$ROOT/bench/cuda/compare-exports.sh" "$B/exports" /tmp/exports 2>&1 | tee "$OUT/exports.txt"
cat /tmp/exports/*.diff > "$OUT/exports.diff" 2>/dev/null
for f in /tmp/exports/*.log; do echo "== $f"; tail -20 "$f"; done > "$OUT/exports-logs.txt"
fi
if has eval; then
echo "== CUDA artifacts"
PYTHONUNBUFFERED=1 python3 "$ROOT/bench/cuda/gpt2_eval_cuda.py" --bundle "$B" --out "$OUT" 2>&1 |
  tee "$OUT/gpt2_eval_cuda.txt"
fi
if has train; then
echo "== CUDA training steps"
PYTHONUNBUFFERED=1 python3 "$ROOT/bench/cuda/gpt2_train_cuda.py" --bundle "$B" --out "$OUT" 2>&1 |
  tee "$OUT/gpt2_train_cuda.txt"
fi
if has offload; then
echo "== ZeRO-Offload: copies, step time, overlap"
PYTHONUNBUFFERED=1 python3 "$ROOT/bench/cuda/offload_cuda.py" --bundle "$B" --out "$OUT" 2>&1 |
  tee "$OUT/offload_cuda.txt"
fi
