#!/usr/bin/env python3
"""Training step of the GPT-2 zoo model on one GPU: each training artifact of
the bundle (bench/cuda/make-bundle.sh: fp32 and bf16, ZeRO stages 0, 2 and
3, all on one rank) run by dsc-run beside PyTorch training the same model
from the same weights on the same batches with the optimizer dsc compiled,
in the same run: the loss of every step, the worst relative difference,
medians of the step times after the first and dsc-run's memory lines.

The PyTorch side is dsc.golden's training loop (`--device cuda`: TF32 off,
PyTorch's default kernels), the reference every e2e test checks dsc with:
AdamW with dsc-compile's defaults (lr 1e-3, betas 0.9/0.999, eps 1e-8,
weight decay 0.01, bias correction, no schedule, no clipping; dsc-run's
printed lr is checked against it) and, for bf16 artifacts, DeepSpeed's mixed
precision (the module in bf16, fp32 master weights and optimizer). Where the
bundle holds the CPU artifact of a step, it runs too (dsc-run on the host,
a singleton MPI process). Checks, each printed with ok or MISMATCH:
  * dsc against PyTorch, and the CUDA target against the CPU target: fp32
    rtol 1e-5 / atol 1e-6; bf16 rtol 1.6e-2 (two bf16 ulps, as
    test/e2e/train-mp-*.test);
  * a ZeRO stage against the stage-0 artifact of the same model and
    precision on the same target: identical losses (one rank: each rank's
    update is the stage-0 one).
Exits 1 if a check fails.

Runs on a GPU machine that has PyTorch but no MLIR; the weights are
exported here. `--device cpu` is a dry run for a machine without a GPU:
PyTorch on the CPU and only the bundle's CPU artifacts.

    python3 bench/cuda/gpt2_train_cuda.py --bundle DIR [--steps 10] [--out DIR]
        [--only NAME,...] [--device cuda|cpu]
"""
import argparse
import csv
import json
import math
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402

from dsc import golden  # noqa: E402
from dsc.export import parse_overrides  # noqa: E402

MODEL = os.path.join(ROOT, "examples/models/gpt2.py")
LR = 1e-3  # dsc-compile's default (Passes.td, --dsc-optimizer)
WORK = "/tmp/dsc-gpu-train"
TOLERANCES = {"fp32": (1e-5, 1e-6), "bf16": (1.6e-2, 1e-6)}


def flag(flags, name, default):
    for f in flags:
        if f.startswith(f"--{name}="):
            return f.split("=", 1)[1]
    return default


