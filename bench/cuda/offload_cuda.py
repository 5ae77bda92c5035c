#!/usr/bin/env python3
"""ZeRO-Offload on one GPU: the figures docs/BENCHMARKS.md asks a GPU for.

1. The copies' bandwidth from and to pinned host memory (what dsc-run gives
   the artifact's host buffers) against plain pageable memory and memory
   registered with cudaHostRegister, each way (bench-offload-copy-cuda,
   bench/cuda/offload_copy_bench.cu).
2. GPT-2 124M's training step with ZeRO-Offload (bf16, ZeRO stage 2, AdamW
   on the host CPU) beside the same step without offload: the medians of
   the step times after the first, and, when Nsight Systems (`nsys`) is on
   PATH, the share of the copies' time between host and device that
   overlaps the GPU's kernels (hidden) and the time per step they do not
   (exposed), from its trace of the offload run: the union of the
   host-to-device and device-to-host copies, intersected with the union of
   the kernels, between the first and the last kernel (the state's upload
   at start-up is before the first). The host update itself is CPU time
   and is not in the trace; a step waits for it only where compute waits
   for the copies back.

The artifacts come from bench/cuda/make-bundle.sh (offload/*: each a
step_cuda.so, sets.txt and flags.txt); the weights are exported on the GPU
machine as gpt2_train_cuda.py does.

    python3 bench/cuda/offload_cuda.py --bundle DIR [--steps 20] [--out DIR]
"""
import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt2_train_cuda import ROOT, WORK, export_weights, run_dsc  # noqa: E402

HTOD, DTOH = 1, 2  # CUPTI_ACTIVITY_MEMCPY_KIND_*


def union(intervals):
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def length(intervals):
    return sum(end - start for start, end in intervals)


def intersect(a, b):
    """The measure of the intersection of two sorted unions."""
    total, i, j = 0, 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def overlap_from_trace(sqlite_path):
    """(transfer seconds, hidden seconds) between the first and last kernel."""
    db = sqlite3.connect(sqlite_path)
    kernels = db.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchall()
    copies = db.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY "
                        f"WHERE copyKind IN ({HTOD}, {DTOH})").fetchall()
    if not kernels:
        raise RuntimeError(f"{sqlite_path}: no kernels in the trace")
    first, last = min(k[0] for k in kernels), max(k[1] for k in kernels)
    compute = union(kernels)
    transfers = union([(max(s, first), min(e, last)) for s, e in copies
                       if e > first and s < last])
    return length(transfers) * 1e-9, intersect(transfers, compute) * 1e-9


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bundle", required=True)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--out", default=WORK)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    print("== copy bandwidth: pinned vs pageable host memory")
    subprocess.run([os.path.join(args.bundle, "bin/bench-offload-copy-cuda")], check=True)

    print(f"== GPT-2 training step, ZeRO-Offload vs none ({args.steps} steps, "
          "medians after the first)")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    root = os.path.join(args.bundle, "offload")
    nsys = shutil.which("nsys")
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        sets = open(os.path.join(d, "sets.txt")).read().split()
        flags = open(os.path.join(d, "flags.txt")).read().split()
        values = dict(s.split("=", 1) for s in sets[1::2])  # --set k=v ...
        batch, seq = int(values["batch"]), int(values["seq"])
        work = os.path.join(WORK, "-".join(s.replace("=", "") for s in sets[1::2]))
        weights = export_weights(sets, work, env)
        artifact = os.path.join(d, "step_cuda.so")
        metrics = os.path.join(args.out, f"{name}.csv")
        run = run_dsc(args.bundle, artifact, weights, batch, seq, args.steps, metrics)
        step = statistics.median(run["step_s"][1:])
        print(f"{name} ({' '.join(flags)}): step {step:.4f} s; "
              f"losses {run['loss'][0]:.7g} .. {run['loss'][-1]:.7g}")
        for line in run["log"]:
            if "transfer=" in line or "host_state_bytes" in line:
                print("  " + line)
        if "--offload-optimizer=cpu" not in flags:
            continue
        if not nsys:
            print("  nsys not found: the hidden share of the copies is not measured")
            continue
        report = os.path.join(args.out, name)
        cmd = [nsys, "profile", "--trace=cuda", "--sample=none", "--cpuctxsw=none",
               "--force-overwrite=true", "--export=sqlite", "-o", report,
               os.path.join(args.bundle, "bin/dsc-run"), artifact, "--weights", weights,
               "--data", os.path.join(args.bundle, "data.bin"), "--batch", str(batch),
               "--seq", str(seq), "--steps", str(args.steps)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        transfer, hidden = overlap_from_trace(report + ".sqlite")
        exposed = (transfer - hidden) / args.steps
        print(f"  copies: {transfer / args.steps * 1e3:.2f} ms per step, "
              f"{hidden / transfer:.1%} hidden behind kernels, "
              f"{exposed * 1e3:.2f} ms exposed per step ({exposed / step:.1%} of the step)")


if __name__ == "__main__":
    main()
