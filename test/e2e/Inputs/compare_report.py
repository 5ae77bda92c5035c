"""Holds dsc-run's measured figures to the compiler's report.

    compare_report.py REPORT.json DSC_RUN_OUTPUT STEPS

For every rank dsc-run printed: peak_memory_bytes, state_bytes and the arena
high-water mark equal the report's peak, states_allocated and activations;
every collective kind's calls and bytes_sent, per group (the world, and the
expert and expert-data groups of expert parallelism: the report's
`all_to_all[expert]`, dsc-run's `group=expert` lines), equal STEPS times the
report's per-update figures; the copies between host and device memory per
direction (dsc-run's `transfer=d2h|h2d` lines) equal STEPS times the
report's `transfers_per_update`, and with ZeRO-Offload (`host_state_bytes`)
the host states and host arena the report's `host` figures; with
ZeRO-Infinity, the bytes of the NVMe states (`nvme_state_bytes`) the
report's `nvme` master weights, optimizer state, parameters and teacher
weights, and the NVMe reads and
writes (`nvme=read|write` lines) STEPS times the report's. Prints one line
per rank and figure, "ok" or "MISMATCH".
"""
import json
import re
import sys

KINDS = {"allReduce": "all_reduce", "allGather": "all_gather",
         "reduceScatter": "reduce_scatter", "allToAll": "all_to_all"}


def main(report_path, run_path, steps):
    report = json.load(open(report_path))
    memory = {entry["rank"]: entry for entry in report["memory"]}
    expected = {}
    for tally in report["comm"]["per_update"]:
        kind = tally["kind"]  # "all_reduce", or "all_reduce[expert_data]"
        calls, sent = expected.get(kind, (0, 0))
        expected[kind] = (calls + tally["calls"] * steps,
                          sent + tally["bytes_sent"] * steps)
    measured = {}
    ranks = set()
    for line in open(run_path):
        m = re.match(r"\[rank (\d+)\] peak_memory_bytes=(\d+) "
                     r"arena_high_water_bytes=(\d+) state_bytes=(\d+)", line)
        if m:
            rank, peak, arena, states = (int(g) for g in m.groups())
            ranks.add(rank)
            want = memory[rank]
            for name, got, exp in (("peak", peak, want["peak"]),
                                   ("arena", arena, want["activations"]),
                                   ("states", states, want["states_allocated"])):
                print(f"rank {rank} {name} {got} vs report {exp}: "
                      f"{'ok' if got == exp else 'MISMATCH'}")
            host = re.search(r"host_state_bytes=(\d+) host_arena_bytes=(\d+)", line)
            if host:
                states, arena = (int(g) for g in host.groups())
                want = memory[rank]["host"]
                for name, got, exp in (("host states", states, want["states_allocated"]),
                                       ("host arena", arena, want["arena"])):
                    print(f"rank {rank} {name} {got} vs report {exp}: "
                          f"{'ok' if got == exp else 'MISMATCH'}")
            nvme = re.search(r"nvme_state_bytes=(\d+)", line)
            if nvme:
                want = memory[rank]["nvme"]
                got = int(nvme.group(1))
                exp = (want["master_weights"] + want["optimizer_state"] +
                       want.get("parameters", 0) +
                       want.get("teacher_weights", 0))
                print(f"rank {rank} nvme states {got} vs report {exp}: "
                      f"{'ok' if got == exp else 'MISMATCH'}")
            continue
        m = re.match(r"\[rank (\d+)\] (transfer|nvme)=(d2h|h2d|read|write) "
                     r"calls=(\d+) bytes=(\d+)", line)
        if m:
            rank, way = int(m.group(1)), m.group(3)
            want = memory[rank]["transfers_per_update"]
            name, calls, size = (
                (f"{way} transfers", f"{way}_calls", f"{way}_bytes")
                if m.group(2) == "transfer" else
                (f"nvme {way}s", f"nvme_{way}s", f"nvme_{way}_bytes"))
            got = (int(m.group(4)), int(m.group(5)))
            exp = (want[calls] * steps, want[size] * steps)
            print(f"rank {rank} {name} calls, bytes {got} vs report {exp}: "
                  f"{'ok' if got == exp else 'MISMATCH'}")
            continue
        m = re.match(r"\[rank (\d+)\] (?:group=(\w+) )?collective=(\w+) "
                     r"calls=(\d+) bytes_sent=(\d+)", line)
        if m and m.group(3) != "total":
            kind = KINDS[m.group(3)] + (f"[{m.group(2)}]" if m.group(2) else "")
            measured[(int(m.group(1)), kind)] = (int(m.group(4)), int(m.group(5)))
    if not ranks:
        print("MISMATCH: no rank summary in", run_path)
    for rank in sorted(ranks):
        for kind in sorted(set(expected) | {k for r, k in measured if r == rank}):
            got = measured.get((rank, kind), (0, 0))
            exp = expected.get(kind, (0, 0))
            print(f"rank {rank} {kind} calls, bytes {got} vs report {exp}: "
                  f"{'ok' if got == exp else 'MISMATCH'}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
