"""Writes the inputs of the ranks-* tests for the tiny language model of
runtime/tests/Inputs/tiny_lm.mlir (vocabulary 16, width 8).

    ranks-job.py OUTDIR

OUTDIR/weights.safetensors  the weights (deterministic values)
OUTDIR/other.safetensors    the same but for one element of head.bias
OUTDIR/nan.safetensors      the same but for one NaN in head.bias
OUTDIR/data.bin             tokens: flat little-endian uint16, all < 16

Plain Python (struct, json): the tests need no numpy or torch.
"""

import json
import math
import os
import struct
import sys

SHAPES = {"head.bias": [16], "head.weight": [16, 8], "wte.weight": [16, 8]}


def values(name):
    count = math.prod(SHAPES[name])
    seed = sum(map(ord, name))
    return [((seed + 7 * i) % 23 - 11) / 32.0 for i in range(count)]


def save(path, tensors):
    header, data, offset = {}, b"", 0
    for name in sorted(tensors):
        raw = struct.pack(f"<{len(tensors[name])}f", *tensors[name])
        header[name] = {"dtype": "F32", "shape": SHAPES[name],
                        "data_offsets": [offset, offset + len(raw)]}
        data += raw
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":"))
    text += " " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text.encode() + data)


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    weights = {name: values(name) for name in SHAPES}
    save(os.path.join(outdir, "weights.safetensors"), weights)
    other = dict(weights, **{"head.bias": list(weights["head.bias"])})
    other["head.bias"][3] += 0.5
    save(os.path.join(outdir, "other.safetensors"), other)
    nan = dict(weights, **{"head.bias": list(weights["head.bias"])})
    nan["head.bias"][5] = float("nan")
    save(os.path.join(outdir, "nan.safetensors"), nan)
    tokens = [(5 * i + 3) % 16 for i in range(512)]
    with open(os.path.join(outdir, "data.bin"), "wb") as f:
        f.write(struct.pack(f"<{len(tokens)}H", *tokens))


if __name__ == "__main__":
    main(sys.argv[1])
