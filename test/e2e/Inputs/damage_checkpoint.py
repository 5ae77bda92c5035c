#!/usr/bin/env python3
"""Damages a copy of a dsc-run checkpoint step directory, for bad-input tests.

Usage: damage_checkpoint.py STEP_DIR flip TENSOR     one byte of TENSOR's
                                                      first piece inverted
       damage_checkpoint.py STEP_DIR strip-roles     metadata.json without
                                                      the tensors' roles
"""
import json
import os
import struct
import sys

step, what = sys.argv[1], sys.argv[2]
meta_path = os.path.join(step, "metadata.json")
meta = json.load(open(meta_path))
if what == "flip":
    name = sys.argv[3]
    entry = meta["tensors"][name]
    shard = os.path.join(step, entry["pieces"][0]["shard"] if "pieces" in entry
                         else entry["shard"])
    with open(shard, "r+b") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        begin = json.loads(f.read(n))[name]["data_offsets"][0]
        f.seek(8 + n + begin)
        byte = f.read(1)
        f.seek(8 + n + begin)
        f.write(bytes([byte[0] ^ 0xFF]))
elif what == "strip-roles":
    for entry in meta["tensors"].values():
        entry.pop("role", None)
    json.dump(meta, open(meta_path, "w"), indent=2)
else:
    sys.exit(f"damage_checkpoint.py: unknown damage '{what}'")
