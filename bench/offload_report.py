#!/usr/bin/env python3
"""The per-rank report of a model under each offload mode, from dsc-opt's
--dsc-report=memory --dsc-report-format=json, as one Markdown table row per
mode (docs/offload.md, "The reports of GPT-2 124M and GPT-3 175B per offload
mode"): device peak and states, pinned host memory, NVMe file and its states,
copies and NVMe requests per update. Training modes are bf16 AdamW at ZeRO
stage 3; the eval modes are `--step=eval` (ZeRO-Inference: whole weights).

    /usr/bin/python3 bench/offload_report.py MODEL.mlir --world-size W
        [--name "GPT-2 124M"] [--sub-group N] [--extra=--checkpoint-activations]
        [--only "none;eval"]

Run it under `ulimit -v` at GPT-3 175B (dsc-opt's peak is a few GB).
"""
import argparse
import json
import os
import shlex
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DSC_OPT = os.path.join(ROOT, "build", "bin", "dsc-opt")


def modes(sub_group):
    train = ["--optimizer=adamw", "--zero-stage=3"]
    yield "none", train
    yield "optimizer cpu", train + ["--offload-optimizer=cpu"]
    yield "optimizer nvme", train + ["--offload-optimizer=nvme"]
    yield (f"optimizer nvme, sub-groups of {sub_group:.0e}",
           train + ["--offload-optimizer=nvme", f"--zero-sub-group-size={sub_group}"])
    yield "param cpu", train + ["--offload-param=cpu"]
    yield "param nvme", train + ["--offload-param=nvme"]
    yield "optimizer + param cpu", train + ["--offload-optimizer=cpu",
                                            "--offload-param=cpu"]
    yield (f"optimizer + param nvme, sub-groups of {sub_group:.0e}",
           train + ["--offload-optimizer=nvme", "--offload-param=nvme",
                    f"--zero-sub-group-size={sub_group}"])
    yield "eval", ["--step=eval"]
    yield "eval, param cpu", ["--step=eval", "--offload-param=cpu"]
    yield "eval, param nvme", ["--step=eval", "--offload-param=nvme"]


def gb(x):
    return f"{x / 1e9:.3f}"


def row(name, world, mode, m):
    host = m.get("host", {})
    nvme = m.get("nvme", {})
    t = m.get("transfers_per_update", {})
    pinned = host.get("pinned", 0)
    file = nvme.get("file", 0)
    nvme_states = sum(nvme.get(k, 0) for k in
                      ("master_weights", "optimizer_state", "parameters"))
    copies = (f"{t.get('d2h_calls', 0):,} × {gb(t.get('d2h_bytes', 0))}, "
              f"{t.get('h2d_calls', 0):,} × {gb(t.get('h2d_bytes', 0))}")
    io = (f"{t.get('nvme_reads', 0):,} × {gb(t.get('nvme_read_bytes', 0))}, "
          f"{t.get('nvme_writes', 0):,} × {gb(t.get('nvme_write_bytes', 0))}"
          if file else "—")
    return (f"| {name}, {world} | {mode} | {gb(m['peak'])} | "
            f"{gb(m['states_allocated'])} | {gb(pinned)} "
            f"({gb(host.get('states_allocated', 0))} + {gb(host.get('arena', 0))}) | "
            f"{gb(file)} ({gb(nvme_states)}) | {copies} | {io} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--world-size", type=int, required=True)
    p.add_argument("--name", default="model")
    p.add_argument("--sub-group", type=int, default=10**7)
    p.add_argument("--extra", default="")
    p.add_argument("--only", default="", help="mode names separated by ;")
    args = p.parse_args()
    only = set(filter(None, args.only.split(";")))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "report.json")
        for mode, flags in modes(args.sub_group):
            if only and mode not in only:
                continue
            cmd = [DSC_OPT, args.model, f"--world-size={args.world_size}",
                   "--precision=bf16", *flags, *shlex.split(args.extra),
                   "--dsc-report=memory,comm", "--dsc-report-format=json",
                   f"--dsc-report-file={path}", "-o", os.devnull]
            subprocess.run(cmd, check=True)
            with open(path) as f:
                m = json.load(f)["memory"][0]
            print(row(args.name, args.world_size, mode, m), flush=True)


if __name__ == "__main__":
    main()
