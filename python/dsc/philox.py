"""dsc's random numbers in Python: Philox4x32-10 and dsc.dropout's masks,
the same numbers as the runtime's kernels (runtime/include/dsc/kernels/
Philox.h and Random.h), so that PyTorch runs (dsc.golden) can drop exactly
the elements a dsc run drops.

A dropout's draw for element g of the optimizer step's global batch (the
samples of every rank and micro-batch of the step in order, each sample's
elements in order) is word g % 4 of

    philox4x32(counter=(g // 4 mod 2^32, g // 2^34, site mod 2^32, step mod 2^32),
               key=(seed mod 2^32, seed // 2^32))

where `site` numbers the model's dropouts in the order its forward calls
them, `step` is the optimizer step counted from 1 and `seed` the run's seed
(`dsc-run --seed`, default 1234). The element is dropped when
(word >> 8) < ceil(p * 2^24), i.e. when the word's top 24 bits as a number
in [0, 1) are below p; a kept element is multiplied by float32(1 / (1 - p)).
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

DEFAULT_SEED = 1234

_MASK32 = np.uint64(0xFFFFFFFF)


def philox4x32(counter, key):
    """Philox4x32-10: counter, a tuple of four uint32 arrays (or ints); key,
    two. Returns four uint32 arrays."""
    c = [np.asarray(x, dtype=np.uint64) & _MASK32 for x in counter]
    k0, k1 = (np.uint64(int(x) & 0xFFFFFFFF) for x in key)
    m0, m1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    for r in range(10):
        if r:
            k0 = (k0 + np.uint64(0x9E3779B9)) & _MASK32
            k1 = (k1 + np.uint64(0xBB67AE85)) & _MASK32
        p0, p1 = m0 * c[0], m1 * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & _MASK32,
             (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & _MASK32]
    return [x.astype(np.uint32) for x in c]


def _batch_words(numel, site, key, step, first_sample, samples):
    """Word g % 4 of philox4x32(counter=(g // 4 mod 2^32, g // 2^34, site,
    step), key) for every element of a tensor of `numel` elements holding
    `samples` samples, g its index in the global batch (the first sample
    being sample `first_sample`)."""
    if samples < 1 or numel % samples:
        raise ValueError(f"{samples} samples do not divide a tensor of {numel} elements")
    g = np.uint64(first_sample * (numel // samples)) + np.arange(numel, dtype=np.uint64)
    block = g >> np.uint64(2)
    words = philox4x32((block & _MASK32, block >> np.uint64(32),
                        np.full_like(block, site & 0xFFFFFFFF),
                        np.full_like(block, step & 0xFFFFFFFF)), key)
    return np.choose((g & np.uint64(3)).astype(np.int64), words)


def dropout_mask(shape, p, site, seed, step, first_sample, samples):
    """The float32 multiplier (0 or 1/(1-p)) of every element of a dropout
    input of `shape` holding `samples` samples, the first of which is
    sample `first_sample` of the step's global batch."""
    word = _batch_words(math.prod(shape), site,
                        (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF),
                        step, first_sample, samples)
    threshold = math.ceil(p * 16777216.0)
    scale = np.float32(1.0 / (1.0 - p))
    keep = (word >> np.uint32(8)) >= threshold
    return torch.from_numpy(np.where(keep, scale, np.float32(0)).astype(np.float32)
                            .reshape(shape))


UNIFORM_KEY_TAG = 0x554E4900


def random_uniform(shape, low, high, site, seed, step, first_sample, samples):
    """dsc.random_uniform: float32 values of `shape` in [low, high]. Element
    g of the global batch (as for dropout_mask) is low + (high - low) * u in
    double, rounded once to float32, with u = (2 * (w >> 9) + 1) / 2^24 in
    (0, 1) and w word g % 4 of

        philox4x32(counter=(g // 4 mod 2^32, g // 2^34, site mod 2^32,
                            step mod 2^32),
                   key=(seed mod 2^32, (seed // 2^32) ^ 0x554E4900))

    (runtime/include/dsc/kernels/Random.h computes the same)."""
    word = _batch_words(math.prod(shape), site,
                        (seed & 0xFFFFFFFF,
                         ((seed >> 32) ^ UNIFORM_KEY_TAG) & 0xFFFFFFFF),
                        step, first_sample, samples)
    u = (np.uint64(2) * (word.astype(np.uint64) >> np.uint64(9)) +
         np.uint64(1)).astype(np.float64) * 2.0 ** -24
    value = np.float64(low) + (np.float64(high) - np.float64(low)) * u
    return torch.from_numpy(value.astype(np.float32).reshape(shape))


