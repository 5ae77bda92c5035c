#!/usr/bin/env python3
"""Collective calls and memory per rank with and without bucketing, from
dsc-opt's report (--dsc-report=memory,comm): for each ZeRO stage, DeepSpeed's
default buckets (5e8 elements), a smaller reduce bucket, and bucketing off.
The bytes sent must not change with the buckets; the calls and the arena do.

    bench/bucket_report.py MODEL.mlir [--world-size 8] [--precision bf16]
"""
import argparse
import os
import tempfile

from zero_report import report  # the same dsc-opt --dsc-report call

SETTINGS = [
    ("5e8 / 5e8 (default)", []),
    ("5e7 / 5e8", ["--zero-reduce-bucket-size=50000000"]),
    ("off", ["--zero-reduce-bucket-size=0", "--zero-allgather-bucket-size=0"]),
]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--world-size", type=int, default=8)
    p.add_argument("--precision", default="bf16")
    p.add_argument("--stages", default="0,1,2,3")
    p.add_argument("--extra", default="--zero-persistence-threshold=0")
    args = p.parse_args()
    print("| stage | buckets (reduce / allgather elements) | calls / step | bytes sent / rank "
          "| largest bucket (B) | prefetch (B) | arena (B) | peak (B) |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for stage in args.stages.split(","):
            table(args, stage, os.path.join(tmp, "report.json"))


def table(args, stage, path):
    sent = set()
    for name, flags in SETTINGS:
        r, _ = report(args.model, stage, args.world_size, args.precision,
                      [*args.extra.split(), *flags], path)
        m, c = r["memory"][0], r["comm"]
        sent.add(c["bytes_sent_per_update"])
        print(f"| {stage} | {name} | {len(c['per_call'])} | {c['bytes_sent_per_update']:,} "
              f"| {m['buckets']:,} | {m['prefetch']:,} | {m['activations']:,} "
              f"| {m['peak']:,} |")
    if len(sent) != 1:
        raise SystemExit(f"stage {stage}: bytes sent differ with the buckets: {sent}")


if __name__ == "__main__":
    main()
