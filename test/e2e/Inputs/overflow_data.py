#!/usr/bin/env python3
"""Writes a token file for overflow_model.mlir: step k (batch 1, sequence 1)
reads token k-1, 200 for an overflowing step (O) and 0 for a clean one (C).

Usage: overflow_data.py PATTERN OUT.bin
"""
import sys

import numpy as np

pattern, out = sys.argv[1], sys.argv[2]
tokens = [200 if c == "O" else 0 for c in pattern] + [0]
np.array(tokens, dtype="<u2").tofile(out)
