#!/usr/bin/env python3
"""Checks an Adam or SGD-with-momentum training run of dsc-run one step at a time against
PyTorch (dsc.golden's trainer), from dsc's own state: for every saved step
t, with dsc's checkpoint t-1 (the initial weights for t = 1) as the state
before it and its checkpoint t as the state after:

1. the gradient. dsc's gradient g is recovered from its first moment
   (m_t = b1 m_{t-1} + (1-b1) g, within r, four fp32 roundings of the
   terms; SGD's momentum buffer b_t = mu b_{t-1} + g likewise) and must be PyTorch's gradient at the same weights and batch
   within atol + rtol |g_pt| + 2 nu + r: rtol is fp32's 1e-5, or two units
   in the last place of the 16-bit format a mixed-precision module
   computes in; nu is the rounding noise dsc.golden measures (the largest
   distance of PyTorch's gradient to a float64 one, per tensor), which
   both sides' gradients carry;
2. the optimizer. PyTorch's optimizer takes the step from dsc's state
   (parameters or fp32 masters, moments, step count) with dsc's gradient;
   dsc's parameters and moments after the step must equal its result
   within fp32 rtol/atol plus what r can move one Adam step
   (adam_bound.StepBound with dg = r: next to nothing), or one SGD step
   (lr r, and r for the buffer).

Comparing whole runs instead would not be rigorous: Adam turns gradient
rounding noise into moves of lr, which change every later step whoever
computes it (adam_bound.py says by how much). SGD does not amplify it, but
a 16-bit module's gradient carries rounding noise of several units in the
last place (nu: measured for PyTorch's bf16 GPT-2 tiny at 3% of the
largest gradient, dsc's a tenth of that, both against float64), which
momentum carries into every later step; from dsc's own state each step's
noise is bounded by nu instead.

Usage: compare_steps.py [--rtol R] [--atol A] CHECKPOINT [CHECKPOINT ...]
                        (--gold INPUTS/gold/NAME | -- GOLDEN_ARGS)

What PyTorch trains: --gold names one of the suite's shared references
(make_inputs.py's GOLDEN table, with the inputs beside it), or GOLDEN_ARGS
are dsc.golden's arguments (model, --weights, --data, --batch, --seq,
--optim adam|adamw|sgd (with --momentum), --lr, schedule, precision, ...) without -o. Each
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
sgd = train_args.optim == "sgd"
if sgd and not train_args.momentum:
    # Without a buffer the gradient is only in the weights' difference,
    # which lr scales down into fp32 rounding.
    raise SystemExit("--optim sgd without --momentum: compare_steps.py recovers "
                     "SGD's gradient from its momentum buffer")

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
if sgd:
    b1 = trainer.opt.defaults["momentum"]
else:
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
# Adam and SGD add wd * w to the gradient; AdamW decays the weights.
coupled_decay = train_args.optim in ("adam", "sgd")


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
    # the terms (dsc's products and sum, its fp32 betas, this division); with
    # SGD from its buffer, b = mu b0 + g, g = b - mu b0 (b1 is mu).
    # PyTorch's optimizer step from dsc's state with dsc's gradient (Adam's
    # coupled weight decay taken back out: the optimizer adds it).
    trainer.resume(before, t - 1)
    ours, slack, bounds = {}, {}, {}
    for n in trainer.names:
        param = trainer.fp32[n]
        if sgd:
            # PyTorch's buffer: b = mu b0 + g (b = g at the first step).
            buf = after.get(n + ".momentum_buffer")
            if buf is None:
                raise SystemExit(f"{steps[t]}: no {n}.momentum_buffer (an SGD "
                                 "checkpoint with momentum holds it)")
            buf = buf.astype(np.float64).reshape(param.shape)
            buf0 = prior(before, n + ".momentum_buffer", param.shape)
            g = buf - b1 * buf0
            slack[n] = 2.0 ** -22 * (b1 * np.abs(buf0) + np.abs(buf))
        else:
            m = after.get(n + ".exp_avg")
            if m is None:
                raise SystemExit(f"{steps[t]}: no {n}.exp_avg (an Adam checkpoint holds it)")
            m = m.astype(np.float64).reshape(param.shape)
            m0 = prior(before, n + ".exp_avg", param.shape)
            g = (m - b1 * m0) / (1 - b1)
            slack[n] = 2.0 ** -22 * (b1 * np.abs(m0) + np.abs(m)) / (1 - b1)
            bounds[n] = StepBound(g, slack[n], m0,
                                  prior(before, n + ".exp_avg_sq", param.shape),
                                  t, b1, b2, eps)
        ours[n] = g - (decay * array(param) if coupled_decay else 0.0)
        param.grad = torch.from_numpy(ours[n].astype(np.float32)).to(param.device)
    trainer.opt.step()
    kinds, bad = {"gradients": 0.0, "values": 0.0, "moments": 0.0}, 0
    for n in trainer.names:
        state = trainer.opt.state[trainer.fp32[n]]
        g_ref = history.grads.get(f"step{t}/{n}")
        g_ref = (np.zeros(trainer.fp32[n].shape) if g_ref is None
                 else g_ref.numpy().astype(np.float64))
        g_ours = ours[n]
        if sgd:
            value_term = lr * slack[n]
            moments = (("moments", n + ".momentum_buffer", after.get(n + ".momentum_buffer"),
                        array(state["momentum_buffer"]), args.rtol, slack[n]),)
        else:
            bound = bounds[n]
            dm, dv = bound.state_terms()
            value_term = bound.weight_term(lr)
            moments = (("moments", n + ".exp_avg", after.get(n + ".exp_avg"),
                        array(state["exp_avg"]), args.rtol, dm),
                       ("moments", n + ".exp_avg_sq", after.get(n + ".exp_avg_sq"),
                        array(state["exp_avg_sq"]), args.rtol, dv))
        for kind, name, got, ref, rtol, extra in (
                ("gradients", n + " (gradient)", g_ours, g_ref, grad_rtol,
                 2.0 * nu.get(n, 0.0) + slack[n]),
                ("values", n, after.get(n + ".master", after.get(n)), array(trainer.fp32[n]),
                 args.rtol, value_term)) + moments:
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
