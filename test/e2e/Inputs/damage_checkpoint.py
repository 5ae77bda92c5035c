#!/usr/bin/env python3
"""Damages a copy of a dsc-run checkpoint step directory, for bad-input tests.

Usage: damage_checkpoint.py STEP_DIR flip TENSOR     one byte of TENSOR's
                                                      first piece inverted
       damage_checkpoint.py STEP_DIR strip-roles     metadata.json without
                                                      the tensors' roles
       damage_checkpoint.py STEP_DIR drop TENSOR     metadata.json without
                                                      TENSOR
       damage_checkpoint.py STEP_DIR role TENSOR R   metadata.json giving
                                                      TENSOR the role R
       damage_checkpoint.py STEP_DIR nan TENSOR      element 0 of TENSOR's
                                                      first piece (F32) a NaN,
                                                      its checksum updated to
                                                      match
"""
import json
import os
import struct
import sys

step, what = sys.argv[1], sys.argv[2]
meta_path = os.path.join(step, "metadata.json")
meta = json.load(open(meta_path))
if what in ("flip", "nan"):
    name = sys.argv[3]
    entry = meta["tensors"][name]
    piece = entry["pieces"][0] if "pieces" in entry else entry
    shard = os.path.join(step, piece["shard"])
    with open(shard, "r+b") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        begin, end = json.loads(f.read(n))[name]["data_offsets"]
        f.seek(8 + n + begin)
        byte = f.read(1)
        f.seek(8 + n + begin)
        if what == "flip":
            f.write(bytes([byte[0] ^ 0xFF]))
        else:
            f.write(struct.pack("<f", float("nan")))
            f.seek(8 + n + begin)
            checksum = 0xcbf29ce484222325  # FNV-1a 64, as dsc-run's
            for b in f.read(end - begin):
                checksum = ((checksum ^ b) * 0x100000001b3) % (1 << 64)
            piece["checksum"] = "%016x" % checksum
            json.dump(meta, open(meta_path, "w"), indent=2)
elif what == "strip-roles":
    for entry in meta["tensors"].values():
        entry.pop("role", None)
    json.dump(meta, open(meta_path, "w"), indent=2)
elif what == "drop":
    del meta["tensors"][sys.argv[3]]
    json.dump(meta, open(meta_path, "w"), indent=2)
elif what == "role":
    meta["tensors"][sys.argv[3]]["role"] = sys.argv[4]
    json.dump(meta, open(meta_path, "w"), indent=2)
else:
    sys.exit(f"damage_checkpoint.py: unknown damage '{what}'")
