#!/usr/bin/env python3
"""Checks that a distilling run left its teacher's weights as it read them.

Usage: check_teacher_states.py TEACHER.safetensors DUMP [DUMP.rank1 ...]

DUMP is dsc-run --dump-states' file of each rank, in rank order. Every
state named `teacher.NAME` must equal tensor NAME of the teacher's weights
file bit for bit: whole where the rank holds it whole, or, where ZeRO
partitioned it over the world, the ranks' shards concatenated in rank
order (the tail past the tensor's elements is padding). Prints the count;
exits 1 on any difference, or when no teacher state was dumped.
"""
import sys

import numpy as np

from dsc.safetensors import load_numpy  # PYTHONPATH: the repository's python/

teacher, _ = load_numpy(sys.argv[1])
dumps = [load_numpy(path)[0] for path in sys.argv[2:]]
checked, bad = 0, 0
for name in sorted(dumps[0]):
    if not name.startswith("teacher."):
        continue
    want = np.asarray(teacher[name[len("teacher."):]])
    pieces = [np.asarray(dump[name]) for dump in dumps]
    if pieces[0].shape == want.shape:
        held = pieces  # every rank holds it whole
    else:
        flat = np.concatenate([p.reshape(-1) for p in pieces])[:want.size]
        held = [flat.reshape(want.shape)]
    for got in held:
        if got.dtype != want.dtype or got.tobytes() != want.tobytes():
            print(f"{name}: MISMATCH (differs from the teacher's file)")
            bad += 1
            break
    checked += 1
if checked == 0:
    print("no teacher state in the dump")
    sys.exit(1)
if bad:
    print(f"{bad} of {checked} teacher states differ from the teacher's file")
    sys.exit(1)
print(f"{checked} teacher states bit-identical to the teacher's file")
