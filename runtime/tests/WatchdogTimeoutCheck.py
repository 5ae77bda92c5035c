#!/usr/bin/env python3
"""Runs a command that must end by a collective timeout, and checks that it did.

Usage: WatchdogTimeoutCheck.py --within SECONDS --exit-code N
           --expect TEXT [--expect TEXT ...] -- COMMAND...

Passes only if COMMAND exits within SECONDS, with exit status N, and its
stderr contains every TEXT. A command still running after SECONDS is killed
with its whole process group (mpirun and its ranks) and the check fails, so
a watchdog that never fires fails the test instead of hanging it.
"""

import argparse
import os
import signal
import subprocess
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--within", type=float, required=True)
    parser.add_argument("--exit-code", type=int, required=True)
    parser.add_argument("--expect", action="append", default=[])
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command

    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=args.within)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        print(stdout + stderr)
        print(f"FAIL: still running after {args.within} s: the watchdog did "
              "not end the job")
        return 1
    elapsed = time.monotonic() - start
    print(stdout + stderr)

    failures = []
    if process.returncode != args.exit_code:
        failures.append(f"exit status {process.returncode}, expected "
                        f"{args.exit_code}")
    for text in args.expect:
        if text not in stderr:
            failures.append(f"stderr lacks {text!r}")
    for failure in failures:
        print("FAIL: " + failure)
    if not failures:
        print(f"ok: ended by the watchdog after {elapsed:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
