"""Checks the mixture-of-experts columns of a dsc-run --metrics CSV:

    check_exp_counts.py METRICS.csv ROUTES CAPACITY

Every layer's counts (one `exp_counts:<layer>` column each, the routes per
expert of rank 0's micro-batch before dropping) add up to ROUTES (tokens x
top-k), and `moe_dropped` is what a capacity of CAPACITY routes per expert
drops of them: the sum over layers and experts of max(0, count - CAPACITY).
Prints one line per step, and the layers found.
"""
import csv
import sys


def main(path, routes, capacity):
    rows = list(csv.DictReader(open(path)))
    layers = [c for c in rows[0] if c.startswith("exp_counts:")]
    print(f"layers: {' '.join(c.split(':', 1)[1] for c in layers)}")
    for row in rows:
        counts = [[int(n) for n in row[c].split()] for c in layers]
        sums_ok = all(sum(c) == routes for c in counts)
        dropped = sum(max(0, n - capacity) for c in counts for n in c)
        ok = sums_ok and int(row["moe_dropped"]) == dropped and dropped > 0
        print(f"step {row['step']}: dropped {row['moe_dropped']} of "
              f"{routes * len(layers)} routes:", "ok" if ok else "MISMATCH")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
