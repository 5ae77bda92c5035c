"""Bytes sent per optimizer step, from two reports of one model compiled
with grad-accum 1 and grad-accum N:

    accum_bytes.py REPORT1.json REPORTN.json N

Prints the tensor collectives' bytes per update of each (those of more
than one element: the gradients' reductions and the parameters' gathers),
"equal" when they are, and whether the difference of the totals is the
scalar collectives (the loss's global sum and token count, which every
micro-batch reduces to print its loss) of the N - 1 extra micro-batches.
"""
import json
import sys


def split(path):
    calls = json.load(open(path))["comm"]["per_call"]
    tensors = sum(c["bytes_sent"] * c["calls_per_update"]
                  for c in calls if c["payload_bytes"] > 8)
    scalars = sum(c["bytes_sent"] for c in calls if c["payload_bytes"] <= 8)
    total = json.load(open(path))["comm"]["bytes_sent_per_update"]
    return tensors, scalars, total


def main(one, many, n):
    t1, s1, total1 = split(one)
    tn, sn, totaln = split(many)
    print(f"tensor bytes per update: accum1 {t1} accum{n} {tn}",
          "equal" if t1 == tn > 0 else "DIFFERENT")
    extra = totaln - total1
    print(f"total accum1 {total1} accum{n} {totaln}: +{extra} =",
          f"{n - 1} x {s1} scalar bytes:",
          "ok" if s1 == sn and extra == (n - 1) * s1 else "MISMATCH")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
