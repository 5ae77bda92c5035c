#!/usr/bin/env python3
"""Eval step time of a zoo model on 1 CPU rank: dsc (export -> dsc-compile ->
dsc-run) beside PyTorch's forward + loss on the same weights and batches,
measured in the same run; medians over the steps after the first.

    /usr/bin/python3 bench/gpt2_eval_cpu.py [--size small] [--batch 4] [--seq 128] [--steps 8]

Prints a table and the loss of step 1 from both (they must agree).
"""
import csv
import os
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


def main():
    args = zoo_cpu.parser(steps=8).parse_args()
    t0 = time.time()
    work = zoo_cpu.export(args)
    t1 = time.time()
    subprocess.run([f"{args.build}/bin/dsc-compile", f"{work}/m/model.mlir",
                    "-o", f"{work}/m/step.so"], check=True, stdout=subprocess.DEVNULL)
    t2 = time.time()
    subprocess.run([f"{args.build}/bin/dsc-run", f"{work}/m/step.so",
                    "--weights", f"{work}/m/model.safetensors", "--data", f"{work}/data.bin",
                    "--batch", str(args.batch), "--seq", str(args.seq),
                    "--steps", str(args.steps), "--eval", "--metrics", f"{work}/m.csv"],
                   check=True, stdout=subprocess.DEVNULL)
    rows = list(csv.DictReader(open(f"{work}/m.csv")))
    dsc_times = [float(r["step_time_s"]) for r in rows[1:]]
    dsc_loss = float(rows[0]["loss"])

    torch.set_num_threads(args.torch_threads)
    model, _ = build_model(args.model, {"size": args.size})
    load_weights(model, f"{work}/m/model.safetensors")
    model.train()  # dropout is 0; train() is the mode the graph was exported in
    tokens = data.load(f"{work}/data.bin")
    torch_times, torch_loss = [], None
    with torch.no_grad():
        for step in range(args.steps):
            x, y = data.batch(tokens, step, args.batch, args.seq)
            x, y = torch.from_numpy(x), torch.from_numpy(y)
            start = time.perf_counter()
            loss = model(x, y)
            elapsed = time.perf_counter() - start
            if step == 0:
                torch_loss = float(loss)
            else:
                torch_times.append(elapsed)
    d, t = statistics.median(dsc_times), statistics.median(torch_times)
    print(f"model {os.path.basename(args.model)} size={args.size} batch={args.batch} "
          f"seq={args.seq} steps={args.steps} (medians of {len(dsc_times)} steps after the first)")
    print(f"torch threads: {torch.get_num_threads()}, torch {torch.__version__}")
    print(f"data + export {t1 - t0:.1f} s, dsc-compile {t2 - t1:.1f} s")
    print(f"{'':8} {'step s':>10} {'tokens/s':>10} {'loss step 1':>14}")
    tok = args.batch * args.seq
    print(f"{'dsc':8} {d:10.4f} {tok / d:10.0f} {dsc_loss:14.7f}")
    print(f"{'pytorch':8} {t:10.4f} {tok / t:10.0f} {torch_loss:14.7f}")
    print(f"dsc / pytorch step time: {d / t:.3f}")


if __name__ == "__main__":
    main()
