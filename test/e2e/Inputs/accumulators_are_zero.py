#!/usr/bin/env python3
"""Checks that a checkpoint of a gradient-accumulating run was saved at an
optimizer-step boundary: `optimizer.micro_step`, `optimizer.loss_acc` and
every `<param>.grad_acc` are zero.

Usage: accumulators_are_zero.py CHECKPOINT_DIR
"""
import glob
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "python"))
from dsc import safetensors  # noqa: E402

root = sys.argv[1]
step = open(os.path.join(root, "latest")).read().strip()
tensors = {}
for shard in sorted(glob.glob(os.path.join(root, step, "shard-*.safetensors"))):
    tensors.update(safetensors.load_numpy(shard)[0])
names = [n for n in tensors if n.endswith(".grad_acc") or n in (
    "optimizer.micro_step", "optimizer.loss_acc")]
nonzero = [n for n in names if np.any(tensors[n] != 0)]
for n in nonzero:
    print(f"{n}: NONZERO")
micro = sum(1 for n in names if n == "optimizer.micro_step")
print(f"{micro} micro-step count and {len(names) - micro} accumulators, "
      + ("all zero" if not nonzero else "NOT all zero"))
sys.exit(1 if nonzero or not micro else 0)
