#!/usr/bin/env python3
"""The e2e suite's shared inputs: the token data, the zoo models' exports
and dsc.golden's reference runs that several scenario files compare with,
made once (ctest's e2e-inputs fixture; the e2e lit config runs it too, so
that lit alone works) instead of once per file.

Usage: make_inputs.py OUT_DIR [-j N]

OUT_DIR/data.bin, OUT_DIR/<model>/b<B> (`dsc.export --set batch=B --set
seq=16`, EXPORTS) and OUT_DIR/gold/<name> (dsc.golden, 5 steps of batch 4,
seq 16, unless GOLDEN's options say otherwise, on the weights of the
batch-4 export). Everything is
deterministic. OUT_DIR/stamp records a hash of what the inputs are made
from (this file, python/dsc, the models); when it matches, nothing is
redone. A lock makes concurrent callers wait for one another.
"""
import argparse
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
MODELS = {
    "gpt2": (os.path.join(SRC, "examples", "models", "gpt2.py"), []),
    # GPT-2 with nn.Dropout(0.1) everywhere GPT-2 has one: after the embeddings,
    # on the attention probabilities, after attention and after the MLP.
    "gpt2-drop": (os.path.join(SRC, "examples", "models", "gpt2.py"), ["dropout=0.1"]),
    "moe": (os.path.join(SRC, "examples", "models", "moe_gpt.py"), ["k=2"]),
    "bert": (os.path.join(SRC, "examples", "models", "bert.py"), []),
    # A decoder outside the zoo: RMS norm, rotary positions, SwiGLU, untied head.
    "llama": (os.path.join(SRC, "test", "export", "Inputs", "llama_like.py"), []),
}
EXPORTS = [("gpt2", 4), ("gpt2", 2), ("gpt2", 1), ("moe", 4), ("moe", 2),
           ("bert", 4), ("bert", 2), ("llama", 4), ("llama", 2), ("gpt2-drop", 4),
           ("gpt2-drop", 2)]

ADAMW = ["--optim", "adamw", "--lr", "0.01"]
SGD = ["--optim", "sgd", "--lr", "0.1", "--momentum", "0.9", "--grad-clip", "1.0"]
SGD_NOCLIP = ["--optim", "sgd", "--lr", "0.1", "--momentum", "0.9"]
BF16 = ["--precision", "bf16"]
RANKS2 = ["--ranks", "2"]
# name: (model, dsc.golden options)
GOLDEN = {
    "gpt2-adamw": ("gpt2", ADAMW),
    "gpt2-sgd": ("gpt2", SGD),
    # Gradient accumulation: 2 micro-batches of 2 sequences per step.
    "gpt2-sgd-accum2": ("gpt2", SGD + ["--batch", "2", "--grad-accum", "2"]),
    "gpt2-bf16-adamw": ("gpt2", BF16 + ADAMW),
    "gpt2-bf16-adamw-r2": ("gpt2", BF16 + RANKS2 + ADAMW),
    "gpt2-bf16-sgd": ("gpt2", BF16 + SGD_NOCLIP),
    "gpt2-bf16-sgd-r2": ("gpt2", BF16 + RANKS2 + SGD_NOCLIP),
    "moe-adamw": ("moe", ADAMW),
    "moe-adamw-r2": ("moe", RANKS2 + ADAMW),
    "moe-sgd": ("moe", SGD),
    "moe-sgd-r2": ("moe", RANKS2 + SGD),
    # First-step gradients (dsc-run --gradients) of every zoo model.
    "gpt2-grad": ("gpt2", ["--optim", "sgd", "--lr", "0", "--steps", "1"]),
    "bert-grad": ("bert", ["--optim", "sgd", "--lr", "0", "--steps", "1"]),
    "moe-grad": ("moe", ["--optim", "sgd", "--lr", "0", "--steps", "1"]),
    "bert-adamw": ("bert", ADAMW),
    "bert-sgd": ("bert", SGD),
    "llama-adamw": ("llama", ADAMW),
    "llama-sgd": ("llama", SGD),
    # Dropout: PyTorch drawing dsc's masks (dsc.philox, dsc-run's default seed).
    "gpt2-drop-adamw": ("gpt2-drop", ADAMW),
}
PYTHON = "/usr/bin/python3"


def golden_args(name, inputs):
    """dsc.golden's arguments, but -o, for the reference GOLDEN[name] made
    from the inputs in INPUTS (compare_steps.py replays them)."""
    model, options = GOLDEN[name]
    path, sets = MODELS[model]
    args = [path, "--weights", os.path.join(inputs, model, "b4", "model.safetensors"),
            "--data", os.path.join(inputs, "data.bin"),
            "--steps", "5", "--batch", "4", "--seq", "16"] + options
    for s in sets:
        args += ["--set", s]
    return args


def fingerprint():
    h = hashlib.sha256()
    files = [os.path.abspath(__file__)] + [path for path, _ in MODELS.values()]
    pkg = os.path.join(SRC, "python", "dsc")
    files += sorted(os.path.join(pkg, f) for f in os.listdir(pkg) if f.endswith(".py"))
    for path in files:
        h.update(path.encode())
        h.update(open(path, "rb").read())
    return h.hexdigest()


def run(cmd, log):
    env = dict(os.environ, PYTHONPATH=os.path.join(SRC, "python"))
    env.pop("OPENBLAS_CORETYPE", None)  # the references use this machine's kernels
    with open(log, "w") as out:
        if subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env).returncode:
            raise RuntimeError(f"make_inputs: error: {' '.join(cmd)} failed; see {log}")


def make(out, jobs):
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "logs"))
    data = os.path.join(tmp, "data.bin")
    run([PYTHON, "-m", "dsc.data", "-o", data, "--limit", "30000"],
        os.path.join(tmp, "logs", "data.txt"))

    def export(item):
        model, batch = item
        path, sets = MODELS[model]
        cmd = [PYTHON, "-m", "dsc.export", path, "-o", os.path.join(tmp, model, f"b{batch}"),
               "--set", f"batch={batch}", "--set", "seq=16"]
        for s in sets:
            cmd += ["--set", s]
        run(cmd, os.path.join(tmp, "logs", f"export-{model}-b{batch}.txt"))

    def golden(name):
        cmd = [PYTHON, "-m", "dsc.golden"] + golden_args(name, tmp) + [
            "-o", os.path.join(tmp, "gold", name)]
        run(cmd, os.path.join(tmp, "logs", f"golden-{name}.txt"))

    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(export, EXPORTS))
        list(pool.map(golden, GOLDEN))
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("-j", "--jobs", type=int, default=2)
    args = p.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = os.path.join(out, "stamp")
        want = fingerprint()
        if os.path.exists(stamp) and open(stamp).read().strip() == want:
            return 0
        try:
            make(out, args.jobs)
        except RuntimeError as e:
            print(e, file=sys.stderr)
            return 1
        with open(stamp, "w") as f:
            f.write(want + "\n")
        print(f"make_inputs: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
