"""How far a gradient's uncertainty can move one Adam step: the
per-element bound that compare_steps.py and compare_weights.py --adam add
to the fp32 tolerance.

Why a bound and not a tolerance. Adam divides each first moment by the root
of its second: an element whose true gradient is zero (the attention key
bias: softmax ignores a constant shift) has a gradient of pure rounding
noise, and Adam turns noise of 1e-9 into a move of lr. Two correct
implementations (PyTorch and dsc, or either with OpenBLAS's Haswell and its
Prescott kernels) round differently, so there their weights differ by up to
lr per step, whatever fp32 tolerance one picks. Elsewhere the update is
determined by the gradient and the fp32 tolerance holds.

Why one step. The bound holds for one step taken from the same weights and
the same moments. Over several steps it does not: an element that noise
moved by lr at step t changes the gradients of step t+1 everywhere, by more
than their rounding (measured on GPT-2 tiny, 2 ranks: the largest error
over this bound was 0.07 of it after one step, 0.35 after two, 1.07 after
five; PyTorch against itself with two OpenBLAS kernel sets, 0.4-0.6 after
five). So a run of T steps is checked one step at a time
(compare_steps.py): PyTorch takes step t from dsc's own checkpoint t-1 with
dsc's own gradient (recovered from its first moment within a few fp32
roundings r), and the bound with dg = r covers that recovery; dsc's
gradient is compared with PyTorch's separately.

The noise (for a one-step run compared as a whole, AdamBound). dsc.golden's
GradHistory records the gradient g the reference optimizer used and nu,
per tensor, the largest |g - g64| where g64 is the float64 gradient of the
same weights and batch. Each of two implementations computes a gradient
within about nu of the exact one (nu is measured for the reference; the
other one's rounding is assumed to be of the same size), so their
gradients differ by at most dg = 2 nu.

AdamW's step t (PyTorch's, which dsc implements) from moments m0, v0 (zero
before the first step), with bc1 = 1 - b1^t, bc2 = 1 - b2^t:

    m = b1 m0 + (1-b1) g,   v = b2 v0 + (1-b2) g^2
    u = (m/bc1) / (sqrt(v/bc2) + eps)
    w_t = w_{t-1} (1 - lr wd) - lr u

From the same w_{t-1}, m0 and v0, two implementations' weights differ by
lr |du|. With g moved by delta, |delta| <= dg (the gradient's uncertainty): m/bc1 lies in [mh - M,
mh + M] with mh = m/bc1, M = (1-b1) dg / bc1; v/bc2 lies in [Vlo, Vhi]
with Vlo = (b2 v0 + (1-b2) max(|g| - dg, 0)^2) / bc2 and Vhi = (b2 v0 +
(1-b2) (|g| + dg)^2) / bc2. u grows with m and its magnitude falls with v,
so over that box u is largest at (mh + M, Vlo) (or Vhi when mh + M < 0) and
smallest at (mh - M, Vhi) (or Vlo when mh - M < 0): an interval [u_lo,
u_hi] that holds every implementation's u. It is exact, not a
linearisation; it is tiny where |g| >> dg and unbounded where g is noise.
Independently of the gradients, Cauchy-Schwarz on m = sum_k a_k g_k (a_k =
(1-b1) b1^(t-k), b_k = (1-b2) b2^(t-k), over the whole history that made
m0 and v0) gives |u| <= B_t = sqrt(bc2) / bc1 * sqrt(sum_k a_k^2 / b_k)
(B_1 = 1 with PyTorch's betas): no step moves an element by more than
lr B_t. Per element:

    against the reference:  E = min(max(u_hi - u, u - u_lo), |u| + B_t)
    bound = atol + rtol |w_ref| + lr E

An element is "noise-limited" when the cap (B) is the smaller term. The
moments after the step are bounded the same way: exp_avg within
(1-b1) dg of the reference's, exp_avg_sq within [v_lo, v_hi] (bc2 = 1).

What the bound does not cover, and the fp32 rtol/atol must: the
optimizer's own arithmetic rounds, which is of the fp32 tolerance's size.
An element held to the derived term only differs by more when an
implementation's gradient is wrong by more than its rounding.
"""
import json
import math
import os

import numpy as np

from dsc import safetensors


def cap(t, b1, b2):
    """B_t: the largest |m_hat| / (sqrt(v_hat) + eps) Adam's step t can
    take, whatever the gradients."""
    k = np.arange(1, t + 1)
    a = (1 - b1) * b1 ** (t - k)
    b = (1 - b2) * b2 ** (t - k)
    return math.sqrt(1 - b2 ** t) / (1 - b1 ** t) * math.sqrt(np.sum(a * a / b))


class StepBound:
    """One Adam step t (1-based) from moments m0, v0 with gradient g (the
    reference's) and gradient distance dg, all float64 arrays."""

    def __init__(self, g, dg, m0, v0, t, b1, b2, eps):
        self.m = b1 * m0 + (1 - b1) * g
        self.v = b2 * v0 + (1 - b2) * g * g
        self.dm = (1 - b1) * dg
        self.v_lo = b2 * v0 + (1 - b2) * np.maximum(np.abs(g) - dg, 0.0) ** 2
        self.v_hi = b2 * v0 + (1 - b2) * (np.abs(g) + dg) ** 2
        bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
        mh, M = self.m / bc1, self.dm / bc1
        s_lo, s_hi = np.sqrt(self.v_lo / bc2), np.sqrt(self.v_hi / bc2)
        u = mh / (np.sqrt(self.v / bc2) + eps)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            hi = (mh + M) / (np.where(mh + M >= 0, s_lo, s_hi) + eps)
            lo = (mh - M) / (np.where(mh - M >= 0, s_hi, s_lo) + eps)
        derived, capped = np.maximum(hi - u, u - lo), np.abs(u) + cap(t, b1, b2)
        self.limited = ~(derived <= capped)  # NaN/inf too
        self.update = np.where(self.limited, capped, derived)

    def weight_term(self, lr):
        """How far the weights can move apart: lr E per element."""
        return lr * self.update

    def state_terms(self):
        """How far exp_avg and exp_avg_sq can move from the reference's."""
        return self.dm, np.maximum(self.v_hi - self.v, self.v - self.v_lo)


class AdamBound:
    """The bound of a one-step dsc.golden Adam run (--steps 1), from its
    recorded gradient and noise (zero moments before the step). A longer
    run is refused: check it step by step with compare_steps.py."""

    def __init__(self, gold_dir):
        path = os.path.join(gold_dir, "grad_history.json")
        if not os.path.exists(path):
            raise SystemExit(f"{path}: no such file (dsc.golden writes it for "
                             "--optim adam and adamw)")
        self.doc = json.load(open(path))
        if self.doc["steps"] != 1:
            raise SystemExit(f"{path}: {self.doc['steps']} steps; the Adam bound holds "
                             "for one step from the same state: compare a longer run "
                             "step by step (compare_steps.py)")
        self.grads, _ = safetensors.load_numpy(os.path.join(gold_dir,
                                                            "grad_history.safetensors"))
        self.b1, self.b2 = self.doc["betas"]

    def has(self, name):
        return f"step1/{name}" in self.grads

    def weight_term(self, name):
        """(lr E per element, mask of noise-limited elements)."""
        g = self.grads[f"step1/{name}"].astype(np.float64)
        zero = np.zeros_like(g)
        bound = StepBound(g, 2.0 * self.doc["nu"][0][name], zero, zero, 1,
                          self.b1, self.b2, self.doc["eps"])
        return bound.weight_term(self.doc["lrs"][0]), bound.limited
