"""What the CPU step benchmarks of zoo models share: their command line and
the data + export into a scratch directory."""
import argparse
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = "/usr/bin/python3"  # Debian's, with torch


def parser(steps):
    p = argparse.ArgumentParser()
    p.add_argument("--model", default=os.path.join(ROOT, "examples/models/gpt2.py"))
    p.add_argument("--size", default="small")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--torch-threads", type=int, default=os.cpu_count(),
                   help="PyTorch intra-op threads (default: every core, as dsc uses)")
    return p


def export(args):
    """Writes WORK/data.bin and the export of args.model at args' size,
    batch and sequence into WORK/m; returns WORK, a new scratch directory."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    work = tempfile.mkdtemp(prefix="dsc-bench-")
    subprocess.run([PYTHON, "-m", "dsc.data", "-o", f"{work}/data.bin"], env=env,
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([PYTHON, "-m", "dsc.export", args.model, "-o", f"{work}/m",
                    "--set", f"size={args.size}", "--set", f"batch={args.batch}",
                    "--set", f"seq={args.seq}"],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    return work
