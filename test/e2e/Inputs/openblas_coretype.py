#!/usr/bin/env python3
"""Picks the OpenBLAS core type the e2e suite's second run forces.

Usage: openblas_coretype.py other|CORE

Debian's OpenBLAS (openblas-pthread) chooses its kernels at run time from
the CPU (a CPU it does not know falls back to an older core's kernels) and
obeys OPENBLAS_CORETYPE. `other` picks a core type whose SGEMM kernels
differ from the ones this machine uses and that this CPU can execute (its
instructions are in /proc/cpuinfo's flags: forcing one the CPU lacks would
end in SIGILL); CORE names one, checked the same way. Then it checks that
OpenBLAS, loaded with OPENBLAS_CORETYPE set, reports that core. Prints the
core type on the first line and a note on the second; exits 1 with a
message when none can be forced.
"""
import ctypes
import os
import subprocess
import sys

# Core type: the CPU flags its kernels execute.
NEEDS = {
    "Prescott": {"pni"},
    "Sandybridge": {"avx"},
    "Haswell": {"avx2", "fma"},
    "Zen": {"avx2", "fma"},
    "SkylakeX": {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"},
}
# What to force, by the detected core: a different SGEMM kernel family
# (Zen runs Haswell's), the newest the CPU executes first.
PREFERENCE = ["Haswell", "Sandybridge", "Prescott"]
FAMILY = {"Zen": "Haswell", "Cooperlake": "SkylakeX", "SapphireRapids": "SkylakeX"}

QUERY = ("import ctypes; l = ctypes.CDLL('libopenblas.so.0'); "
         "l.openblas_get_corename.restype = ctypes.c_char_p; "
         "print(l.openblas_get_corename().decode())")


def corename(env):
    out = subprocess.run([sys.executable, "-c", QUERY], env=env, capture_output=True,
                         text=True)
    if out.returncode:
        raise SystemExit(f"openblas_coretype: error: cannot load libopenblas.so.0: "
                         f"{out.stderr.strip()}")
    return out.stdout.strip()


def cpu_flags():
    for line in open("/proc/cpuinfo"):
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    detected = corename(env)
    flags = cpu_flags()
    executable = [c for c, needs in NEEDS.items() if needs <= flags]
    if sys.argv[1] == "other":
        family = FAMILY.get(detected, detected)
        choices = [c for c in PREFERENCE if c in executable and c != family]
        if not choices:
            raise SystemExit(f"openblas_coretype: error: no core type other than "
                             f"{detected} that this CPU executes")
        chosen = choices[0]
    else:
        chosen = sys.argv[1]
        if chosen not in NEEDS:
            raise SystemExit(f"openblas_coretype: error: unknown core type '{chosen}' "
                             f"(known: {', '.join(NEEDS)})")
        if chosen not in executable:
            raise SystemExit(f"openblas_coretype: error: this CPU lacks "
                             f"{' '.join(sorted(NEEDS[chosen] - flags))} for {chosen}")
    got = corename(dict(env, OPENBLAS_CORETYPE=chosen))
    if got.lower() != chosen.lower():
        raise SystemExit(f"openblas_coretype: error: OPENBLAS_CORETYPE={chosen} "
                         f"gives core {got}")
    print(chosen)
    print(f"OPENBLAS_CORETYPE={chosen} (this machine's OpenBLAS core: {detected})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
