"""Reads DIR/model.safetensors with nothing but struct, json and numpy (the
format as Hugging Face specifies it), checks every tensor's bytes against
the model that build() makes with the same seed, and checks that writing the
numpy arrays back produces an identical file."""
import json
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, sys.argv[3])
from dsc import export, safetensors  # noqa: E402
from dsc.capture import NamedState  # noqa: E402

path, model_file = sys.argv[1], sys.argv[2]
raw = open(path, "rb").read()
(n,) = struct.unpack("<Q", raw[:8])
assert n % 8 == 0, "header padded to 8 bytes"
header = json.loads(raw[8:8 + n])
meta = header.pop("__metadata__")
assert meta["format"] == "pt", meta
body = raw[8 + n:]
dtypes = {"F32": "<f4", "I64": "<i8", "F16": "<f2", "I32": "<i4"}
model, _ = export.build_model(model_file, {})
state = NamedState(model)
assert sorted(header) == sorted(state.tensors), (sorted(header), sorted(state.tensors))
arrays = {}
for name, info in header.items():
    b, e = info["data_offsets"]
    a = np.frombuffer(body[b:e], dtype=dtypes[info["dtype"]]).reshape(info["shape"])
    expected = state.tensors[name].detach().numpy()
    assert a.tobytes() == expected.astype(a.dtype).tobytes(), name
    arrays[name] = a
assert b"lm_head.weight" not in raw[8:8 + n], "a tied tensor is stored once"
copy = path + ".copy"
safetensors.save(arrays, copy, metadata=meta)
assert open(copy, "rb").read() == raw, "numpy round trip is byte-identical"
print(f"{len(header)} tensors identical")
