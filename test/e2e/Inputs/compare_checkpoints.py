#!/usr/bin/env python3
"""Compares every tensor of two dsc-run checkpoints, partitioned or not.

Usage: compare_checkpoints.py CHECKPOINT_A CHECKPOINT_B [--exact | --rtol R --atol A]
                              [--only-parameters]

Each CHECKPOINT is a `dsc-run --save` directory (its `latest` step). Tensors
are reassembled from metadata.json: a whole tensor from its shard, a
partitioned (ZeRO) one from its pieces, concatenated at their offsets and
reshaped to the whole shape. Both checkpoints must hold the same names and
shapes; values must be bit-identical (--exact) or within rtol/atol (fp32
defaults 1e-5 / 1e-6). Prints one line per tensor and the largest error;
exits 1 on any mismatch.
"""
import argparse
import sys

import numpy as np

from checkpoints import load


p = argparse.ArgumentParser()
p.add_argument("a")
p.add_argument("b")
p.add_argument("--exact", action="store_true")
p.add_argument("--rtol", type=float, default=1e-5)
p.add_argument("--atol", type=float, default=1e-6)
p.add_argument("--only-parameters", action="store_true",
               help="compare the model's tensors only, not the optimizer's")
args = p.parse_args()
a, b = load(args.a), load(args.b)
names = sorted(set(a) | set(b))
if args.only_parameters:
    names = [n for n in names if n != "optimizer.step" and
             not n.endswith((".exp_avg", ".exp_avg_sq", ".momentum_buffer"))]
failed, worst = False, 0.0
for name in names:
    x, y = a.get(name), b.get(name)
    if x is None or y is None or x.shape != y.shape:
        print(f"{name}: MISSING or misshapen")
        failed = True
        continue
    if args.exact:
        ok = x.tobytes() == y.tobytes()
    else:
        err = np.abs(x.astype(np.float64) - y.astype(np.float64))
        bound = args.atol + args.rtol * np.abs(y.astype(np.float64))
        ok = bool(np.all(err <= bound))
        worst = max(worst, float(np.max(err / bound)) if err.size else 0.0)
    print(f"{name}: {'ok' if ok else 'MISMATCH'}")
    failed |= not ok
print(f"{len(names)} tensors compared" + ("" if args.exact else
                                          f"; largest error / tolerance: {worst:.3f}"))
sys.exit(1 if failed else 0)
