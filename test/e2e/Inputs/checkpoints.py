"""Reads a dsc-run checkpoint back into whole tensors (test helper).

load(ROOT) takes a `dsc-run --save` directory (its `latest` step),
load_step(ROOT/step_N) one of its steps, and each returns {name: numpy array} with every tensor whole: a replicated one from
its shard, a partitioned (ZeRO) one from its pieces, concatenated at their
offsets and reshaped to the whole shape that metadata.json records, a
tensor-parallel one from its slices, interleaved block by block, and ZeRO's
shards of such slices at the elements of the slice they hold.
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
        # Each piece holds elements of the flattened whole: one range from
        # its offset, or a tensor-parallel slice's `blocks` ranges of
        # `block_elements` (count / blocks without it) `stride` apart, of
        # which ZeRO's shard of a slice keeps a run from its `first`.
        flat = None
        for p in entry["pieces"]:
            data = shard(p["shard"])[name].reshape(-1)
            if flat is None:
                flat = np.zeros(int(np.prod(shape, dtype=np.int64)), data.dtype)
            if "blocks" not in p:
                flat[p["offset"]:p["offset"] + data.size] = data
                continue
            count = p.get("block_elements", data.size // p["blocks"])
            j = p.get("first", 0) + np.arange(data.size)
            flat[p["offset"] + (j // count) * p["stride"] + j % count] = data
        tensors[name] = flat.reshape(shape)
    return tensors
