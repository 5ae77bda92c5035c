#!/usr/bin/env python3
"""Prints the per-rank arena (`dscrt.arena_bytes`, set by --dsc-plan-memory)
of two lowered modules and whether the second is smaller.

Usage: compare_arena.py WITHOUT.mlir WITH.mlir
"""
import re
import sys


def arena(path):
    found = re.findall(r"dscrt\.arena_bytes = (\d+)", open(path).read())
    if len(found) != 1:
        sys.exit(f"{path}: expected one dscrt.arena_bytes, found {len(found)}")
    return int(found[0])


without, with_ = arena(sys.argv[1]), arena(sys.argv[2])
print(f"arena {without} -> {with_} bytes: "
      + ("smaller" if with_ < without else "NOT SMALLER"))
