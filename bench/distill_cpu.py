#!/usr/bin/env python3
"""What distillation costs a training step on 1 CPU rank: the student's SGD
step alone and with a teacher (--distill-from), measured in the same run,
beside the FLOPs the teacher's forward adds (from --dsc-report) and the
student's own forward FLOPs, counted the same way (2 * M * N * K of the
matrix products). Medians over the steps after the first.

    /usr/bin/python3 bench/distill_cpu.py [--teacher-layers 4] [--student-layers 2]
        [--width 128] [--batch 32] [--seq 16] [--steps 12]

GPT-2 from the zoo (tiny's vocabulary of 256 and 16 positions, 4 heads) at
the given width.
"""
import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = "/usr/bin/python3"


def run(cmd, **kw):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kw)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--teacher-layers", type=int, default=4)
    p.add_argument("--student-layers", type=int, default=2)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--steps", type=int, default=12)
    args = p.parse_args()
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    work = tempfile.mkdtemp(prefix="dsc-distill-bench-")
    model = os.path.join(ROOT, "examples", "models", "gpt2.py")
    run([PYTHON, "-m", "dsc.data", "-o", f"{work}/data.bin", "--limit", "60000"], env=env)
    sets = ["--set", f"width={args.width}", "--set", "heads=4", "--set", f"batch={args.batch}",
            "--set", f"seq={args.seq}"]
    for name, layers in (("teacher", args.teacher_layers), ("student", args.student_layers)):
        run([PYTHON, "-m", "dsc.export", model, "-o", f"{work}/{name}",
             "--set", f"layers={layers}"] + sets, env=env)
    dsc = f"{args.build}/bin"
    common = ["--optimizer=sgd", "--lr=0.01", "--dsc-report=memory",
              "--dsc-report-format=json"]
    run([f"{dsc}/dsc-compile", f"{work}/student/model.mlir", "-o", f"{work}/plain.so",
         f"--dsc-report-file={work}/plain.json"] + common)
    run([f"{dsc}/dsc-compile", f"{work}/student/model.mlir", "-o", f"{work}/kd.so",
         f"--distill-from={work}/teacher/model.mlir", "--kd-temperature=2",
         f"--dsc-report-file={work}/kd.json"] + common)
    # The student's own forward FLOPs: the teacher's counter run on the
    # student as its own teacher.
    run([f"{dsc}/dsc-opt", f"{work}/student/model.mlir",
         f"--dsc-distill=teacher={work}/student/model.mlir", "-o", f"{work}/self.mlir"])
    self_flops = int(open(f"{work}/self.mlir").read().split("dsc.teacher_flops = ")[1].split(" ")[0])
    times = {}
    # Alternate the two artifacts so that the machine's load affects both.
    for rnd in range(2):
        for name in ("plain", "kd"):
            cmd = [f"{dsc}/dsc-run", f"{work}/{name}.so", "--weights",
                   f"{work}/student/model.safetensors", "--data", f"{work}/data.bin",
                   "--batch", str(args.batch), "--seq", str(args.seq),
                   "--steps", str(args.steps), "--metrics", f"{work}/{name}.csv"]
            if name == "kd":
                cmd += ["--teacher-weights", f"{work}/teacher/model.safetensors"]
            run(cmd)
            rows = list(csv.DictReader(open(f"{work}/{name}.csv")))
            times.setdefault(name, []).extend(float(r["step_time_s"]) for r in rows[1:])
    report = json.load(open(f"{work}/kd.json"))
    teacher_flops = report["teacher_flops"]
    teacher_bytes = report["memory"][0]["teacher_weights"]
    plain, kd = statistics.median(times["plain"]), statistics.median(times["kd"])
    print(f"GPT-2 width {args.width}: teacher {args.teacher_layers} layers, student "
          f"{args.student_layers}; batch {args.batch} x seq {args.seq}; SGD; medians of "
          f"{len(times['plain'])} steps each")
    print(f"student forward FLOPs (matrix products): {self_flops:,}")
    print(f"teacher forward FLOPs added:           {teacher_flops:,} "
          f"({teacher_flops / self_flops:.2f}x the student's forward, "
          f"{teacher_flops / (3 * self_flops):.2f}x its training step's ~3x forward)")
    print(f"teacher bytes per rank: {teacher_bytes:,}")
    print(f"step time: student alone {plain * 1e3:.2f} ms, with the teacher {kd * 1e3:.2f} ms, "
          f"overhead {kd / plain - 1:+.1%}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
