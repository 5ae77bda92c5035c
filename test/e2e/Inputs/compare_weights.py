#!/usr/bin/env python3
"""Compares the parameters a dsc-run checkpoint holds with reference weights.

Usage: compare_weights.py REFERENCE.safetensors CHECKPOINT [--rtol R] [--atol A]
                          [--adam GOLD_DIR]

REFERENCE is dsc.golden's weights_final.safetensors; CHECKPOINT is a
`dsc-run --save` directory (its `latest` step), or a safetensors file (what
`dsc-ckpt export` writes). Every reference tensor must
be in the checkpoint (reassembled from its pieces when ZeRO partitioned
it; in mixed precision its fp32 master weight NAME.master, which the
16-bit NAME is rounded from), with the same shape, and within
rtol/atol elementwise (fp32 defaults 1e-5 / 1e-6; 0 and 0: bit for bit). Prints one line per
tensor and the largest error; exits 1 on any mismatch.

With --adam GOLD_DIR (a one-step dsc.golden run with --optim adam or
adamw, whose weights_final is REFERENCE), each parameter's bound also holds
how far rounding noise in the gradient can move Adam's step (adam_bound.py:
derived per element from the recorded gradient, its noise, the betas, eps
and the lr), and each line says how many elements were held to the
noise-limited part of it. Longer Adam runs are compared step by step
(compare_steps.py).
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "python"))
from dsc import safetensors  # noqa: E402
from checkpoints import load  # noqa: E402
from adam_bound import AdamBound  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("reference")
p.add_argument("checkpoint")
p.add_argument("--rtol", type=float, default=1e-5)
p.add_argument("--atol", type=float, default=1e-6)
p.add_argument("--adam", metavar="GOLD_DIR",
               help="add the bound Adam's rounding noise implies (adam_bound.py)")
args = p.parse_args()
adam = AdamBound(args.adam) if args.adam else None

if os.path.isdir(args.checkpoint):
    step = open(os.path.join(args.checkpoint, "latest")).read().strip()
    ours = load(args.checkpoint)  # partitioned (ZeRO) tensors reassembled
else:
    step = "(file)"
    ours = safetensors.load_numpy(args.checkpoint)[0]
ref = safetensors.load_numpy(args.reference)[0]
failed, worst = False, 0.0
for name, want in sorted(ref.items()):
    got = ours.get(name + ".master", ours.get(name))
    if got is None or got.shape != want.shape:
        print(f"{name}: MISSING or misshapen in {args.checkpoint}/{step}")
        failed = True
        continue
    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    bound = args.atol + args.rtol * np.abs(want.astype(np.float64))
    note = ""
    if adam and adam.has(name):
        term, limited = adam.weight_term(name)
        bound = bound + term
        note = f" ({int(limited.sum())} of {limited.size} elements noise-limited)"
    ok = bool(np.all(err <= bound))
    ratio = np.divide(err, bound, out=np.where(err > 0, np.inf, 0.0), where=bound > 0)
    worst = max(worst, float(np.max(ratio)) if err.size else 0.0)
    print(f"{name}: {'ok' if ok else 'MISMATCH'}{note}")
    failed |= not ok
print(f"largest error / tolerance: {worst:.3f}")
sys.exit(1 if failed else 0)
