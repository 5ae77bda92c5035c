#!/usr/bin/env python3
"""Compares the `step=N loss=X` lines dsc-run printed with reference losses.

Usage: compare_losses.py REFERENCE.json RUN.txt [RUN.txt ...] [--rtol R] [--atol A] [--lrs]
                         [--terms NAME ...] [--first-step K]

REFERENCE.json is dsc.golden's losses.json (its `losses`, one per step), or
a JSON list of floats. Every run must print one line per reference step,
numbered from 1, each within rtol/atol (fp32 defaults: 1e-5 / 1e-6). With
--lrs, each line's `lr=` must also match the reference's `lrs` within
rtol 1e-6 (the schedule computed in f32 against PyTorch's doubles). With
--terms, each line's `NAME=` (a term of the loss: lm_loss, kd_loss,
aux_loss) must also match the reference's list NAME within rtol/atol.
With --first-step K (runs resumed from step K - 1's checkpoint), the runs
print steps K.. of the reference's.
"""
import argparse
import json
import math
import re
import sys

p = argparse.ArgumentParser()
p.add_argument("reference")
p.add_argument("runs", nargs="+")
p.add_argument("--rtol", type=float, default=1e-5)
p.add_argument("--atol", type=float, default=1e-6)
p.add_argument("--lrs", action="store_true")
p.add_argument("--terms", nargs="*", default=[])
p.add_argument("--first-step", type=int, default=1)
args = p.parse_args()

doc = json.load(open(args.reference))
ref = doc["losses"] if isinstance(doc, dict) else doc
failed = False
for path in args.runs:
    losses, lrs, terms = {}, {}, {}
    for line in open(path):
        m = re.match(r"step=(\d+) loss=(\S+)", line)
        if m:
            losses[int(m.group(1))] = float(m.group(2))
            lr = re.search(r" lr=(\S+)", line)
            lrs[int(m.group(1))] = float(lr.group(1)) if lr else None
            for name in args.terms:
                term = re.search(rf" {name}=(\S+)", line)
                terms[(name, int(m.group(1)))] = float(term.group(1)) if term else None
    first = args.first_step
    if first < 1 or sorted(losses) != list(range(first, len(ref) + 1)):
        print(f"{path}: steps {sorted(losses)}, expected {first}..{len(ref)}")
        failed = True
        continue
    for step, want in enumerate(ref[first - 1:], start=first):
        got = losses[step]
        ok = math.isfinite(got) and abs(got - want) <= args.atol + args.rtol * abs(want)
        print(f"{path}: step {step}: dsc {got!r} pytorch {want!r} {'ok' if ok else 'MISMATCH'}")
        failed |= not ok
        if args.lrs:
            got, want = lrs[step], doc["lrs"][step - 1]
            ok = got is not None and abs(got - want) <= 1e-12 + 1e-6 * abs(want)
            print(f"{path}: step {step}: lr {got!r} pytorch {want!r} {'ok' if ok else 'MISMATCH'}")
            failed |= not ok
        for name in args.terms:
            got, want = terms[(name, step)], doc[name][step - 1]
            ok = (got is not None and math.isfinite(got)
                  and abs(got - want) <= args.atol + args.rtol * abs(want))
            print(f"{path}: step {step}: {name} dsc {got!r} pytorch {want!r} {'ok' if ok else 'MISMATCH'}")
            failed |= not ok
sys.exit(1 if failed else 0)
