#!/usr/bin/env python3
"""Compares the outputs dsc-run --dump-outputs wrote (the loss and every
`grad.<parameter>`) with PyTorch's: dsc.golden's losses.json and
grads_step1.safetensors (torch.autograd on the same weights and batch).

Usage: compare_gradients.py GOLD_DIR OUTPUTS.safetensors [...] [--rtol R] [--atol A]

Every parameter of the golden file must have a gradient of the same shape,
each element within atol + rtol * |pytorch| (fp32 defaults 1e-5 / 1e-6); a
parameter PyTorch leaves without a gradient (it does not reach the loss)
must have a zero one. Any other output (a metric) must be zero, or the
value of the same name in GOLD_DIR/outputs_step1.safetensors where the
reference wrote one (the expert routing counts of an MoE model).
Prints one line per run and tensor with its largest absolute and relative
errors, then `max abs error ...` over everything.
"""
import argparse
import json
import os
import sys

import numpy as np

from dsc.safetensors import load_numpy

p = argparse.ArgumentParser()
p.add_argument("gold")
p.add_argument("runs", nargs="+")
p.add_argument("--rtol", type=float, default=1e-5)
p.add_argument("--atol", type=float, default=1e-6)
args = p.parse_args()

gold, _ = load_numpy(os.path.join(args.gold, "grads_step1.safetensors"))
loss = np.float64(json.load(open(os.path.join(args.gold, "losses.json")))["losses"][0])
metrics_file = os.path.join(args.gold, "outputs_step1.safetensors")
metrics = load_numpy(metrics_file)[0] if os.path.exists(metrics_file) else {}
failed = False
worst_abs = worst_rel = 0.0


def compare(run, name, got, want):
    global failed, worst_abs, worst_rel
    if got is None or got.shape != want.shape:
        print(f"{run}: {name}: {'missing' if got is None else got.shape} "
              f"vs pytorch {want.shape} MISMATCH")
        failed = True
        return
    got = got.astype(np.float64)
    want = want.astype(np.float64)
    err = np.abs(got - want)
    ok = bool(np.all(np.isfinite(got)) and np.all(err <= args.atol + args.rtol * np.abs(want)))
    abs_err = float(err.max()) if err.size else 0.0
    rel_err = float((err / np.maximum(np.abs(want), 1e-30)).max()) if err.size else 0.0
    worst_abs, worst_rel = max(worst_abs, abs_err), max(worst_rel, min(rel_err, abs_err / args.atol))
    print(f"{run}: {name}: max abs error {abs_err:.3g} {'ok' if ok else 'MISMATCH'}")
    failed |= not ok


for run in args.runs:
    outputs, _ = load_numpy(run)
    compare(run, "loss", outputs.get("loss"), loss)
    for name, want in sorted(gold.items()):
        compare(run, "grad." + name, outputs.get("grad." + name), want)
    for name in sorted(set(outputs) - {"loss"} - {"grad." + n for n in gold}):
        if name in metrics and metrics[name].size == outputs[name].size:
            # A scalar may have been written as [1].
            compare(run, name, outputs[name], metrics[name].reshape(outputs[name].shape))
        elif name in metrics:
            compare(run, name, outputs[name], metrics[name])
        else:
            compare(run, name + " (none in PyTorch)", outputs[name],
                    np.zeros_like(outputs[name]))
print(f"max abs error {worst_abs:.3g} over {len(args.runs)} run(s)")
sys.exit(1 if failed else 0)
