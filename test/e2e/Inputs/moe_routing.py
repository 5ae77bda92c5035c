"""The model of Inputs/moe_routing.mlir in PyTorch, with dsc's four routing
ops (dsc.moe_slots, moe_dispatch, moe_combine, moe_route_dot, the last
as autograd's gradient of the routing weights) written out as loops over
tokens and choices from their definitions, so that dsc.golden's gradients
and training steps are an independent reference for moe-routing-ops.test.

    python3 moe_routing.py DIR   # DIR/model.safetensors (by dsc.state name),
                                 # DIR/data.bin (random tokens: text starts
                                 # with runs of spaces, which route alike)

build() takes batch and seq like the zoo's models; the .mlir is for
batch 4, seq 8 (32 tokens).
"""

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, D, E = 256, 8, 4


def moe_slots(experts, capacity, priority=None):
    """Slots of the routes [S, k]: without priority, each expert numbers its
    routes choice by choice, token by token; with priority, it keeps the
    `capacity` routes of highest priority (ties to the earlier route) and
    numbers them in route order. -1 where dropped."""
    S, k = experts.shape
    ex = experts.tolist()
    slots = [[-1] * k for _ in range(S)]
    if priority is None:
        order = [(s, j) for j in range(k) for s in range(S)]
        taken = [0] * E
        for s, j in order:
            e = ex[s][j]
            if taken[e] < capacity:
                slots[s][j] = e * capacity + taken[e]
            taken[e] += 1
    else:
        pr = priority.tolist()
        for e in range(E):
            routes = [(s, j) for s in range(S) for j in range(k) if ex[s][j] == e]
            best = sorted(routes, key=lambda r: (-pr[r[0]][r[1]], r))[:capacity]
            for n, (s, j) in enumerate(sorted(best)):
                slots[s][j] = e * capacity + n
    return slots


def moe_dispatch(x, slots, capacity, weights=None):
    rows = [torch.zeros(x.shape[1])] * (E * capacity)
    for s, row in enumerate(slots):
        for j, slot in enumerate(row):
            if slot >= 0:
                rows[slot] = x[s] * weights[s, j] if weights is not None else x[s]
    return torch.stack(rows).reshape(E, capacity, x.shape[1])


def moe_combine(y, slots, weights=None):
    flat = y.reshape(-1, y.shape[2])
    out = []
    for s, row in enumerate(slots):
        acc = torch.zeros(y.shape[2])
        for j, slot in enumerate(row):
            if slot >= 0:
                acc = acc + (flat[slot] * weights[s, j] if weights is not None else flat[slot])
        out.append(acc)
    return torch.stack(out)


class Routed(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.gate = nn.Linear(D, E, bias=False)
        self.w1 = nn.Parameter(torch.randn(E, D, D) * 0.5)
        self.gate2 = nn.Linear(D, E, bias=False)
        self.w2 = nn.Parameter(torch.randn(E, D, D) * 0.5)
        self.head = nn.Linear(D, VOCAB)

    def forward(self, tokens, targets):
        x = self.emb(tokens).reshape(-1, D)
        top, experts = torch.topk(F.softmax(self.gate(x), dim=1), 2, dim=1)
        slots = moe_slots(experts, 10)
        h = torch.tanh(torch.bmm(moe_dispatch(x, slots, 10), self.w1))
        y = x + moe_combine(h, slots, top)
        top2, experts2 = torch.topk(F.softmax(self.gate2(y), dim=1), 3, dim=1)
        slots2 = moe_slots(experts2, 16, priority=top2.detach())
        h2 = torch.bmm(moe_dispatch(y, slots2, 16, top2), self.w2)
        z = y + moe_combine(h2, slots2)
        return F.cross_entropy(self.head(z), targets.reshape(-1))


def build(batch=4, seq=8):
    torch.manual_seed(11)
    model = Routed()
    g = torch.Generator().manual_seed(1234)
    tokens = torch.randint(0, VOCAB, (batch, seq), generator=g)
    targets = torch.randint(0, VOCAB, (batch, seq), generator=g)
    return model, (tokens, targets)


if __name__ == "__main__":
    import os

    import numpy as np

    from dsc import safetensors

    model, _ = build()
    os.makedirs(sys.argv[1], exist_ok=True)
    safetensors.save({n: t.detach().numpy() for n, t in model.state_dict().items()},
                     os.path.join(sys.argv[1], "model.safetensors"))
    tokens = np.random.default_rng(5).integers(0, VOCAB, 4096).astype("<u2")
    tokens.tofile(os.path.join(sys.argv[1], "data.bin"))
