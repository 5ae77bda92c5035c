#!/usr/bin/env python3
"""Checks an Adam training run of dsc-run one step at a time against
PyTorch (dsc.golden's trainer), from dsc's own state: for every saved step
t, with dsc's checkpoint t-1 (the initial weights for t = 1) as the state
before it and its checkpoint t as the state after:

1. the gradient. dsc's gradient g is recovered from its first moment
   (m_t = b1 m_{t-1} + (1-b1) g, within r, four fp32 roundings of the
   terms) and must be PyTorch's gradient at the same weights and batch
   within atol + rtol |g_pt| + 2 nu + r: rtol is fp32's 1e-5, or two units
   in the last place of the 16-bit format a mixed-precision module
   computes in; nu is the rounding noise dsc.golden measures (the largest
   distance of PyTorch's gradient to a float64 one, per tensor), which
   both sides' gradients carry;
2. the optimizer. PyTorch's optimizer takes the step from dsc's state
   (parameters or fp32 masters, moments, step count) with dsc's gradient;
   dsc's parameters and moments after the step must equal its result
   within fp32 rtol/atol plus what r can move one Adam step
   (adam_bound.StepBound with dg = r: next to nothing).

Comparing whole runs instead would not be rigorous: Adam turns gradient
rounding noise into moves of lr, which change every later step whoever
computes it (adam_bound.py says by how much).

Usage: compare_steps.py [--rtol R] [--atol A] CHECKPOINT [CHECKPOINT ...]
                        (--gold INPUTS/gold/NAME | -- GOLDEN_ARGS)

What PyTorch trains: --gold names one of the suite's shared references
(make_inputs.py's GOLDEN table, with the inputs beside it), or GOLDEN_ARGS
are dsc.golden's arguments (model, --weights, --data, --batch, --seq,
--optim adam|adamw, --lr, schedule, precision, ...) without -o. Each
CHECKPOINT is a `dsc-run --save DIR --save-interval 1` directory; step_N
is taken from the first that has it (a resumed run: the run it resumed
from, then its own). Every step t whose step t-1 is there too (or t = 1)
is compared; at least one must be. Prints one line per step with the
largest error / tolerance of gradients, values and moments (and one line
per tensor that does not match); exits 1 on any mismatch.
"""
import argparse
import os
import re
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "python"))
from dsc import golden  # noqa: E402
from adam_bound import StepBound  # noqa: E402
from checkpoints import load_step  # noqa: E402
import make_inputs  # noqa: E402

split = sys.argv.index("--") if "--" in sys.argv else len(sys.argv)
p = argparse.ArgumentParser()
p.add_argument("checkpoints", nargs="+")
p.add_argument("--rtol", type=float, default=1e-5)
p.add_argument("--atol", type=float, default=1e-6)
p.add_argument("--gold", metavar="INPUTS/gold/NAME")
args = p.parse_args(sys.argv[1:split])
if bool(args.gold) == (split < len(sys.argv)):
    p.error("give either --gold or -- GOLDEN_ARGS")
reference = sys.argv[split + 1:]
if args.gold:
    gold = os.path.abspath(args.gold)
    reference = make_inputs.golden_args(os.path.basename(gold),
                                        os.path.dirname(os.path.dirname(gold)))
# The trainer takes the steps the checkpoints hold and writes nothing: the
# run length and output dsc.golden requires are placeholders.
train_args = golden.parse_args(reference + ["--steps", "0", "-o", os.devnull])
if train_args.optim not in ("adam", "adamw"):
    raise SystemExit(f"--optim {train_args.optim}: compare_steps.py checks Adam")

steps = {}
for root in args.checkpoints:
    for entry in sorted(os.listdir(root)):
        match = re.fullmatch(r"step_(\d+)", entry)
        if match:
            steps.setdefault(int(match.group(1)), os.path.join(root, entry))
checked = [t for t in sorted(steps) if t >= 1 and (t == 1 or t - 1 in steps)]
if not checked:
    raise SystemExit(f"no step t with step t-1 in {' '.join(args.checkpoints)} "
                     "(save every step: dsc-run --save-interval 1)")

history = golden.GradHistory()
trainer = golden.Trainer(train_args, history)
initial = {n: t.detach().cpu().numpy().copy() for n, t in trainer.fp32.items()}
b1, b2 = trainer.opt.defaults["betas"]
eps = trainer.opt.defaults["eps"]
failed, worst = False, 0.0


