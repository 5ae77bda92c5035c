"""Compares one collective's counters in two dsc-run outputs.

    compare_counters.py RUN_A RUN_B GROUP KIND FIELD RATIO

For every rank of RUN_A, dsc-run's summary line `[rank r] group=GROUP
collective=KIND calls=.. bytes_sent=..` (GROUP `world` for the line
without a group) gives FIELD (`calls` or `bytes_sent`); RUN_B's must be
RUN_A's times RATIO (a fraction such as 1/2), exactly: counters are
integers. Prints one line per rank, "ok" or "MISMATCH".
"""
import re
import sys
from fractions import Fraction


def counters(path, group, kind, field):
    found = {}
    for line in open(path):
        m = re.match(r"\[rank (\d+)\] (?:group=(\w+) )?collective=(\w+) "
                     r"calls=(\d+) bytes_sent=(\d+)", line)
        if not m or (m.group(2) or "world") != group or m.group(3) != kind:
            continue
        found[int(m.group(1))] = int(m.group(4) if field == "calls" else m.group(5))
    return found


def main(a, b, group, kind, field, ratio):
    first = counters(a, group, kind, field)
    second = counters(b, group, kind, field)
    if not first:
        print(f"MISMATCH: no {group} {kind} counters in {a}")
    for rank in sorted(first):
        want = first[rank] * Fraction(ratio)
        got = second.get(rank)
        print(f"rank {rank} {group} {kind} {field} {first[rank]} -> {got} "
              f"(want {want}): {'ok' if got == want else 'MISMATCH'}")


if __name__ == "__main__":
    main(*sys.argv[1:7])