def apply_dropout(x, mask):
    """x * mask as dsc computes it: in float32 for 16-bit x, rounded once."""
    if x.dtype in (torch.bfloat16, torch.float16):
        return (x.float() * mask.to(x.device)).to(x.dtype)
    return x * mask.to(device=x.device, dtype=x.dtype)


def dropout_arguments(args, kwargs):
    """(input, p, training) of a call of F.dropout, with its defaults."""
    bound = dict(zip(("input", "p", "training", "inplace"), args), **kwargs)
    return bound["input"], bound.get("p", 0.5), bound.get("training", True)


_active = []  # the DscDropout and Exporting contexts entered, innermost last


def active():
    """The innermost DscDropout or Exporting context entered, or None."""
    return _active[-1] if _active else None


class _CountsMoeLayers:
    """dsc.nn.MoE layers number themselves in the order a forward calls
    them: the n-th draws at the sites of --dsc-moe's replaced block n."""

    moe_layer = 0

    def next_moe_layer(self):
        """The index of the MoE layer that asks, in the forward's order."""
        self.moe_layer += 1
        return self.moe_layer - 1


class Exporting(_CountsMoeLayers):
    """Entered by the exporter while it traces a model's forward: dsc.nn.MoE
    layers record their gating noise as dsc.moe_ops' random_uniform_like
    and when_training nodes."""

    def __enter__(self):
        _active.append(self)
        return self

    def __exit__(self, *exc):
        _active.remove(self)


class DscDropout(_CountsMoeLayers, torch.overrides.TorchFunctionMode):
    """Within it, F.dropout (nn.Dropout) draws dsc's masks: the n-th call is
    site n, for a forward of `samples` samples (the inputs' leading
    dimension), the first of which is sample `first_sample` of optimizer step
    `step` (1-based). dsc.nn.MoE layers draw their gating noise from it too
    (`uniform`): the n-th MoE layer the forward calls is replaced block n of
    --dsc-moe."""

    def __init__(self, step, first_sample, samples, seed=DEFAULT_SEED):
        super().__init__()
        self.step, self.first_sample, self.samples = step, first_sample, samples
        self.seed = seed
        self.site = 0

    def __enter__(self):
        _active.append(self)
        return super().__enter__()

    def __exit__(self, *exc):
        _active.remove(self)
        return super().__exit__(*exc)

    def uniform(self, shape, low, high, site):
        """dsc.random_uniform of `shape` (this forward's samples outermost)."""
        return random_uniform(shape, low, high, site, self.seed, self.step,
                              self.first_sample, self.samples)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.dropout:
            x, p, training = dropout_arguments(args, kwargs)
            site = self.site
            self.site += 1
            if not training or p == 0:
                return x
            mask = dropout_mask(tuple(x.shape), p, site, self.seed, self.step,
                                self.first_sample, self.samples)
            return apply_dropout(x, mask)
        return func(*args, **kwargs)


def random_ltd_indices(samples, length, kept, seed, step, first_sample, site=0):
    """dsc.random_ltd_indices: int64 [samples, kept], for each sample the
    `kept` positions of least (priority, position) in increasing order, the
    priority of position t of sample g (first_sample + j in the optimizer
    step's global batch) being word t % 4 of

        philox4x32(counter=(t // 4, g mod 2^32, g // 2^32, step mod 2^32),
                   key=(seed mod 2^32, (seed // 2^32) ^ 0x4C544400 ^ site))

    (runtime/include/dsc/kernels/Random.h computes the same)."""
    t = np.arange(length, dtype=np.uint64)
    key = (seed & 0xFFFFFFFF, ((seed >> 32) ^ 0x4C544400 ^ site) & 0xFFFFFFFF)
    rows = []
    for j in range(samples):
        g = first_sample + j
        words = philox4x32((t >> np.uint64(2), np.full_like(t, g & 0xFFFFFFFF),
                            np.full_like(t, (g >> 32) & 0xFFFFFFFF),
                            np.full_like(t, step & 0xFFFFFFFF)), key)
        priority = np.choose((t & np.uint64(3)).astype(np.int64), words).astype(np.uint64)
        order = np.argsort((priority << np.uint64(32)) | t, kind="stable")
        rows.append(np.sort(order[:kept]))
    return torch.from_numpy(np.stack(rows).astype(np.int64))
