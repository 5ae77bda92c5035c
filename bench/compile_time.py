#!/usr/bin/env python3
"""Compile time and peak memory of dsc-opt's training pipeline on GPT training
graphs of growing depth, beside stock `mlir-opt` canonicalize+cse on the same
module, measured in the same run (medians of several runs).

    /usr/bin/python3 bench/compile_time.py [--layers 12,48,96,192] [--repeat 3]
        [--width 256] [--pipeline "--world-size=8 --zero-stage=3"]

The graphs are GPT-2 shaped (examples/models/gpt2.py: embeddings, L blocks of
attention and MLP, tied head) with width --width: the op count, which is
what compile time depends on, is the same at any width; 256 keeps every
linear weight above DeepSpeed's stage-3 persistence threshold (1e5 elements)
except the attention projection, as at GPT-2's own widths, while the export
stays small. mlir-opt does not know the dsc dialect, so it reads the
module in generic form with --allow-unregistered-dialect; its
canonicalize+cse is the baseline of a pipeline that does nothing
model-specific. Peak memory is the child's maximum resident set size.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MLIR_OPT = "/usr/lib/llvm-22/bin/mlir-opt"


def timed(cmd):
    """Wall seconds and peak RSS (MiB) of one run of cmd."""
    start = time.perf_counter()
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL) as proc:
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}")
    return seconds, usage.ru_maxrss / 1024


def median_run(cmd, repeat):
    runs = [timed(cmd) for _ in range(repeat)]
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--layers", default="12,48,96,192")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--pipeline", default="--world-size=8",
                   help="dsc-opt training flags to time (default: the stage-0 training step)")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = p.parse_args()
    dsc_opt = os.path.join(args.build, "bin", "dsc-opt")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    work = tempfile.mkdtemp(prefix="dsc-compile-time-")
    print(f"pipeline: dsc-opt {args.pipeline}; baseline: mlir-opt "
          "--pass-pipeline='builtin.module(func.func(canonicalize,cse))'")
    print("| layers | ops | dsc-opt s | dsc-opt peak MiB | mlir-opt s | mlir-opt peak MiB | time ratio |")
    print("|---|---|---|---|---|---|---|")
    for layers in (int(x) for x in args.layers.split(",")):
        out = os.path.join(work, f"L{layers}")
        # n_head 4 divides the width; a 512-token vocabulary and 64 positions
        # keep the weights file small.
        subprocess.run([sys.executable, "-m", "dsc.export",
                        os.path.join(ROOT, "examples/models/gpt2.py"), "-o", out, "--no-check",
                        "--set", "size=small", "--set", f"layers={layers}",
                        "--set", "vocab=512", "--set", "batch=1", "--set", "seq=64",
                        "--set", f"width={args.width}", "--set", "heads=4"],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        model = os.path.join(out, "model.mlir")
        generic = os.path.join(out, "generic.mlir")
        subprocess.run([dsc_opt, model, "--mlir-print-op-generic", "-o", generic], check=True)
        # One op per line in the generic form.
        ops = sum(1 for line in open(generic) if line.lstrip().startswith(('"', '%')))
        dsc = median_run([dsc_opt, model, *args.pipeline.split(), "-o", os.devnull], args.repeat)
        stock = median_run([MLIR_OPT, generic, "--allow-unregistered-dialect",
                            "--pass-pipeline=builtin.module(func.func(canonicalize,cse))",
                            "-o", os.devnull], args.repeat)
        print(f"| {layers} | {ops} | {dsc[0]:.2f} | {dsc[1]:.0f} | {stock[0]:.2f} | "
              f"{stock[1]:.0f} | {dsc[0] / stock[0]:.2f} |", flush=True)


if __name__ == "__main__":
    main()
