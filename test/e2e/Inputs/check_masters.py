#!/usr/bin/env python3
"""Checks a mixed-precision dsc-run checkpoint's parameter layout.

Usage: check_masters.py CHECKPOINT_DIR --precision bf16|fp16

Every fp32 master weight NAME.master must have its 16-bit parameter NAME
in the checkpoint (reassembled when ZeRO partitioned them), of the same
shape, equal bit for bit to the master rounded to nearest even (torch's
conversion): what the optimizer stores after every update, and what
dsc-run reads from fp32 weights. Prints the count and each kind's dtype;
exits 1 on any difference.
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checkpoints import load  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("checkpoint")
p.add_argument("--precision", choices=("bf16", "fp16"), required=True)
args = p.parse_args()

tensors = load(args.checkpoint)
narrow = {"bf16": (torch.bfloat16, np.uint16), "fp16": (torch.float16, np.float16)}
torch_type, stored_type = narrow[args.precision]
masters = sorted(n for n in tensors if n.endswith(".master"))
failed = False
for name in masters:
    master, param = tensors[name], tensors.get(name[:-len(".master")])
    if master.dtype != np.float32 or param is None or param.dtype != stored_type \
            or param.shape != master.shape:
        print(f"{name}: MISMATCH (no 16-bit parameter of its shape beside it)")
        failed = True
        continue
    rounded = torch.from_numpy(master).to(torch_type).view(torch.int16).numpy()
    if not np.array_equal(rounded.view(np.uint16), param.view(np.uint16)):
        print(f"{name}: MISMATCH (the parameter is not the master rounded)")
        failed = True
print(f"{len(masters)} fp32 masters, each with its {args.precision} parameter "
      f"rounded from it")
sys.exit(1 if failed or not masters else 0)
