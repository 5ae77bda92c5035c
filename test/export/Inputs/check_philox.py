"""Checks dsc.philox: Philox4x32-10's published known answers (Random123's
kat_vectors), the masks of parts of a batch against the whole batch's, the
share of elements dropped, and DscDropout's numbering of F.dropout sites."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from dsc.philox import DscDropout, apply_dropout, dropout_mask, philox4x32, random_uniform

KNOWN = [((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
         ((0xffffffff,) * 4, (0xffffffff,) * 2,
          (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
         ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
          (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]
for counter, key, want in KNOWN:
    got = tuple(int(w) for w in philox4x32(counter, key))
    assert got == want, (counter, key, [hex(w) for w in got])
print("known answers: ok")

# 6 samples of 7 elements: parts of 1, 2 and 3 samples are not aligned to
# Philox's blocks of four, and must still draw the whole batch's masks.
whole = dropout_mask((6, 7), 0.3, 2, 42, 3, 0, 6)
for each in (1, 2, 3):
    parts = [dropout_mask((each, 7), 0.3, 2, 42, 3, first, each)
             for first in range(0, 6, each)]
    assert torch.equal(torch.cat(parts), whole), each
print("parts of a batch: ok")

# |dropped - n q| <= 6 sqrt(n q (1 - q)), q = p rounded up to 24 bits.
n, p = 1 << 18, 0.1
mask = dropout_mask((n,), p, 0, 1234, 1, 0, 1)
q = math.ceil(p * 2 ** 24) / 2 ** 24
dropped = int((mask == 0).sum())
assert abs(dropped - n * q) <= 6 * math.sqrt(n * q * (1 - q)), dropped
assert set(np.unique(mask.numpy()).tolist()) == {0.0, float(np.float32(1 / (1 - p)))}
print("share dropped: ok")

# Uniform draws: parts of a batch are the whole batch's; values strictly
# inside (0, 1) on the 2^23-point grid; another stream than dropout's.
whole = random_uniform((6, 7), 0.0, 1.0, 2, 42, 3, 0, 6)
for each in (1, 2, 3):
    parts = [random_uniform((each, 7), 0.0, 1.0, 2, 42, 3, first, each)
             for first in range(0, 6, each)]
    assert torch.equal(torch.cat(parts), whole), each
u = random_uniform((1 << 16,), 0.0, 1.0, 0, 1234, 1, 0, 1).double()
assert 0 < u.min() and u.max() < 1 and torch.equal(u * 2 ** 24 % 2, torch.ones_like(u))
assert abs(u.mean().item() - 0.5) < 6 * (1 / (12 * u.numel())) ** 0.5
jitter = random_uniform((1 << 12,), 0.99, 1.01, 0, 1234, 1, 0, 1)
assert 0.99 <= jitter.min() and jitter.max() <= 1.01
kept = dropout_mask((1 << 12,), 0.5, 0, 1234, 1, 0, 1) != 0
high = random_uniform((1 << 12,), 0.0, 1.0, 0, 1234, 1, 0, 1) >= 0.5
assert 0.4 < (kept == high).double().mean() < 0.6
print("uniform draws: ok")


class Two(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Dropout(0.5), nn.Dropout(0.2)

    def forward(self, x):
        return self.b(self.a(x) + 1)


x = torch.randn(4, 5)
with DscDropout(step=2, first_sample=4, samples=4, seed=9):
    y = Two().train()(x)
m0 = dropout_mask((4, 5), 0.5, 0, 9, 2, 4, 4)
m1 = dropout_mask((4, 5), 0.2, 1, 9, 2, 4, 4)
assert torch.equal(y, apply_dropout(apply_dropout(x, m0) + 1, m1))
with DscDropout(step=2, first_sample=4, samples=4, seed=9):
    assert torch.equal(Two().eval()(x), x + 1)
print("F.dropout sites: ok")
