#!/usr/bin/env python3
"""Writes inputs for Inputs/tiny_classifier.mlir for the data-samples-*
bad-input tests.

Usage: data_samples.py weights OUT.safetensors
       data_samples.py samples OUT.safetensors [KIND]

samples: `features` F32 [6, 4] and `labels` I64 [6] in [0, 3), spoiled by
KIND: missing (no labels), extra (an attention_mask too), dtype (I32
labels), shape (features [6, 5]), empty (0 samples), uneven (5 labels),
label (sample 3's label is 3), nan (sample 4's features hold a NaN),
truncated (the file less its last 4 bytes), garbage (a header that is not
JSON).
"""
import struct
import sys

import numpy as np

from dsc import safetensors  # %torch_python puts python/ on the path

what, out = sys.argv[1], sys.argv[2]
kind = sys.argv[3] if len(sys.argv) > 3 else "good"
if what == "weights":
    rng = np.random.default_rng(0)
    safetensors.save({"fc.weight": rng.standard_normal((3, 4)).astype(np.float32),
                      "fc.bias": np.zeros(3, np.float32)}, out)
    sys.exit(0)
if what != "samples":
    sys.exit(f"data_samples.py: unknown kind '{what}'")

n = 0 if kind == "empty" else 6
tensors = {"features": np.arange(n * 4, dtype=np.float32).reshape(n, 4) / 10,
           "labels": np.arange(n, dtype=np.int64) % 3}
if kind == "missing":
    del tensors["labels"]
elif kind == "extra":
    tensors["attention_mask"] = np.ones((n, 4), np.bool_)
elif kind == "dtype":
    tensors["labels"] = tensors["labels"].astype(np.int32)
elif kind == "shape":
    tensors["features"] = np.zeros((n, 5), np.float32)
elif kind == "uneven":
    tensors["labels"] = tensors["labels"][:5]
elif kind == "label":
    tensors["labels"][3] = 3
elif kind == "nan":
    tensors["features"][4, 2] = np.nan
elif kind not in ("good", "empty", "truncated", "garbage"):
    sys.exit(f"data_samples.py: unknown samples kind '{kind}'")
safetensors.save(tensors, out)
if kind == "truncated":
    data = open(out, "rb").read()
    open(out, "wb").write(data[:-4])
elif kind == "garbage":
    text = b"this is not json"
    open(out, "wb").write(struct.pack("<Q", len(text)) + text)
