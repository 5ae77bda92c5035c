"""Reads a dsc-run checkpoint back into whole tensors (test helper).

load(ROOT) takes a `dsc-run --save` directory (its `latest` step),
load_step(ROOT/step_N) one of its steps, and each returns {name: numpy array} with every tensor whole: a replicated one from
its shard, a partitioned (ZeRO) one from its pieces, concatenated at their
offsets and reshaped to the whole shape that metadata.json records, a
tensor-parallel one from its slices, interleaved block by block.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "python"))
from dsc import safetensors  # noqa: E402
import numpy as np  # noqa: E402


def load(root):
    return load_step(os.path.join(root, open(os.path.join(root, "latest")).read().strip()))


def load_step(step):
    """The tensors of one saved step (a ROOT/step_N directory)."""
    meta = json.load(open(os.path.join(step, "metadata.json")))
    shards = {}

    def shard(name):
        if name not in shards:
            shards[name] = safetensors.load_numpy(os.path.join(step, name))[0]
        return shards[name]

    tensors = {}
    for name, entry in meta["tensors"].items():
        shape = tuple(entry["shape"])
        if "pieces" not in entry:
            tensors[name] = shard(entry["shard"])[name].reshape(shape)
            continue
        pieces = sorted(entry["pieces"], key=lambda p: p["offset"])
        if "blocks" in pieces[0]:
            # Tensor-parallel slices: piece i holds [:, i, :] of the whole
            # viewed as [blocks, pieces, count].
            blocks = pieces[0]["blocks"]
            parts = [shard(p["shard"])[name].reshape(blocks, -1) for p in pieces]
            tensors[name] = np.stack(parts, axis=1).reshape(shape)
            continue
        flat = np.concatenate([shard(p["shard"])[name].reshape(-1)
                               for p in pieces])
        tensors[name] = flat.reshape(shape)
    return tensors
