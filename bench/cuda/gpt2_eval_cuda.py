#!/usr/bin/env python3
"""Eval step of the GPT-2 zoo model on one GPU: dsc's CUDA artifact run by
dsc-run beside PyTorch's forward + loss on the same weights and batches, in
the same run; loss parity and medians of the step times after the first.

Runs on a GPU machine that has PyTorch but no MLIR: the artifacts and dsc-run
come from bench/cuda/make-bundle.sh (built where MLIR is), the weights are
exported here.

    python3 bench/cuda/gpt2_eval_cuda.py --bundle DIR [--steps 10] [--out DIR]
"""
import argparse
import csv
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402

from dsc import data  # noqa: E402
from dsc.export import build_model, parse_overrides  # noqa: E402
from dsc.golden import load_weights  # noqa: E402

MODEL = os.path.join(ROOT, "examples/models/gpt2.py")


def run_dsc(bundle, art, weights, batch, seq, steps, work):
    metrics = os.path.join(work, "dsc.csv")
    cmd = [os.path.join(bundle, "bin/dsc-run"), os.path.join(art, "step_cuda.so"),
           "--weights", weights, "--data", os.path.join(bundle, "data.bin"),
           "--batch", str(batch), "--seq", str(seq), "--steps", str(steps),
           "--eval", "--metrics", metrics]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300)
    rows = list(csv.DictReader(open(metrics)))
    return [float(r["loss"]) for r in rows], [float(r["step_time_s"]) for r in rows], out.stdout


def run_torch(overrides, weights, tokens, batch, seq, steps, device):
    model, _ = build_model(MODEL, overrides)
    load_weights(model, weights)
    model.train()  # dropout is 0; the mode the graph was exported in
    model.to(device)
    losses, times = [], []
    with torch.no_grad():
        for step in range(steps):
            x, y = data.batch(tokens, step, batch, seq)
            x, y = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
            if device == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            loss = model(x, y)
            value = float(loss)  # synchronizes
            times.append(time.perf_counter() - start)
            losses.append(value)
    return losses, times


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bundle", required=True)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 GEMMs, as dsc's
    torch.backends.cudnn.allow_tf32 = False
    tokens = data.load(os.path.join(args.bundle, "data.bin"))
    results = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    for name in sorted(os.listdir(os.path.join(args.bundle, "artifacts"))):
        art = os.path.join(args.bundle, "artifacts", name)
        sets = open(os.path.join(art, "sets.txt")).read().split()
        overrides = parse_overrides(sets[1::2])
        batch, seq = overrides["batch"], overrides["seq"]
        work = os.path.join("/tmp/dsc-gpu", name)
        os.makedirs(work, exist_ok=True)
        t0 = time.time()
        # make_fx or torch.export give the same weights; the IR is compared
        # by compare-exports.sh.
        subprocess.run([sys.executable, "-m", "dsc.export", MODEL, "-o", work, *sets,
                        "--capture", "make_fx", "--no-check"],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        export_s = time.time() - t0
        weights = os.path.join(work, "model.safetensors")
        dsc_loss, dsc_t, log = run_dsc(args.bundle, art, weights, batch, seq, args.steps, work)
        cuda_loss, cuda_t = run_torch(overrides, weights, tokens, batch, seq, args.steps, "cuda")
        cpu_loss, _ = run_torch(overrides, weights, tokens, batch, seq, 2, "cpu")
        worst = max(abs(a - b) / abs(b) for a, b in zip(dsc_loss, cuda_loss))
        d, t = statistics.median(dsc_t[1:]), statistics.median(cuda_t[1:])
        tok = batch * seq
        print(f"== gpt2 {shlex.join(sets)}: export {export_s:.1f} s")
        print(f"{'':14} {'step s':>10} {'tokens/s':>11} {'loss step 1':>14} {'loss step 2':>14}")
        print(f"{'dsc cuda':14} {d:10.5f} {tok / d:11.0f} {dsc_loss[0]:14.7f} {dsc_loss[1]:14.7f}")
        print(f"{'pytorch cuda':14} {t:10.5f} {tok / t:11.0f} {cuda_loss[0]:14.7f} {cuda_loss[1]:14.7f}")
        print(f"{'pytorch cpu':14} {'':>10} {'':>11} {cpu_loss[0]:14.7f} {cpu_loss[1]:14.7f}")
        print(f"dsc / pytorch step time: {d / t:.3f}; worst relative loss difference "
              f"over {args.steps} steps: {worst:.2e}")
        print("dsc-run:", *[l for l in log.splitlines() if not l.startswith("step=")], sep="\n  ")
        results[name] = dict(sets=sets, dsc_loss=dsc_loss, torch_cuda_loss=cuda_loss,
                             torch_cpu_loss=cpu_loss, dsc_step_s=dsc_t, torch_step_s=cuda_t,
                             median_ratio=d / t, worst_rel_loss_diff=worst)
    if args.out:
        with open(os.path.join(args.out, "gpt2_eval_cuda.json"), "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
