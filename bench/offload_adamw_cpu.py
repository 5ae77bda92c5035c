#!/usr/bin/python3
"""ZeRO-Offload's host update: dsc's CPU AdamW vs torch.optim.AdamW.

    /usr/bin/python3 bench/offload_adamw_cpu.py [--bench build/runtime/bench/bench-host-adamw]
        [--rounds 3] [--threads 2]

On GPT-2 124M's 148 parameter tensors (124,439,808 elements, fp32 states),
on the same cores (OMP_NUM_THREADS and torch.set_num_threads set alike),
interleaved round by round: bench-host-adamw (dsc's kernel and, in the same
process, the bandwidth bound of AdamW's 28 bytes an element: a STREAM-like
kernel with AdamW's traffic and trivial arithmetic, and an OpenMP memcpy),
then torch.optim.AdamW with foreach=False and foreach=True over the same
tensor list. Prints each figure's median in parameters per second and the
ratios: dsc / torch, dsc / bound.
"""
import argparse
import json
import os
import statistics
import subprocess
import time

import torch


def gpt2_sizes():
    d = 768
    sizes = [50257 * d, 1024 * d]
    for _ in range(12):
        sizes += [d, d, 3 * d * d, 3 * d, d * d, d, d, d, 4 * d * d, 4 * d, 4 * d * d, d]
    return sizes + [d, d]


def torch_update_seconds(foreach, sizes, steps):
    params = [torch.full((n,), 1.0) for n in sizes]
    for p in params:
        p.grad = torch.full_like(p, 0.1)
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, foreach=foreach)
    opt.step()  # warm-up: creates the moments
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="build/runtime/bench/bench-host-adamw")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    sizes = gpt2_sizes()
    n = sum(sizes)
    runs = {"dsc": [], "stream": [], "copy": [], "torch foreach=False": [],
            "torch foreach=True": []}
    for _ in range(args.rounds):
        out = json.loads(subprocess.run([args.bench, "3"], env=env, check=True,
                                        capture_output=True, text=True).stdout)
        assert out["elements"] == n
        runs["dsc"].append(n / out["adamw_s"])
        runs["stream"].append(n / out["stream_s"])
        runs["copy"].append(n / out["copy_s"])
        for foreach in (False, True):
            runs[f"torch foreach={foreach}"].append(
                n / torch_update_seconds(foreach, sizes, 3))
    med = {k: statistics.median(v) for k, v in runs.items()}
    bound = max(med["stream"], med["copy"])
    print(f"{n} parameters in {len(sizes)} tensors, {args.threads} threads, "
          f"torch {torch.__version__}, median of {args.rounds} rounds")
    for k, v in med.items():
        print(f"  {k:22s} {v / 1e6:9.1f} M params/s  "
              f"({28 * v / 1e9:6.2f} GB/s at 28 B/param)")
    print(f"  dsc / torch foreach=False: {med['dsc'] / med['torch foreach=False']:.2f}x")
    print(f"  dsc / torch foreach=True:  {med['dsc'] / med['torch foreach=True']:.2f}x")
    print(f"  dsc / bandwidth bound:     {100 * med['dsc'] / bound:.0f} %")


if __name__ == "__main__":
    main()
