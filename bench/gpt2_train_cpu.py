#!/usr/bin/env python3
"""Training step of a zoo model on 1 CPU rank: dsc (export -> dsc-compile ->
dsc-run) with and without activation checkpointing, beside PyTorch's
forward + backward + AdamW step on the same weights and batches at its best
(1 thread and every core, denormals flushed), measured in the same run;
medians over the steps after the first, and dsc's ratio to the faster
PyTorch. Also prints the
per-rank activation arena the compiler planned (`dscrt.arena_bytes`, set by
--dsc-plan-memory) with and without --checkpoint-activations.

    /usr/bin/python3 bench/gpt2_train_cpu.py [--size small] [--batch 4] [--seq 128] [--steps 3]

Prints a table and the loss of step 1 from each (they must agree).
"""
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402

import zoo_cpu  # noqa: E402

from dsc import data  # noqa: E402
from dsc.export import build_model  # noqa: E402
from dsc.golden import load_weights  # noqa: E402


def dsc_train(args, work, name, extra):
    """Compiles and runs the dsc training step; returns (arena bytes,
    step times after the first, loss of step 1)."""
    keep = f"{work}/{name}"
    subprocess.run([f"{args.build}/bin/dsc-compile", f"{work}/m/model.mlir",
                    f"--lr={args.lr!r}", *extra, "--keep", keep, "-o", f"{keep}/step.so"],
                   check=True, stdout=subprocess.DEVNULL)
    arena = int(re.search(r"dscrt\.arena_bytes = (\d+)",
                          open(f"{keep}/lowered.mlir").read()).group(1))
    subprocess.run([f"{args.build}/bin/dsc-run", f"{keep}/step.so",
                    "--weights", f"{work}/m/model.safetensors", "--data", f"{work}/data.bin",
                    "--batch", str(args.batch), "--seq", str(args.seq),
                    "--steps", str(args.steps), "--metrics", f"{keep}/metrics.csv"],
                   check=True, stdout=subprocess.DEVNULL)
    rows = list(csv.DictReader(open(f"{keep}/metrics.csv")))
    return arena, [float(r["step_time_s"]) for r in rows[1:]], float(rows[0]["loss"])


def torch_train(args, work, threads):
    """PyTorch's forward + backward + AdamW on the same weights and batches,
    on `threads` intra-op threads; returns (step times after the first,
    loss of step 1)."""
    torch.set_num_threads(threads)
    model, _ = build_model(args.model, {"size": args.size})
    state = load_weights(model, f"{work}/m/model.safetensors")
    params = [t for n, t in state.tensors.items()
              if state.role[n] == "parameter" and t.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr)  # weight decay 0.01, as dsc's default
    model.train()
    tokens = data.load(f"{work}/data.bin")
    times, first_loss = [], None
    for step in range(args.steps):
        x, y = data.batch(tokens, step, args.batch, args.seq)
        x, y = torch.from_numpy(x), torch.from_numpy(y)
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(x, y)
        loss.backward()
        opt.step()
        elapsed = time.perf_counter() - start
        if step == 0:
            first_loss = float(loss)
        else:
            times.append(elapsed)
    return times, first_loss


def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def main():
    p = zoo_cpu.parser(steps=3)
    p.add_argument("--lr", type=float, default=1e-3)
    args = p.parse_args()
    work = zoo_cpu.export(args)
    results = {
        "dsc": dsc_train(args, work, "plain", []),
        "dsc ckpt": dsc_train(args, work, "ckpt", ["--checkpoint-activations"]),
    }

    # PyTorch at its best on this machine: every thread count up to the
    # cores (one thread is often faster on 2 cores), denormals flushed (on
    # an AVX-512 Xeon they slow its backward several times over).
    torch.set_flush_denormal(True)
    threads = sorted({1, args.torch_threads} if args.torch_threads else {1})
    torch_runs = {n: torch_train(args, work, n) for n in threads}
    print(f"model {os.path.basename(args.model)} size={args.size} batch={args.batch} "
          f"seq={args.seq} steps={args.steps} AdamW lr={args.lr} "
          f"(medians of steps 2..{args.steps})")
    print(f"cpu: {cpu_model()}, torch {torch.__version__}, flush_denormal on")
    print(f"{'':9} {'step s':>9} {'tokens/s':>9} {'arena MiB':>10} {'loss step 1':>12}")
    tok = args.batch * args.seq
    for name, (arena, times, loss) in results.items():
        d = statistics.median(times)
        print(f"{name:9} {d:9.3f} {tok / d:9.0f} {arena / 2**20:10.1f} {loss:12.7f}"
              f"   (arena {arena} bytes)")
    best = None
    for n, (times, loss) in torch_runs.items():
        t = statistics.median(times)
        best = t if best is None else min(best, t)
        print(f"{'pytorch/' + str(n):9} {t:9.3f} {tok / t:9.0f} {'':>10} {loss:12.7f}")
    for name, (_, times, _) in results.items():
        print(f"{name}: {best / statistics.median(times):.2f}x PyTorch eager at its best")
    shutil.rmtree(work)  # the exported weights alone are 0.5 GB


if __name__ == "__main__":
    main()
