#!/usr/bin/env python3
"""The losses of a dsc-run log (`step=N loss=X` lines, in step order) as a
JSON list, the reference compare_losses.py takes.

Usage: losses_json.py RUN.txt
"""
import json
import re
import sys

losses = {}
for line in open(sys.argv[1]):
    m = re.match(r"step=(\d+) loss=(\S+)", line)
    if m:
        losses[int(m.group(1))] = float(m.group(2))
print(json.dumps([losses[s] for s in sorted(losses)]))
