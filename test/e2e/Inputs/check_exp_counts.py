"""Checks the mixture-of-experts columns of a dsc-run --metrics CSV:

    check_exp_counts.py METRICS.csv ROUTES CAPACITY
    check_exp_counts.py METRICS.csv --steps R:C,R:C... [R:C,R:C... ...]

Every layer's counts (one `exp_counts:<layer>` column each, the routes per
expert of rank 0's micro-batch before dropping) add up to ROUTES (tokens x
top-k), and `moe_dropped` is what a capacity of CAPACITY routes per expert
drops of them: the sum over layers and experts of max(0, count - CAPACITY).
With --steps, each step has its own ROUTES:CAPACITY per layer (one
argument per step, one pair per layer: the layers of random-LTD's blocks
see the kept tokens only). Prints one line per step, and the layers found.
"""
import csv
import sys


def main(path, plans):
    rows = list(csv.DictReader(open(path)))
    layers = [c for c in rows[0] if c.startswith("exp_counts:")]
    print(f"layers: {' '.join(c.split(':', 1)[1] for c in layers)}")
    if len(plans) != len(rows):
        print(f"{len(rows)} steps, expected {len(plans)}: MISMATCH")
        return
    for row, plan in zip(rows, plans):
        if len(plan) == 1:
            plan = plan * len(layers)
        counts = [[int(n) for n in row[c].split()] for c in layers]
        sums_ok = len(plan) == len(counts) and all(
            sum(c) == routes for c, (routes, _) in zip(counts, plan))
        dropped = sum(max(0, n - capacity) for c, (_, capacity) in zip(counts, plan)
                      for n in c)
        ok = sums_ok and int(row["moe_dropped"]) == dropped and dropped > 0
        print(f"step {row['step']}: dropped {row['moe_dropped']} of "
              f"{sum(routes for routes, _ in plan)} routes:", "ok" if ok else "MISMATCH")


def pairs(text):
    return [tuple(int(n) for n in pair.split(":")) for pair in text.split(",")]


if __name__ == "__main__":
    if sys.argv[2] == "--steps":
        main(sys.argv[1], [pairs(a) for a in sys.argv[3:]])
    else:
        rows = sum(1 for _ in open(sys.argv[1])) - 1
        main(sys.argv[1], [[(int(sys.argv[2]), int(sys.argv[3]))]] * rows)
