#!/usr/bin/env python3
"""Export time and peak memory of `dsc.export --meta` (parameters on torch's
meta device, no weights) on GPT shapes up to GPT-3 175B, beside the ordinary
export (real weights, model.safetensors) where the weights fit, measured in
the same run (medians of several runs); then dsc-opt's training pipeline on
each meta export, by default ZeRO-3 at world size 1024.

    /usr/bin/python3 bench/export_meta.py [--sizes small,gpt3-1.3b,gpt3-175b]
        [--real small] [--repeat 3] [--pipeline "--zero-stage=3 --world-size=1024"]

Sizes are examples/models/gpt2.py's (batch 1, its default sequence: the full
2048-token context for the GPT-3 shapes). The ordinary export runs with
--no-check, as --meta has no check. Peak memory is the child's maximum
resident set size.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from compile_time import ROOT, median_run


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="small,gpt3-1.3b,gpt3-175b")
    p.add_argument("--real", default="small",
                   help="sizes also exported with real weights (they must fit in memory)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--pipeline", default="--zero-stage=3 --world-size=1024")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = p.parse_args()
    dsc_opt = os.path.join(args.build, "bin", "dsc-opt")
    work = tempfile.mkdtemp(prefix="dsc-export-meta-")
    real = set(filter(None, args.real.split(",")))
    print(f"pipeline: dsc-opt {args.pipeline}")
    print("| size | parameters | --meta export s | peak MiB | export s | peak MiB | "
          "dsc-opt s | dsc-opt peak MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for size in args.sizes.split(","):
        def export(out, *flags):
            cmd = [sys.executable, "-m", "dsc.export",
                   os.path.join(ROOT, "examples/models/gpt2.py"), "-o", out,
                   "--set", f"size={size}", "--set", "batch=1", *flags]
            return median_run(cmd, args.repeat)

        out = os.path.join(work, size)
        meta = export(out, "--meta")
        with open(os.path.join(out, "signature.json")) as f:
            n = sum(e["numel"] for e in json.load(f)["parameters"])
        summary = subprocess.run([dsc_opt, os.path.join(out, "model.mlir"),
                                  "--dsc-print-summary", "-o", os.devnull],
                                 check=True, capture_output=True, text=True).stderr
        counted = int(re.search(r"^parameters: (\d+)", summary, re.M).group(1))
        if counted != n:
            sys.exit(f"{size}: dsc-opt counts {counted} parameters, the export {n}")
        ordinary = ("-", "-")
        if size in real:
            s, mib = export(os.path.join(work, size + "-real"), "--no-check")
            ordinary = (f"{s:.2f}", f"{mib:.0f}")
        compile_s, compile_mib = median_run(
            [dsc_opt, os.path.join(out, "model.mlir"), *args.pipeline.split(),
             "-o", os.devnull], args.repeat)
        print(f"| {size} | {n} | {meta[0]:.2f} | {meta[1]:.0f} | {ordinary[0]} | "
              f"{ordinary[1]} | {compile_s:.2f} | {compile_mib:.0f} |", flush=True)
    shutil.rmtree(work)


if __name__ == "__main__":
    os.environ["PYTHONPATH"] = os.path.join(ROOT, "python")
    main()