def check(name, got, want, rtol, term):
    """Prints and returns (ok, largest error / bound) of one tensor."""
    if got is None or got.size != want.size:
        print(f"  {name}: MISSING or misshapen")
        return False, float("inf")
    got = got.reshape(want.shape).astype(np.float64)
    err = np.abs(got - want)
    bound = args.atol + rtol * np.abs(want) + term
    ratio = np.where(np.isnan(err), np.inf, err / bound)
    largest = float(ratio.max()) if ratio.size else 0.0
    if np.all(err <= bound):
        return True, largest
    i = np.unravel_index(np.argmax(ratio), want.shape)
    print(f"  {name}: MISMATCH at {tuple(int(x) for x in i)}: got {got[i]:.9g}, "
          f"want {want[i]:.9g}, bound {bound[i]:.3g}")
    return False, largest


# How far dsc's gradient may be from PyTorch's: fp32 parity (rtol), or two
# units in the last place of the 16-bit format the gradient is computed in.
GRAD_RTOL = {"fp32": args.rtol, "bf16": 2 * 2.0 ** -7, "fp16": 2 * 2.0 ** -10}
grad_rtol = GRAD_RTOL[train_args.precision]
decay = trainer.opt.defaults["weight_decay"]
coupled_decay = train_args.optim == "adam"  # Adam adds wd * w to the gradient


def array(t):
    return t.detach().cpu().numpy().astype(np.float64)


def prior(tensors, name, shape):
    """The moment `name` dsc saved before the step, in float64 (0 before
    the first step)."""
    saved = tensors.get(name)
    return 0.0 if saved is None else saved.astype(np.float64).reshape(shape)


for t in checked:
    before = initial if t == 1 else load_step(steps[t - 1])
    after = load_step(steps[t])
    # PyTorch's gradient at dsc's weights of step t-1.
    trainer.resume(before, t - 1)
    _, lr, _ = trainer.step(t - 1)
    nu = history.nu[-1]
    # dsc's own gradient, recovered from its first moment: m = b1 m0 +
    # (1-b1) g, so g = (m - b1 m0) / (1-b1), within r: four fp32 roundings of
    # the terms (dsc's products and sum, its fp32 betas, this division).
    # PyTorch's optimizer step from dsc's state with dsc's gradient (Adam's
    # coupled weight decay taken back out: the optimizer adds it).
    trainer.resume(before, t - 1)
    ours, slack, bounds = {}, {}, {}
    for n in trainer.names:
        m = after.get(n + ".exp_avg")
        if m is None:
            raise SystemExit(f"{steps[t]}: no {n}.exp_avg (an Adam checkpoint holds it)")
        param = trainer.fp32[n]
        m = m.astype(np.float64).reshape(param.shape)
        m0 = prior(before, n + ".exp_avg", param.shape)
        g = (m - b1 * m0) / (1 - b1)
        slack[n] = 2.0 ** -22 * (b1 * np.abs(m0) + np.abs(m)) / (1 - b1)
        bounds[n] = StepBound(g, slack[n], m0, prior(before, n + ".exp_avg_sq", param.shape),
                              t, b1, b2, eps)
        ours[n] = g - (decay * array(param) if coupled_decay else 0.0)
        param.grad = torch.from_numpy(ours[n].astype(np.float32)).to(param.device)
    trainer.opt.step()
    kinds, bad = {"gradients": 0.0, "values": 0.0, "moments": 0.0}, 0
    for n in trainer.names:
        state = trainer.opt.state[trainer.fp32[n]]
        bound = bounds[n]
        dm, dv = bound.state_terms()
        g_ref = history.grads.get(f"step{t}/{n}")
        g_ref = (np.zeros(trainer.fp32[n].shape) if g_ref is None
                 else g_ref.numpy().astype(np.float64))
        g_ours = ours[n]
        for kind, name, got, ref, rtol, extra in (
                ("gradients", n + " (gradient)", g_ours, g_ref, grad_rtol,
                 2.0 * nu.get(n, 0.0) + slack[n]),
                ("values", n, after.get(n + ".master", after.get(n)), array(trainer.fp32[n]),
                 args.rtol, bound.weight_term(lr)),
                ("moments", n + ".exp_avg", after.get(n + ".exp_avg"), array(state["exp_avg"]),
                 args.rtol, dm),
                ("moments", n + ".exp_avg_sq", after.get(n + ".exp_avg_sq"),
                 array(state["exp_avg_sq"]), args.rtol, dv)):
            ok, ratio = check(name, got, ref, rtol, extra)
            bad += not ok
            kinds[kind] = max(kinds[kind], ratio)
    worst = max([worst] + list(kinds.values()))
    failed |= bad > 0
    print(f"step {t}: {f'MISMATCH in {bad} tensors' if bad else 'ok'}, "
          f"{len(trainer.names)} parameters; largest error / tolerance: "
          + ", ".join(f"{k} {v:.3f}" for k, v in kinds.items()))
print(f"steps compared: {len(checked)}; largest error / tolerance: {worst:.3f}")
sys.exit(1 if failed else 0)