def export_weights(sets, work, env):
    """The model's initial weights (dsc.export's seeded initialization)."""
    weights = os.path.join(work, "model.safetensors")
    if not os.path.exists(weights):
        t0 = time.time()
        subprocess.run([sys.executable, "-m", "dsc.export", MODEL, "-o", work, *sets,
                        "--capture", "make_fx", "--no-check"],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        print(f"exported gpt2 {shlex.join(sets)} in {time.time() - t0:.1f} s")
    return weights


class DscRunError(Exception):
    pass


def run_dsc(bundle, artifact, weights, batch, seq, steps, metrics):
    """dsc-run's training steps: losses, step times, learning rates and the
    lines that are not per-step."""
    cmd = [os.path.join(bundle, "bin/dsc-run"), artifact, "--weights", weights,
           "--data", os.path.join(bundle, "data.bin"), "--batch", str(batch),
           "--seq", str(seq), "--steps", str(steps), "--metrics", metrics]
    env = os.environ
    if artifact.endswith("_cpu.so"):  # its OpenMP runtime (make-bundle.sh)
        path = [os.environ.get("LD_LIBRARY_PATH"), os.path.join(bundle, "lib-cpu")]
        env = dict(env, LD_LIBRARY_PATH=":".join(p for p in path if p))
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    if out.returncode:
        raise DscRunError(f"{shlex.join(cmd)} failed ({out.returncode}):\n"
                          f"{out.stdout}{out.stderr}")
    rows = list(csv.DictReader(open(metrics)))
    lrs = [float(x) for x in re.findall(r"^step=\d+ .* lr=(\S+)", out.stdout, re.M)]
    return dict(loss=[float(r["loss"]) for r in rows],
                step_s=[float(r["step_time_s"]) for r in rows], lr=lrs,
                log=[l for l in out.stdout.splitlines() if not l.startswith("step=")])


def run_torch(sets, weights, data, batch, seq, steps, precision, device, work):
    """dsc.golden's training loop: losses, step times, learning rates."""
    args = golden.parse_args([MODEL, "--weights", weights, "--data", data,
                              "--steps", str(steps), "--batch", str(batch), "--seq", str(seq),
                              "--optim", "adamw", "--lr", repr(LR), "--precision", precision,
                              "--device", device, *sets, "-o", work])
    losses, _, _, lrs, times = golden.train(args)
    if device == "cuda":
        torch.cuda.empty_cache()  # for the next dsc-run
    return dict(loss=losses, step_s=times, lr=lrs)


def worst_rel(got, want):
    if len(got) != len(want) or not got:
        return math.inf
    return max(abs(a - b) / abs(b) for a, b in zip(got, want))


def check(what, got, want, rtol, atol):
    """Prints the comparison of two loss curves; True if it holds."""
    ok = len(got) == len(want) and all(
        abs(a - b) <= atol + rtol * abs(b) for a, b in zip(got, want))
    print(f"  {what}: worst relative difference {worst_rel(got, want):.2e} "
          f"(rtol {rtol:g}, atol {atol:g}): {'ok' if ok else 'MISMATCH'}")
    return ok


def run_artifact(args, name, d, sets, flags, zero, weights, stage0):
    """Runs one training artifact beside PyTorch and prints the checks;
    returns whether they hold, and the numbers."""
    precision = flag(flags, "precision", "fp32")
    rtol, atol = TOLERANCES[precision]
    overrides = parse_overrides(sets[1::2])
    batch, seq = overrides["batch"], overrides["seq"]
    work = os.path.join(WORK, name)
    os.makedirs(work, exist_ok=True)
    print(f"== {name}: gpt2 {shlex.join(sets)}; dsc-compile {shlex.join(flags) or '(defaults)'}"
          f" ({precision})")
    ok = True
    runs = {}
    for t in (["cuda"] if args.device == "cuda" else []) + ["cpu"]:
        if os.path.exists(os.path.join(d, f"step_{t}.so")):
            try:
                runs[t] = run_dsc(args.bundle, os.path.join(d, f"step_{t}.so"), weights, batch,
                                  seq, args.steps, os.path.join(work, f"{t}.csv"))
            except DscRunError as e:
                print(f"  {e}")
                ok = False
    targets = list(runs)
    ref = run_torch(sets, weights, os.path.join(args.bundle, "data.bin"), batch, seq,
                    args.steps, precision, args.device, work)
    cols = [(f"dsc {t}", runs[t]) for t in targets] + [(f"pytorch {args.device}", ref)]
    print("  step " + "".join(f"{c:>16}" for c, _ in cols))
    for i in range(args.steps):
        print(f"  {i + 1:4} " + "".join(f"{r['loss'][i]:16.7f}" for _, r in cols))
    for t in targets:
        ok &= check(f"dsc {t} vs pytorch {args.device}", runs[t]["loss"], ref["loss"],
                    rtol, atol)
        # dsc prints its f32 learning rate; golden's are doubles.
        ok &= check(f"dsc {t} lr vs pytorch's", runs[t]["lr"], ref["lr"], 1e-6, 0)
    if "cuda" in runs and "cpu" in runs:
        ok &= check("dsc cuda vs dsc cpu", runs["cuda"]["loss"], runs["cpu"]["loss"],
                    rtol, atol)
    base = [f for f in flags if not f.startswith("--zero-")]
    for t in targets:
        key = (tuple(sets), tuple(base), t)
        if zero == 0:
            stage0[key] = (name, runs[t]["loss"])
        elif key in stage0:
            ok &= check(f"dsc {t} ZeRO stage {zero} vs stage 0 ({stage0[key][0]})",
                        runs[t]["loss"], stage0[key][1], 0, 0)
    if targets:
        main_run = runs[targets[0]]
        dm, tm = statistics.median(main_run["step_s"][1:]), statistics.median(ref["step_s"][1:])
        tok = batch * seq
        print(f"  step time, median of steps 2..{args.steps}: dsc {targets[0]} {dm:.5f} s "
              f"({tok / dm:.0f} tokens/s), pytorch {args.device} {tm:.5f} s "
              f"({tok / tm:.0f} tokens/s); dsc / pytorch {dm / tm:.3f}")
        print("  dsc-run " + targets[0] + ":", *main_run["log"], sep="\n    ")
    else:
        print(f"  no dsc run on {args.device}: PyTorch only")
    return ok, dict(sets=sets, flags=flags, precision=precision, dsc=runs, torch=ref)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bundle", required=True)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--out", default=None)
    p.add_argument("--only", default=None, help="comma-separated artifact names")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="cpu: a dry run without a GPU (the CPU artifacts only)")
    args = p.parse_args()
    if args.steps < 2:
        p.error("--steps must be at least 2 (the medians leave out the first)")
    root = os.path.join(args.bundle, "train")
    names = sorted(os.listdir(root))
    if args.only:
        unknown = set(args.only.split(",")) - set(names)
        if unknown:
            p.error(f"--only: no artifact {', '.join(sorted(unknown))} in {root}")
        names = [n for n in names if n in args.only.split(",")]
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    results = {"torch": torch.__version__, "device": args.device, "steps": args.steps,
               "artifacts": {}}
    if args.device == "cuda":
        results["gpu"] = torch.cuda.get_device_name(0)
    # Exports first, then the smallest model first (the parity checks come
    # before the long runs), stage 0 before the ZeRO stages compared with it.
    arts = []
    for name in names:
        d = os.path.join(root, name)
        sets = open(os.path.join(d, "sets.txt")).read().split()
        flags = open(os.path.join(d, "flags.txt")).read().split()
        work = os.path.join(WORK, "-".join(s.replace("=", "") for s in sets[1::2]))
        weights = export_weights(sets, work, env)
        arts.append((os.path.getsize(weights), int(flag(flags, "zero-stage", "0")), name, d,
                     sets, flags, weights))
    arts.sort()
    failed = False
    stage0 = {}  # (sets, flags without ZeRO's, target) -> (name, losses)
    for _, zero, name, d, sets, flags, weights in arts:
        try:
            ok, results["artifacts"][name] = run_artifact(args, name, d, sets, flags, zero,
                                                          weights, stage0)
        except Exception:  # the next artifacts still run: one GPU call answers all
            traceback.print_exc(file=sys.stdout)
            ok = False
        failed |= not ok
    if args.out:
        with open(os.path.join(args.out, "gpt2_train_cuda.json"), "w") as f:
            json.dump(results, f, indent=1)
    print("all checks ok" if not failed else "SOME CHECKS FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
