#!/usr/bin/env python3
"""Runs a command and fails unless it exits with the given status.

Usage: expect_exit.py STATUS COMMAND [ARGS...]

`not` accepts any non-zero status; bad-input tests need exactly 1 (a
diagnostic), never a signal (a negative status here) or an assertion abort.
The command's stdout and stderr pass through for FileCheck.
"""
import subprocess
import sys

want = int(sys.argv[1])
proc = subprocess.run(sys.argv[2:], stdout=sys.stdout, stderr=sys.stderr,
                      timeout=120)
if proc.returncode != want:
    print(f"expect_exit: {sys.argv[2]} exited with {proc.returncode}, "
          f"expected {want}", file=sys.stderr)
    sys.exit(1)
