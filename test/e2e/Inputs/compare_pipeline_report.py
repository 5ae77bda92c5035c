"""Holds dsc-run's pipeline-group counters to each stage's report.

    compare_pipeline_report.py [--group G] RUN_OUTPUT STEPS REPORT_STAGE0.json [REPORT_STAGE1.json ...]

Rank r of a world of W ranks runs stage r // (W / P), P being the number
of reports. Its `[rank r] group=pipeline collective=K calls=.. bytes_sent=..`
lines, for the transfers (send, recv) and the sums over the pipeline group
(allReduce: the loss, tied weights' gradients), must equal STEPS times its
stage's report's per-update `send[pipeline]`, `recv[pipeline]` and
`all_reduce[pipeline]` figures, exactly: counters are integers. A kind
that one side lacks counts as 0 calls of 0 bytes. Prints one line per rank
and kind, "ok" or "MISMATCH". With --group G, the same for the collectives
over another group that lies within a stage (`expert`, `expert_data`,
`data`: each stage's report counts its own ranks').
"""
import json
import re
import sys

# dsc-run's names of the collectives; the transfers' are the report's.
KINDS = {"allReduce": "all_reduce", "allGather": "all_gather",
         "reduceScatter": "reduce_scatter", "allToAll": "all_to_all"}


def per_update(report_path, group):
    figures = {}
    for tally in json.load(open(report_path))["comm"]["per_update"]:
        m = re.fullmatch(rf"(\w+)\[{group}\]", tally["kind"])
        if m:
            calls, sent = figures.get(m.group(1), (0, 0))
            figures[m.group(1)] = (calls + tally["calls"],
                                   sent + tally["bytes_sent"])
    return figures


def main(run_path, steps, *reports, group="pipeline"):
    stages = [per_update(path, group) for path in reports]
    measured = {}
    for line in open(run_path):
        m = re.match(rf"\[rank (\d+)\] group={group} collective=(\w+) "
                     r"calls=(\d+) bytes_sent=(\d+)", line)
        if m and m.group(2) != "total":
            kind = KINDS.get(m.group(2), m.group(2))
            measured[(int(m.group(1)), kind)] = (int(m.group(3)),
                                                 int(m.group(4)))
    ranks = sorted({rank for rank, _ in measured})
    if not ranks or len(ranks) % len(stages):
        print(f"MISMATCH: {len(ranks)} ranks with {group} counters in "
              f"{run_path} for {len(stages)} stages")
        return
    per_stage = len(ranks) // len(stages)
    for rank in ranks:
        report = stages[rank // per_stage]
        transfers = {"send", "recv"} if group == "pipeline" else set()
        kinds = transfers | set(report) | {
            kind for r, kind in measured if r == rank}
        for kind in sorted(kinds):
            calls, sent = report.get(kind, (0, 0))
            want = (calls * int(steps), sent * int(steps))
            got = measured.get((rank, kind), (0, 0))
            print(f"rank {rank} {group} {kind} calls, bytes_sent {got} "
                  f"(report: {want}): {'ok' if got == want else 'MISMATCH'}")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--group"]:
        main(*args[2:], group=args[1])
    else:
        main(*args)
