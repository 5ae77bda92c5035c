#!/usr/bin/env python3
"""Size of the generated C++ of a zoo model's training step and the host
compiler's time on it, with launches of the same kernel code sharing one
function (dsc-compile's default) beside one function per launch
(--no-share-kernels), measured in the same run (medians of --repeat builds,
no cache).

    /usr/bin/python3 bench/generated_code.py [--model M] [--size small]
        [--batch 4] [--seq 128] [--repeat 3] [-j 2] [--compile-flags "..."]

Prints, per mode: the kernel functions and bytes of C++ generated, the
artifact's size, and dsc-compile's wall time and the CPU time of it and
of every process it ran (the compilers' time, which -j spreads over the
cores but does not reduce).
"""
import glob
import os
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_cpu  # noqa: E402


def build(args, work, share, index):
    """One uncached build; returns (functions, C++ bytes, artifact bytes,
    wall s, CPU s)."""
    keep = f"{work}/{'shared' if share else 'own'}{index}"
    cmd = [f"{args.build}/bin/dsc-compile", f"{work}/m/model.mlir", "--no-cache",
           f"-j{args.jobs}", "--keep", keep, "-o", f"{keep}/step.so",
           "--share-kernels" if share else "--no-share-kernels",
           *shlex.split(args.compile_flags)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    sources = glob.glob(f"{keep}/**/*.cpp", recursive=True)
    text = "".join(open(s).read() for s in sources)
    functions = len(re.findall(r"^static void kernel\d+\(", text, re.M))
    return functions, len(text), os.path.getsize(f"{keep}/step.so"), wall, cpu


def main():
    p = zoo_cpu.parser(steps=0)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count())
    p.add_argument("--compile-flags", default="",
                   help="more dsc-compile options (e.g. \"--world-size=2 --zero-stage=3\")")
    args = p.parse_args()
    work = zoo_cpu.export(args)
    try:
        rows = {True: [], False: []}
        # Interleaved, so that the machine's drift affects both modes alike.
        for i in range(args.repeat):
            for share in (True, False):
                rows[share].append(build(args, work, share, i))
        print(f"{os.path.basename(args.model)} size={args.size} batch={args.batch} "
              f"seq={args.seq} {args.compile_flags} -j{args.jobs}, medians of "
              f"{args.repeat}")
        print(f"{'':>22} {'functions':>9} {'C++ KiB':>8} {'.so KiB':>8} "
              f"{'wall s':>7} {'CPU s':>7}")
        for share, name in ((False, "one per launch"), (True, "shared")):
            r = rows[share]
            print(f"{name:>22} {r[0][0]:>9} {r[0][1] / 1024:>8.0f} {r[0][2] / 1024:>8.0f} "
                  f"{statistics.median(x[3] for x in r):>7.2f} "
                  f"{statistics.median(x[4] for x in r):>7.2f}")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
