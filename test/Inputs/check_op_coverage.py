#!/usr/bin/env python3
"""Fails unless every op defined in DSCOps.td appears in each given test file.

Usage: check_op_coverage.py DSCOps.td TEST.mlir [TEST.mlir ...]

Guards the rule that every op is round-tripped in ops.mlir and has its
failures in invalid.mlir: adding an op without tests fails the suite.
"""
import re
import sys

td = open(sys.argv[1]).read()
# `def DSC_FooOp : DSC_Op<"foo", ...>` and class-based
# `def DSC_AddOp : DSC_BinaryOp<"add", ...>`.
ops = sorted(set(re.findall(r'^def DSC_\w+Op\s*:\s*DSC_\w*Op<"(\w+)"', td,
                            re.MULTILINE)))
if len(ops) < 10:
    sys.exit(f"found only {len(ops)} ops in {sys.argv[1]}; is the pattern stale?")
failed = False
for path in sys.argv[2:]:
    text = open(path).read()
    missing = [op for op in ops
               if not re.search(r'(\bdsc\.|"dsc\.)' + op + r'\b', text)]
    if missing:
        failed = True
        print(f"{path}: no test of " + ", ".join("dsc." + m for m in missing))
print(f"{len(ops)} ops checked")
sys.exit(1 if failed else 0)
