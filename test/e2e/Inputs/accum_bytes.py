"""Bytes sent per optimizer step, from two reports of one model compiled
with grad-accum 1 and grad-accum N:

    accum_bytes.py REPORT1.json REPORTN.json N

Checks that grad-accum N sends per update the bytes of grad-accum 1's
tensor collectives (those of more than one element: the gradients'
reductions and the parameters' gathers) plus the loss, one f32 (the mean
of each rank's micro-batch losses, reduced once behind the boundary, where
grad-accum 1 sends the global token sum and count), and that each of its
collectives runs once per update: no micro-batch communicates.
"""
import json
import sys


def split(path):
    comm = json.load(open(path))["comm"]
    calls = comm["per_call"]
    tensors = sum(c["bytes_sent"] * c["calls_per_update"]
                  for c in calls if c["payload_bytes"] > 8)
    once = all(c["calls_per_update"] == 1 for c in calls)
    return tensors, once, comm["bytes_sent_per_update"]


def main(one, many, n):
    t1, _, total1 = split(one)
    _, once, totaln = split(many)
    # The loss is one f32 (bucketed with the gradients or not).
    print(f"bytes per update: accum1 tensors {t1} (total {total1}),",
          f"accum{n} {totaln} = {t1} + 4:",
          "ok" if totaln == t1 + 4 and t1 > 0 else "MISMATCH")
    print(f"accum{n}: every collective once per update:",
          "ok" if once else "MISMATCH")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
