"""How far rounding alone can move Adam's weights apart: the per-element
bound that compare_weights.py --adam and compare_checkpoints.py --adam add
to the fp32 tolerance.

Why a bound and not a tolerance. Adam divides each first moment by the root
of its second: an element whose true gradient is zero (the attention key
bias: softmax ignores a constant shift) has a gradient of pure rounding
noise, and Adam turns noise of 1e-9 into a move of lr. Two correct
implementations (PyTorch and dsc, or either with OpenBLAS's Haswell and its
Prescott kernels) round differently, so there their weights differ by up to
lr per step, whatever fp32 tolerance one picks. Elsewhere the update is
determined by the gradient and the fp32 tolerance holds.

What dsc.golden records (grad_history.*): per step t = 1..T, the gradient g_t
the reference optimizer used, and nu_t, per tensor, the largest |g_t - g64_t|
where g64_t is the float64 gradient of the same weights and batch. Each of
two implementations computes a gradient within about nu_t of the exact one
(nu is measured for the reference; the other one's rounding is assumed to be
of the same size), so their gradients differ by at most dg_t = 2 nu_t, and
either differs from the reference's g_t by at most dg_t.

AdamW's step t (PyTorch's, which dsc implements), with a_k = (1-b1) b1^(t-k),
b_k = (1-b2) b2^(t-k), bc1 = 1 - b1^t, bc2 = 1 - b2^t:

    m = sum_k a_k g_k,   v = sum_k b_k g_k^2            (k = 1..t)
    u_t = (m/bc1) / (sqrt(v/bc2) + eps)
    w_t = w_{t-1} (1 - lr_t wd) - lr_t u_t

The weight decay shrinks a difference of weights (1 - lr wd <= 1), so after
T steps two runs differ by at most sum_t lr_t |du_t|.

|du_t| for gradients moved by delta_k, |delta_k| <= dg_k. m/bc1 lies in
[mh - M, mh + M] with mh = m/bc1, M = sum_k a_k dg_k / bc1; v/bc2 lies in
[Vlo, Vhi] with Vlo = sum_k b_k max(|g_k| - dg_k, 0)^2 / bc2 and
Vhi = sum_k b_k (|g_k| + dg_k)^2 / bc2. u grows with m and its magnitude
falls with v, so over that box u is largest at (mh + M, Vlo) (or Vhi when
mh + M < 0) and smallest at (mh - M, Vhi) (or Vlo when mh - M < 0): an
interval [u_lo, u_hi] that holds every implementation's u_t. It is exact,
not a linearisation; to first order in dg (s = sqrt(v/bc2)) its half-width is

    D = M / (s + eps) + |mh| * (sum_k b_k |g_k| dg_k / bc2) / (s (s + eps)^2)

(d sqrt(v) = dv / (2 s) and d(g^2) = 2 |g| dg, whose 2s cancel), which is
tiny where |g| >> dg and unbounded where g is noise. Independently of the
gradients, Cauchy-Schwarz on m = sum_k (a_k / sqrt(b_k)) (sqrt(b_k) g_k)
gives |u_t| <= B_t = sqrt(bc2) / bc1 * sqrt(sum_k a_k^2 / b_k) (B_1 = 1 with
PyTorch's betas): Adam moves no element by more than lr_t B_t per step, so
two runs differ by at most 2 lr_t B_t there. Per element:

    against the reference:  E_t = min(max(u_hi - u_t, u_t - u_lo), |u_t| + B_t)
    between two others:     E_t = min(u_hi - u_lo, 2 B_t)
    bound = atol + rtol |w_ref| + sum_t lr_t E_t

An element is "noise-limited" when the cap (B) is the smaller term at some
step. The optimizer's state is bounded the same way: the stored moments
differ by at most sum_k a_k 2 dg_k (exp_avg; linear in g, so exact) and
Vhi - Vlo with bc2 = 1 (exp_avg_sq).

What the bound does not cover, and the fp32 rtol/atol must: the gradients of
step t are computed at weights that already differ by the bound, and the
optimizer's own arithmetic rounds. Both are of the fp32 tolerance's size
for this suite's models, which is what the fp32 rtol 1e-5 / atol 1e-6 is
there for; an element held to the derived term only differs by more when
an implementation's gradient is wrong by more than its rounding.
"""
import json
import math
import os

