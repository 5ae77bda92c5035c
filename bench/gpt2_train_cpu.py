#!/usr/bin/env python3
"""Training step of a zoo model on 1 CPU rank: dsc (export -> dsc-compile ->
dsc-run) with and without activation checkpointing, beside PyTorch's
forward + backward + AdamW step on the same weights and batches, measured
in the same run; medians over the steps after the first. Also prints the
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


def main():
    p = zoo_cpu.parser(steps=3)
    p.add_argument("--lr", type=float, default=1e-3)
    args = p.parse_args()
    work = zoo_cpu.export(args)
    results = {
        "dsc": dsc_train(args, work, "plain", []),
        "dsc ckpt": dsc_train(args, work, "ckpt", ["--checkpoint-activations"]),
    }

    torch.set_num_threads(args.torch_threads)
    model, _ = build_model(args.model, {"size": args.size})
    state = load_weights(model, f"{work}/m/model.safetensors")
    params = [t for n, t in state.tensors.items()
              if state.role[n] == "parameter" and t.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr)  # weight decay 0.01, as dsc's default
    model.train()
    tokens = data.load(f"{work}/data.bin")
    torch_times, torch_loss = [], None
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
            torch_loss = float(loss)
        else:
            torch_times.append(elapsed)

    print(f"model {os.path.basename(args.model)} size={args.size} batch={args.batch} "
          f"seq={args.seq} steps={args.steps} AdamW lr={args.lr} "
          f"(medians of steps 2..{args.steps})")
    print(f"torch threads: {torch.get_num_threads()}, torch {torch.__version__}")
    print(f"{'':9} {'step s':>9} {'tokens/s':>9} {'arena MiB':>10} {'loss step 1':>12}")
    tok = args.batch * args.seq
    for name, (arena, times, loss) in results.items():
        d = statistics.median(times)
        print(f"{name:9} {d:9.3f} {tok / d:9.0f} {arena / 2**20:10.1f} {loss:12.7f}"
              f"   (arena {arena} bytes)")
    t = statistics.median(torch_times)
    print(f"{'pytorch':9} {t:9.3f} {tok / t:9.0f} {'':>10} {torch_loss:12.7f}")
    shutil.rmtree(work)  # the exported weights alone are 0.5 GB


if __name__ == "__main__":
    main()
