#!/usr/bin/env python3
"""Writes inputs for runtime/tests/Inputs/tiny_lm.mlir (vocabulary 16, width
8) for the data-* bad-input tests.

Usage: data_tiny_lm.py weights OUT.safetensors [--scale S] [--set TENSOR INDEX VALUE]
       data_tiny_lm.py tokens OUT.bin [--set INDEX VALUE]
       data_tiny_lm.py header-short FILE.safetensors BYTES

weights: the three tensors, small and finite, times S; --set writes VALUE
(a float: nan, inf, -inf, 1e30...) at flat INDEX of TENSOR.
tokens: 64 token ids 0, 1, ..., 15, 0, 1, ...; --set writes id VALUE at
INDEX.
header-short: lowers FILE's header length field by BYTES, in place.
"""
import sys

import numpy as np

from dsc import safetensors  # %torch_python puts python/ on the path

what, out, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
if what == "weights":
    scale = float(rest[rest.index("--scale") + 1]) if "--scale" in rest else 1.0
    rng = np.random.default_rng(0)
    tensors = {
        "wte.weight": rng.standard_normal((16, 8)).astype(np.float32) * 0.1,
        "head.weight": rng.standard_normal((16, 8)).astype(np.float32) * 0.1,
        "head.bias": np.zeros(16, np.float32),
    }
    tensors = {k: (v * np.float32(scale)).astype(np.float32) for k, v in tensors.items()}
    if "--set" in rest:
        i = rest.index("--set")
        tensors[rest[i + 1]].reshape(-1)[int(rest[i + 2])] = float(rest[i + 3])
    safetensors.save(tensors, out)
elif what == "tokens":
    ids = (np.arange(64) % 16).astype(np.uint16)
    if "--set" in rest:
        i = rest.index("--set")
        ids[int(rest[i + 1])] = int(rest[i + 2])
    ids.tofile(out)
elif what == "header-short":
    with open(out, "r+b") as f:
        (n,) = np.frombuffer(f.read(8), "<u8")
        f.seek(0)
        f.write(np.array([n - int(rest[0])], "<u8").tobytes())
else:
    sys.exit(f"data_tiny_lm.py: unknown kind '{what}'")
