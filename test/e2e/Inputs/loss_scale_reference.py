#!/usr/bin/env python3
"""DeepSpeed's DynamicLossScaler (deepspeed/runtime/fp16/loss_scaler.py,
update_scale), written out again with its own state (cur_iter,
last_overflow_iter, cur_hysteresis), for a given sequence of clean (C) and
overflowing (O) steps. Prints, per step, the scale the step used and the
running count of skipped steps, as dsc-run's step line spells them:

    loss_scale_reference.py PATTERN --power P --hysteresis H --window W [--min-scale M]
"""
import argparse

p = argparse.ArgumentParser()
p.add_argument("pattern")
p.add_argument("--power", type=int, default=16)
p.add_argument("--hysteresis", type=int, default=2)
p.add_argument("--window", type=int, default=1000)
p.add_argument("--min-scale", type=float, default=1.0)
args = p.parse_args()

cur_scale = 2.0 ** args.power
cur_iter, last_overflow_iter, cur_hysteresis = 0, -1, args.hysteresis
skipped = 0
for step, kind in enumerate(args.pattern, start=1):
    overflow = kind == "O"
    used = cur_scale
    if overflow:
        skipped += 1
        if args.hysteresis == 1 or cur_hysteresis == 1:
            cur_scale = max(cur_scale / 2, args.min_scale)
        else:
            cur_hysteresis -= 1
        last_overflow_iter = cur_iter
    else:
        stable_interval = (cur_iter - last_overflow_iter) - 1
        if stable_interval > 0 and stable_interval % args.window == 0:
            cur_hysteresis = args.hysteresis
            cur_scale *= 2
    cur_iter += 1
    print(f"step={step} loss_scale={used:.9g} skipped={skipped}")
