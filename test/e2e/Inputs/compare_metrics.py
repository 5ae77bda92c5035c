#!/usr/bin/env python3
"""Compares the metric columns of dsc-run --metrics CSVs with a reference's.

Usage: compare_metrics.py REFERENCE.csv RUN.csv [RUN.csv ...] --columns C ...
                          [--rtol R] [--atol A]

For every step of REFERENCE.csv and each column C (a name, or a prefix
ending in `:` such as `exp_counts:` for all the layers' columns), every run
must hold the same value: counts (integers, or space-separated lists of
them: exp_counts) exactly, since they count routes; other numbers within
rtol/atol (fp32 defaults: 1e-5 / 1e-6). Prints one line per step and
column, `ok` or `MISMATCH`; exits 1 on any mismatch.
"""
import argparse
import csv
import math
import sys

p = argparse.ArgumentParser()
p.add_argument("reference")
p.add_argument("runs", nargs="+")
p.add_argument("--columns", nargs="+", required=True)
p.add_argument("--rtol", type=float, default=1e-5)
p.add_argument("--atol", type=float, default=1e-6)
args = p.parse_args()


def rows(path):
    return {int(row["step"]): row for row in csv.DictReader(open(path))}


def same(got, want):
    try:
        return [int(n) for n in got.split()] == [int(n) for n in want.split()]
    except ValueError:
        pass
    got, want = float(got), float(want)
    return math.isfinite(got) and abs(got - want) <= args.atol + args.rtol * abs(want)


ref = rows(args.reference)
names = list(next(iter(ref.values())))
columns = [n for c in args.columns for n in names
           if n == c or (c.endswith(":") and n.startswith(c))]
missing = [c for c in args.columns if not any(
    n == c or (c.endswith(":") and n.startswith(c)) for n in names)]
if missing or not ref:
    print(f"{args.reference}: no column {missing} or no steps: MISMATCH")
    sys.exit(1)
failed = False
for path in args.runs:
    run = rows(path)
    if sorted(run) != sorted(ref):
        print(f"{path}: steps {sorted(run)}, expected {sorted(ref)}: MISMATCH")
        failed = True
        continue
    for step in sorted(ref):
        for column in columns:
            got, want = run[step].get(column), ref[step][column]
            ok = got is not None and got != "" and same(got, want)
            print(f"{path}: step {step}: {column} {got!r} reference {want!r} "
                  f"{'ok' if ok else 'MISMATCH'}")
            failed |= not ok
sys.exit(1 if failed else 0)
