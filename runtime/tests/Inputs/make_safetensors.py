"""Writes safetensors inputs for SafeTensorsPythonTest (runtime/tests/io.cmake).

    PYTHONPATH=python /usr/bin/python3 runtime/tests/Inputs/make_safetensors.py OUTDIR

OUTDIR/model.safetensors holds a few PyTorch tensors written by
dsc.safetensors.save; OUTDIR/<name>.bin holds each tensor's raw bytes, copied
out of PyTorch's own memory so that the test's expectation does not go
through the writer it checks. The C++ test knows the names, dtypes, shapes and
metadata below; keep the two in step.
"""

import ctypes
import os
import sys

import torch

from dsc import safetensors


def tensors():
    return {
        "h.0.attn.c_attn.weight": torch.arange(6, dtype=torch.float32).reshape(2, 3) * 0.5 - 1,
        "h.0.attn.c_attn.bias": torch.tensor([0.1, -2.0, 65504.0, 1e-4, 0.0], dtype=torch.float16),
        "wte.weight": torch.tensor([[1.0, -1.5], [3.140625, 0.0], [1e30, -1e-30]]).to(torch.bfloat16),
        "idx": torch.tensor([0, -1, 2**40, -2**62], dtype=torch.int64),
        "step": torch.tensor(1234567890123, dtype=torch.int64),  # 0-d
        "empty": torch.zeros(0, 3),
        "\u00e9.bias": torch.tensor([2.5]),  # a non-ASCII name: \u escapes
    }


# In sorted order, as the C++ writer (a std::map) orders metadata.
METADATA = {"format": "pt", "note": "dsc \u2713 \"quoted\"\ttab \U0001F680"}


def raw_bytes(t):
    t = t.contiguous()
    size = t.numel() * t.element_size()
    return ctypes.string_at(t.data_ptr(), size) if size else b""


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    ts = tensors()
    safetensors.save(ts, os.path.join(outdir, "model.safetensors"), METADATA)
    for name, t in ts.items():
        with open(os.path.join(outdir, name + ".bin"), "wb") as f:
            f.write(raw_bytes(t))
    print(f"wrote {len(ts)} tensors to {outdir}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} OUTDIR")
    main(sys.argv[1])
