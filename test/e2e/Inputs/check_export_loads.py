#!/usr/bin/env python3
"""Checks that a `dsc-ckpt export` file is the model's state_dict for torch.

Usage: check_export_loads.py MODEL.py EXPORT.safetensors MODEL.safetensors
                             [--set key=value ...]

EXPORT must hold exactly the tensors of MODEL.safetensors (what dsc.export
wrote for the model: its parameters and buffers), with the same names,
shapes and dtypes (fp32), and load into the PyTorch module MODEL.py builds
(the --set overrides as for dsc.export) by name, every tensor of the module
filled, none left over. Prints one line per check; exits 1 on any failure.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "python"))
from dsc import safetensors  # noqa: E402
from dsc.export import ExportError, build_model, parse_overrides  # noqa: E402
from dsc.golden import load_weights  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("model")
p.add_argument("export")
p.add_argument("reference")
p.add_argument("--set", action="append", default=[])
args = p.parse_args()

ours = safetensors.load_torch(args.export)
want = safetensors.load_torch(args.reference)
failed = False
for name in sorted(set(ours) | set(want)):
    a, b = ours.get(name), want.get(name)
    if a is None or b is None:
        print(f"{name}: {'MISSING from the export' if a is None else 'EXTRA in the export'}")
        failed = True
    elif tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
        print(f"{name}: MISMATCH {tuple(a.shape)} {a.dtype}, the model's "
              f"{tuple(b.shape)} {b.dtype}")
        failed = True
print(f"{len(ours)} tensors, names, shapes and dtypes "
      f"{'DIFFER' if failed else 'as in ' + os.path.basename(args.reference)}")

model, _ = build_model(args.model, parse_overrides(args.set))
try:
    state = load_weights(model, args.export)
    print(f"loaded into the torch module: {len(state.tensors)} tensors")
except ExportError as e:
    print(f"LOAD FAILED: {e}")
    failed = True
sys.exit(1 if failed else 0)