import numpy as np

from dsc import safetensors


class AdamBound:
    """The recorded gradients and noise of a dsc.golden Adam run."""

    def __init__(self, gold_dir):
        path = os.path.join(gold_dir, "grad_history.json")
        if not os.path.exists(path):
            raise SystemExit(f"{path}: no such file (dsc.golden writes it for "
                             "--optim adam and adamw)")
        self.doc = json.load(open(path))
        self.grads, _ = safetensors.load_numpy(os.path.join(gold_dir,
                                                            "grad_history.safetensors"))
        self.b1, self.b2 = self.doc["betas"]
        self.eps = self.doc["eps"]
        self.lrs = self.doc["lrs"]
        self.steps = self.doc["steps"]

    def has(self, name):
        return f"step1/{name}" in self.grads

    def _history(self, name):
        g = np.stack([self.grads[f"step{t}/{name}"].astype(np.float64)
                      for t in range(1, self.steps + 1)])
        dg = np.array([2.0 * self.doc["nu"][t][name] for t in range(self.steps)])
        return g, dg.reshape((-1,) + (1,) * (g.ndim - 1))

    def _moments(self, g, dg, t):
        """After step t (1-based), bias uncorrected: m, v, and how far m and
        v can move (m +- dm, v in [v_lo, v_hi]) with each g_k moved by up
        to dg_k."""
        k = np.arange(1, t + 1).reshape((-1,) + (1,) * (g.ndim - 1))
        a = (1 - self.b1) * self.b1 ** (t - k)
        b = (1 - self.b2) * self.b2 ** (t - k)
        gk, dk = g[:t], dg[:t]
        m = np.sum(a * gk, axis=0)
        v = np.sum(b * gk * gk, axis=0)
        dm = np.sum(a * dk, axis=0)
        v_lo = np.sum(b * np.maximum(np.abs(gk) - dk, 0.0) ** 2, axis=0)
        v_hi = np.sum(b * (np.abs(gk) + dk) ** 2, axis=0)
        return m, v, dm, v_lo, v_hi

    def cap(self, t):
        """B_t: the largest |m_hat| / (sqrt(v_hat) + eps) at step t."""
        k = np.arange(1, t + 1)
        a = (1 - self.b1) * self.b1 ** (t - k)
        b = (1 - self.b2) * self.b2 ** (t - k)
        return math.sqrt(1 - self.b2 ** t) / (1 - self.b1 ** t) * math.sqrt(np.sum(a * a / b))

    def weight_term(self, name, pair):
        """(sum_t lr_t E_t per element, mask of noise-limited elements).
        pair: between two implementations, neither the reference."""
        g, dg = self._history(name)
        total = np.zeros(g.shape[1:])
        limited = np.zeros(g.shape[1:], dtype=bool)
        for t in range(1, self.steps + 1):
            m, v, dm, v_lo, v_hi = self._moments(g, dg, t)
            bc1, bc2 = 1 - self.b1 ** t, 1 - self.b2 ** t
            mh, M = m / bc1, dm / bc1
            s_lo, s_hi = np.sqrt(v_lo / bc2), np.sqrt(v_hi / bc2)
            u = mh / (np.sqrt(v / bc2) + self.eps)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                hi = (mh + M) / (np.where(mh + M >= 0, s_lo, s_hi) + self.eps)
                lo = (mh - M) / (np.where(mh - M >= 0, s_hi, s_lo) + self.eps)
            B = self.cap(t)
            if pair:
                derived, capped = hi - lo, np.full_like(u, 2 * B)
            else:
                derived, capped = np.maximum(hi - u, u - lo), np.abs(u) + B
            use_cap = ~(derived <= capped)  # NaN/inf too
            limited |= use_cap
            total += self.lrs[t - 1] * np.where(use_cap, capped, derived)
        return total, limited

    def state_terms(self, name):
        """Per element: how far two implementations' exp_avg and exp_avg_sq
        can differ after the last step."""
        g, dg = self._history(name)
        _, _, dm, v_lo, v_hi = self._moments(g, dg, self.steps)
        return 2 * dm, v_hi - v_lo
