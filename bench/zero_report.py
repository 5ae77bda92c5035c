#!/usr/bin/env python3
"""Per-rank model-state bytes and communication of a model under ZeRO stages
0-3 at several world sizes, from dsc-opt's --dsc-report, beside the ZeRO
paper's formulas; and dsc-opt's time beside stock mlir-opt canonicalize+cse
on the same module (medians of --repeat runs).

    /usr/bin/python3 bench/zero_report.py MODEL.mlir [--world-sizes 1,2,4,8,64]
        [--precision bf16] [--repeat 3] [--extra "--zero-persistence-threshold=0"]

Formulas (mixed-precision Adam, Psi parameters, N ranks): 16 Psi, 4 Psi +
12 Psi/N, 2 Psi + 14 Psi/N, 16 Psi/N bytes per rank; fp32: 16 Psi,
8 Psi + 8 Psi/N, 4 Psi + 12 Psi/N, 16 Psi/N. Communication: 2 Psi elements
per rank for data parallelism and stage 2, 3 Psi for stage 3, each moved at
the ring's (N-1)/N, in the gradient's bytes per element.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DSC_OPT = os.path.join(ROOT, "build", "bin", "dsc-opt")
MLIR_OPT = "/usr/lib/llvm-22/bin/mlir-opt"


def formula(stage, psi, n, mixed):
    if mixed:
        return [16 * psi, 4 * psi + 12 * psi / n, 2 * psi + 14 * psi / n,
                16 * psi / n][stage]
    return [16 * psi, 8 * psi + 8 * psi / n, 4 * psi + 12 * psi / n,
            16 * psi / n][stage]


def timed(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def report(model, stage, world, precision, extra, path):
    cmd = [DSC_OPT, model, f"--world-size={world}", f"--zero-stage={stage}",
           f"--precision={precision}", "--dsc-report=memory,comm",
           "--dsc-report-format=json", f"--dsc-report-file={path}",
           "-o", os.devnull, *extra]
    subprocess.run(cmd, check=True)
    with open(path) as f:
        return json.load(f), cmd


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--world-sizes", default="1,2,4,8,64")
    p.add_argument("--precision", default="bf16")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--extra", default="--zero-persistence-threshold=0",
                   help="more dsc-opt flags")
    args = p.parse_args()
    mixed = args.precision != "fp32"
    extra = args.extra.split()
    with tempfile.TemporaryDirectory() as tmp:
        generic = os.path.join(tmp, "generic.mlir")
        subprocess.run([DSC_OPT, args.model, "--mlir-print-op-generic", "-o",
                        generic], check=True)
        stock = statistics.median(
            timed([MLIR_OPT, "--allow-unregistered-dialect",
                   "--pass-pipeline=builtin.module(func.func(canonicalize,cse))",
                   generic, "-o", os.devnull]) for _ in range(args.repeat))
        print(f"model {args.model}, precision {args.precision}, flags {' '.join(extra)}")
        print(f"stock mlir-opt canonicalize+cse: {stock:.3f} s (median of {args.repeat})\n")
        print("| N | stage | model states / rank (B) | formula (B) | dsc/formula "
              "| bytes sent / rank / step | ring 2Ψ or 3Ψ (B) | volume (Ψ) "
              "| peak / rank (B) | dsc-opt (s) | ratio to stock |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for world in (int(w) for w in args.world_sizes.split(",")):
            for stage in range(4):
                path = os.path.join(tmp, f"r{world}-{stage}.json")
                r, cmd = report(args.model, stage, world, args.precision, extra, path)
                seconds = statistics.median(timed(cmd) for _ in range(args.repeat))
                psi = r["parameters"]
                rank = r["memory"][0]
                grad_bytes = 2 if mixed else 4
                ring = (3 if stage == 3 else 2) * psi * grad_bytes * (world - 1) / world
                f = formula(stage, psi, world, mixed)
                print(f"| {world} | {stage} | {rank['model_states']:,} | {f:,.0f} | "
                      f"{rank['model_states'] / f:.6f} | "
                      f"{r['comm']['bytes_sent_per_update']:,} | {ring:,.0f} | "
                      f"{r['comm']['volume_psi']:.3f} | {rank['peak']:,} | "
                      f"{seconds:.2f} | {seconds / stock:.0f} |")
        print(f"\nPsi = {psi:,} trained parameters")


if __name__ == "__main__":
    sys.exit(main())
