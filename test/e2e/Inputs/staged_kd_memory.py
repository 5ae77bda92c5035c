"""Checks dsc-run's memory on either side of staged KD's stop.

    staged_kd_memory.py COMPILE_TXT RUN_TXT RUN_ERR RESUMED_TXT

COMPILE_TXT is dsc-compile's output (the step variants' table: the arena of
the step with the teacher, then of the one without), RUN_TXT and RUN_ERR a
run across the stop (its summary on stdout, the release on stderr),
RESUMED_TXT the summary of a run resumed after the stop. Prints one line per
check, "... ok" or "... MISMATCH: <why>":

- the teacher's steps' arena is the step with the teacher's plan, the
  student's steps' the one without;
- the state the student's steps hold is the teacher's steps' less the
  teacher's states dsc-run says it released (more than none);
- the resumed run has only the student's steps and the same memory as the
  uninterrupted run's student's steps: the teacher's states and its arena
  were never allocated.
"""

import re
import sys


def fields(line):
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line)}


def phases(path):
    found = {}
    for line in open(path):
        m = re.match(r"\[rank 0\] staged_kd=(\w+) (.*)", line)
        if m:
            found[m.group(1)] = fields(m.group(2))
    return found


def check(what, ok, why):
    print(f"{what} " + ("ok" if ok else f"MISMATCH: {why}"))


def main(compile_txt, run_txt, run_err, resumed_txt):
    arenas = [int(a) for a in re.findall(r"teacher=(?:yes|no) .* arena_bytes=(\d+)",
                                         open(compile_txt).read())]
    run = phases(run_txt)
    teacher, student = run.get("teacher"), run.get("student")
    if len(arenas) != 2 or teacher is None or student is None:
        print(f"MISMATCH: arenas {arenas}, phases {sorted(run)}")
        return
    check("teacher arena", teacher["arena_high_water_bytes"] == arenas[0],
          f"{teacher['arena_high_water_bytes']} != {arenas[0]}")
    check("student arena", student["arena_high_water_bytes"] == arenas[1],
          f"{student['arena_high_water_bytes']} != {arenas[1]}")
    released = re.search(r"released the teacher's states \((\d+) bytes, (\d+) of them on "
                         r"the host\) and (\d+) bytes of arena", open(run_err).read())
    if not released:
        print("MISMATCH: no release line")
        return
    state, host, arena = (int(g) for g in released.groups())
    held = lambda p: p["state_bytes"] + p.get("host_state_bytes", 0)
    check("released state", state > 0 and held(teacher) - held(student) == state,
          f"{held(teacher)} - {held(student)} != {state}")
    check("released arena", arena == arenas[0] - arenas[1], f"{arena}")
    resumed = phases(resumed_txt)
    check("resumed", list(resumed) == ["student"] and
          {k: v for k, v in resumed["student"].items() if k != "steps"} ==
          {k: v for k, v in student.items() if k != "steps"},
          f"{resumed} vs {student}")


if __name__ == "__main__":
    main(*sys.argv[1:])
