"""dsc.nn.MoE and the dsc.moe_* operators against DeepSpeed's rules,
computed independently: plain-Python loops over tokens and experts written
from DeepSpeed's formulas (capacity, choices, drop order, renormalized
gates, aux loss, counts), a transcription of DeepSpeed's dense top-k gating,
and the einsum MoE the MoE GPT used before dsc.nn.MoE. Prints one line per
check; any failure raises.

fp32 comparisons use rtol 1e-5 / atol 1e-6: the two sides compute the same
sums in different orders (batched vs per-expert GEMMs, sums over choices
vs over experts), so they differ by float32 rounding only. Gradients are
compared in float64 (dsc.golden's float64 mode, which also runs the
gate's float32 requests in float64): the gate's gradient sums terms ~100x
larger than itself, which float32 rounding would blur beyond 1e-5, while
float64's eps (1e-16) amplified that much stays below rtol 1e-9.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import dsc.moe_ops  # noqa: F401
from dsc.golden import _Float32AsFloat64
from dsc.nn import MoE, StackedLinear, capacity
from dsc.philox import DscDropout, random_uniform

RTOL, ATOL = 1e-5, 1e-6
RTOL64, ATOL64 = 1e-9, 1e-12
EPS = torch.finfo(torch.float32).eps


def close(ours, theirs, what, rtol=RTOL, atol=ATOL):
    ours, theirs = torch.as_tensor(ours).double(), torch.as_tensor(theirs).double()
    if ours.shape != theirs.shape or not torch.allclose(ours, theirs, rtol=rtol, atol=atol):
        raise AssertionError(f"{what}: {ours.tolist()} != {theirs.tolist()}")


def expect_error(kind, text, fn):
    try:
        fn()
    except kind as e:
        if text not in str(e):
            raise AssertionError(f"expected '{text}' in: {e}")
        return
    raise AssertionError(f"expected {kind.__name__}: {text}")


# -- capacity ------------------------------------------------------------------

def deepspeed_capacity(tokens, experts, k, factor, min_capacity):
    """DeepSpeed's _capacity with the factor its gates pass, in its torch
    arithmetic: a Python float times a float32 tensor."""
    factor = factor * 2 if k == 2 else factor * k if k >= 3 else factor
    c = torch.ceil((tokens / experts) * torch.tensor(factor)).to(torch.int64)
    return max(int(c), min_capacity)


assert capacity(100, 4, 2, 1.1, 4) == 55
assert math.ceil(100 / 4 * (1.1 * 2)) == 56  # float64 would give 56
assert deepspeed_capacity(100, 4, 2, 1.1, 4) == 55
assert capacity(16, 4, 1, 1.0, 8) == 8 and capacity(16, 4, 1, 1.0, 4) == 4
n = 0
for tokens in list(range(1, 70)) + [100, 1000, 4096, 12345]:
    for experts in (1, 3, 4, 7, 16, 64):
        for factor in (0.5, 0.7, 1.0, 1.1, 1.2, 1.25, 1.3, 2.0):
            for k in (1, 2, 3, 4):
                for m in (0, 4):
                    assert capacity(tokens, experts, k, factor, m) == \
                        deepspeed_capacity(tokens, experts, k, factor, m), \
                        (tokens, experts, k, factor, m)
                    n += 1
print(f"capacity: {n} cases equal DeepSpeed's float32 formula")


# -- dsc.moe_slots -----------------------------------------------------------------

def naive_slots(experts, priority, E, C):
    experts = experts.tolist()
    S, k = len(experts), len(experts[0])
    slots = [[-1] * k for _ in range(S)]
    counts = [0] * E
    for row in experts:
        for e in row:
            counts[e] += 1
    if priority is None:
        queued = [0] * E
        for j in range(k):
            for s in range(S):
                e = experts[s][j]
                if queued[e] < C:
                    slots[s][j] = e * C + queued[e]
                queued[e] += 1
    else:
        priority = priority.tolist()
        for e in range(E):
            routes = [(s, j) for s in range(S) for j in range(k) if experts[s][j] == e]
            best = sorted(routes, key=lambda r: (-priority[r[0]][r[1]], r))[:C]
            for number, (s, j) in enumerate(sorted(best)):
                slots[s][j] = e * C + number
    return torch.tensor(slots), torch.tensor(counts)


# The example of the op's definition, worked by hand.
ex = torch.tensor([[0, 1], [0, 2], [1, 0], [0, 1], [0, 2]])
slots, counts = torch.ops.dsc.moe_slots(ex, None, 3, 2)
assert slots.tolist() == [[0, 3], [1, 4], [2, -1], [-1, -1], [-1, 5]], slots
assert counts.tolist() == [5, 3, 2]
pr = torch.tensor([[.1, .9], [.5, .2], [.3, .3], [.5, .4], [.7, .1]])
slots, _ = torch.ops.dsc.moe_slots(ex, pr, 3, 2)
# Expert 0: .7 (token 4), then the tie .5 goes to token 1, numbered in token order.
assert slots.tolist() == [[-1, 2], [0, 4], [-1, -1], [-1, 3], [1, 5]], slots

g = torch.Generator().manual_seed(0)
cases = 0
for trial in range(200):
    S = int(torch.randint(1, 40, (), generator=g))
    E = int(torch.randint(1, 9, (), generator=g))
    k = int(torch.randint(1, E + 1, (), generator=g))
    C = int(torch.randint(1, S + 2, (), generator=g))
    experts = torch.stack([torch.randperm(E, generator=g)[:k] for _ in range(S)])
    # Few distinct priorities: ties on purpose.
    priority = torch.randint(0, 4, (S, k), generator=g).float() / 4
    for p in (None, priority):
        ours = torch.ops.dsc.moe_slots(experts, p, E, C)
        theirs = naive_slots(experts, p, E, C)
        assert torch.equal(ours[0], theirs[0]) and torch.equal(ours[1], theirs[1]), \
            (experts, p, E, C, ours, theirs)
        cases += 1
print(f"moe_slots: {cases} random cases equal the loop, with and without priority")
expect_error(RuntimeError, "expert 3 is out of range [0, 3)",
             lambda: torch.ops.dsc.moe_slots(torch.tensor([[0], [3]]), None, 3, 2))


# -- dispatch, combine, route_dot ---------------------------------------------------

def naive_dispatch(x, slots, weights, E, C):
    out = torch.zeros(E * C, x.shape[1], dtype=x.dtype)
    for s in range(slots.shape[0]):
        for j in range(slots.shape[1]):
            if slots[s, j] >= 0:
                out[slots[s, j]] = x[s] * (1 if weights is None else weights[s, j])
    return out.reshape(E, C, -1)


def naive_combine(e, slots, weights):
    flat = e.reshape(-1, e.shape[2])
    out = torch.zeros(slots.shape[0], e.shape[2], dtype=e.dtype)
    for s in range(slots.shape[0]):
        for j in range(slots.shape[1]):
            if slots[s, j] >= 0:
                out[s] += flat[slots[s, j]] * (1 if weights is None else weights[s, j])
    return out


def naive_route_dot(a, b, slots):
    flat = b.reshape(-1, b.shape[2])
    return torch.tensor([[float(a[s] @ flat[slots[s, j]]) if slots[s, j] >= 0 else 0.0
                          for j in range(slots.shape[1])] for s in range(slots.shape[0])],
                        dtype=a.dtype)


S, E, C, k, M = 9, 3, 3, 2, 5
experts = torch.stack([torch.randperm(E, generator=g)[:k] for _ in range(S)])
slots, _ = torch.ops.dsc.moe_slots(experts, None, E, C)
assert (slots < 0).any() and (slots >= 0).any()
x = torch.randn(S, M, generator=g, dtype=torch.float64)
w = torch.rand(S, k, generator=g, dtype=torch.float64)
e = torch.randn(E, C, M, generator=g, dtype=torch.float64)
for weights in (None, w):
    close(torch.ops.dsc.moe_dispatch(x, slots, weights, E, C),
          naive_dispatch(x, slots, weights, E, C), "moe_dispatch")
    close(torch.ops.dsc.moe_combine(e, slots, weights), naive_combine(e, slots, weights),
          "moe_combine")
close(torch.ops.dsc.moe_route_dot(x, e, slots), naive_route_dot(x, e, slots), "moe_route_dot")
for name, fn, args in (
        ("moe_dispatch", lambda x, w: torch.ops.dsc.moe_dispatch(x, slots, w, E, C), (x, w)),
        ("moe_combine", lambda e, w: torch.ops.dsc.moe_combine(e, slots, w), (e, w)),
        ("moe_route_dot", lambda x, e: torch.ops.dsc.moe_route_dot(x, e, slots), (x, e))):
    args = tuple(a.clone().requires_grad_() for a in args)
    assert torch.autograd.gradcheck(fn, args), name
    assert torch.autograd.gradgradcheck(fn, args), name
meta = torch.ops.dsc.moe_dispatch(x.to("meta"), slots.to("meta"), None, E, C)
assert meta.is_meta and tuple(meta.shape) == (E, C, M)
ms, mc = torch.ops.dsc.moe_slots(experts.to("meta"), None, E, C)
assert tuple(ms.shape) == (S, k) and tuple(mc.shape) == (E,) and mc.dtype == torch.int64
# 16-bit: combine sums in float32 and rounds once.
eb, wb = e.to(torch.bfloat16), w.to(torch.bfloat16)
assert torch.equal(torch.ops.dsc.moe_combine(eb, slots, wb),
                   naive_combine(eb.float(), slots, wb.float()).to(torch.bfloat16))
expect_error(RuntimeError, "slot 9 is outside the 9 expert slots",
             lambda: torch.ops.dsc.moe_combine(e, torch.tensor([[9]] * S), None))
print("moe_dispatch, moe_combine, moe_route_dot: equal the loops; gradients pass "
      "gradcheck and gradgradcheck; meta shapes")


# -- the layer against DeepSpeed's rules, as loops -----------------------------------

def reference_moe(x, logits, k, C, expert_weights, expert_bias, rsample=None,
                  second_noise=None, rts=None):
    """DeepSpeed's gating by its rules, token by token, and the MLP of each
    route's expert applied token by token. Returns (output, l_aux, counts,
    kept routes). Its random numbers, when given ([S, E] each): top-1's
    RSample Gumbel noise (the first choice is the argmax of logits + noise),
    top-2's second-expert Gumbel noise (the second choice is the argmax of
    logits + noise but the first) and top-1's random token selection's
    uniforms (DeepSpeed's topk over mask1 * uniform per expert)."""
    probs = torch.softmax(logits, dim=1)
    S, E = probs.shape
    p, lg = probs.tolist(), logits.tolist()
    first = (logits + rsample).tolist() if rsample is not None else p
    second = (logits + second_noise).tolist() if second_noise is not None else lg

    def argmax(row, skip):
        best = None
        for i, v in enumerate(row):
            if i not in skip and (best is None or v > row[best]):
                best = i
        return best

    choices = []
    for s in range(S):
        chosen = [argmax(first[s], ())]
        for j in range(1, k):
            chosen.append(argmax(second[s] if k == 2 else p[s], chosen))
        choices.append(chosen)
    counts = [sum(c.count(e) for c in choices) for e in range(E)]
    kept = set()
    if rts is not None:
        mask1 = torch.zeros(S, E)
        for s in range(S):
            mask1[s, choices[s][0]] = 1
        top_idx = torch.topk(mask1 * rts, k=C, dim=0)[1]
        keep = mask1 * torch.zeros_like(mask1).scatter_(0, top_idx, 1)
        kept = {(s, 0) for s in range(S) if keep[s, choices[s][0]] == 1}
    elif k <= 2:
        # First choices in token order, then second choices behind all of them.
        queued = [0] * E
        for j in range(k):
            for s in range(S):
                e = choices[s][j]
                if queued[e] < C:
                    kept.add((s, j))
                queued[e] += 1
    else:
        for e in range(E):
            routes = [(s, j) for s in range(S) for j in range(k) if choices[s][j] == e]
            kept.update(sorted(routes, key=lambda r: (-p[r[0]][choices[r[0]][r[1]]], r))[:C])
    out = torch.zeros_like(x)
    for s in range(S):
        gates = [p[s][choices[s][j]] if (s, j) in kept else 0.0 for j in range(k)]
        if k >= 2:
            gates = [v / max(sum(gates), EPS) for v in gates]
        for j in range(k):
            if (s, j) in kept:
                e = choices[s][j]
                h = F.gelu(F.linear(x[s], expert_weights[0][e], expert_bias[0][e]),
                           approximate="tanh")
                out[s] += gates[j] * F.linear(h, expert_weights[1][e], expert_bias[1][e])
    me = [sum(p[s][e] for s in range(S)) / S for e in range(E)]
    counted = 1 if k <= 2 else k
    ce = [sum(c[:counted].count(e) for c in choices) / S for e in range(E)]
    aux = sum(a * b for a, b in zip(me, ce)) * E / (1 if k <= 2 else k)
    return out, aux, counts, kept


class Expert(nn.Module):
    def __init__(self, m, h):
        super().__init__()
        self.c_fc = nn.Linear(m, h)
        self.c_proj = nn.Linear(h, m)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


def layer(M, E, k, **kw):
    kw = dict(dict(use_rts=False, top2_2nd_expert_sampling=False), **kw)
    moe = MoE(M, Expert(M, 2 * M), num_experts=E, k=k, **kw)
    with torch.no_grad():
        for p in moe.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    return moe


def check_against_reference(moe, x, what):
    S = x.reshape(-1, x.shape[-1]).shape[0]
    C = moe.capacity(S)
    out, aux, counts = moe(x)
    flat = x.reshape(-1, x.shape[-1])
    logits = flat @ moe.gate.weight.t()
    ref, ref_aux, ref_counts, kept = reference_moe(
        flat, logits, moe.k, C,
        (moe.experts.c_fc.weight, moe.experts.c_proj.weight),
        (moe.experts.c_fc.bias, moe.experts.c_proj.bias))
    close(out.reshape(S, -1), ref, f"{what}: output")
    close(aux, ref_aux, f"{what}: l_aux")
    assert counts.tolist() == ref_counts, (what, counts, ref_counts)
    return kept, C


# Hand-worked top-1: gate = identity, so the logits are the tokens. Capacity
# ceil(6 / 3 * 1.0) = 2: expert 0 is the first choice of tokens 0, 1, 2
# and 5; it keeps tokens 0 and 1 and drops 2 and 5.
moe = layer(3, 3, 1, min_capacity=1)
with torch.no_grad():
    moe.gate.weight.copy_(torch.eye(3))
x = torch.tensor([[3., 0, 0], [2, 1, 0], [4, 0, 1], [0, 2, 1], [0, 1, 3], [1, 0, 0]])
kept, C = check_against_reference(moe, x, "top-1 by hand")
assert C == 2 and sorted(kept) == [(0, 0), (1, 0), (3, 0), (4, 0)], kept
out, aux, counts = moe(x)
assert counts.tolist() == [4, 1, 1] and (out[2] == 0).all() and (out[5] == 0).all()
probs = torch.softmax(x, dim=1)
close(aux, 3 * (probs[:, 0].mean() * 4 / 6 + probs[:, 1].mean() / 6 + probs[:, 2].mean() / 6),
      "top-1 by hand: l_aux = E * sum me * ce")

# Hand-worked top-2 over the same tokens: capacity ceil(6 / 3 * 2) = 4.
# Choices (first, second; ties to the lower index): (0, 1), (0, 1), (0, 2),
# (1, 2), (2, 1), (0, 1). Expert 1 queues its second choices (tokens 0, 1,
# 4, 5) behind its one first choice (token 3): token 5's is the fifth and
# is dropped, so token 5 keeps its first choice alone, with weight 1.
moe = layer(3, 3, 2, min_capacity=1)
with torch.no_grad():
    moe.gate.weight.copy_(torch.eye(3))
kept, C = check_against_reference(moe, x, "top-2 by hand")
assert C == 4 and set((s, j) for s in range(6) for j in range(2)) - kept == {(5, 1)}, kept
slots, counts = torch.ops.dsc.moe_slots(torch.tensor([[0, 1], [0, 1], [0, 2], [1, 2], [2, 1],
                                                      [0, 1]]), None, 3, 4)
assert slots.tolist() == [[0, 5], [1, 6], [2, 9], [4, 10], [8, 7], [3, -1]], slots
assert counts.tolist() == [4, 5, 3]
out, _, _ = moe(x)
only = F.linear(F.gelu(F.linear(x[5], moe.experts.c_fc.weight[0], moe.experts.c_fc.bias[0]),
                       approximate="tanh"), moe.experts.c_proj.weight[0],
                moe.experts.c_proj.bias[0])
close(out[5], only, "top-2 by hand: a token whose second choice is dropped")

# Top-2's second choice is the argmax of the logits, not of the
# probabilities: logits 0 and 3e-8 are distinct, their float32
# probabilities equal (exp(3e-8) rounds to 1), so expert 2 is the second
# choice where the probabilities' argmax would take expert 1.
tie = torch.tensor([[20.0, 0.0, 3e-8]])
assert torch.softmax(tie, 1)[0, 1] == torch.softmax(tie, 1)[0, 2]
_, _, counts = moe(tie)
assert counts.tolist() == [1, 0, 1], counts

# Random tokens for k = 1, 2, 3 with drops, and without dropping.
for k, factor, drop in ((1, 0.6, True), (2, 0.6, True), (3, 0.5, True), (3, 1.0, False),
                        (2, 1.0, False), (4, 0.8, True)):
    moe = layer(8, 5, k, capacity_factor=factor, min_capacity=1, drop_tokens=drop)
    x = torch.randn(3, 10, 8, generator=g)
    kept, C = check_against_reference(moe, x, f"k={k} factor={factor} drop={drop}")
    assert (len(kept) < 30 * k) == drop, (k, factor, len(kept))
    assert drop or C == 30
moe.eval()
assert moe.capacity(30) == capacity(30, 5, 4, 1.0, 1)  # eval_capacity_factor
print("dsc.nn.MoE: top-1, top-2 and top-k (k = 3, 4) outputs, l_aux and counts equal "
      "DeepSpeed's rules worked token by token; capacity, drops and weights by hand")


# -- the einsum MoE the MoE GPT used (top-1 and top-2), values and gradients ---------

class EinsumMoE(nn.Module):
    """examples/models/moe_gpt.py's MoE before dsc.nn.MoE (GShard's einsums)."""

    def __init__(self, n_embd, experts, k, capacity_factor, min_capacity):
        super().__init__()
        self.gate = nn.Linear(n_embd, experts, bias=False)
        self.experts = nn.ModuleList([Expert(n_embd, 2 * n_embd) for _ in range(experts)])
        self.k, self.capacity_factor, self.min_capacity = k, capacity_factor, min_capacity

    def forward(self, x):
        B, T, M = x.shape
        S, E = B * T, len(self.experts)
        h = x.reshape(S, M)
        logits = self.gate(h).float()
        gates = F.softmax(logits, dim=1)
        capacity = max(self.min_capacity, math.ceil(self.k * S / E * self.capacity_factor))
        index1 = torch.argmax(gates, dim=1)
        mask1 = F.one_hot(index1, num_classes=E)
        loc1 = torch.cumsum(mask1, dim=0) - 1
        me = torch.mean(gates, dim=0)
        ce = torch.mean(mask1.float(), dim=0)
        self.aux_loss = torch.sum(me * ce) * E
        masks, locs = [mask1], [loc1]
        if self.k == 2:
            logits2 = logits.masked_fill(mask1.bool(), float("-inf"))
            index2 = torch.argmax(logits2, dim=1)
            mask2 = F.one_hot(index2, num_classes=E)
            loc2 = torch.cumsum(mask2, dim=0) - 1 + torch.sum(mask1, dim=0, keepdim=True)
            masks.append(mask2)
            locs.append(loc2)
        masks = [m * torch.lt(lc, capacity) for m, lc in zip(masks, locs)]
        gate_s = [torch.sum(gates * m.float(), dim=1) for m in masks]
        if self.k == 2:
            denom = torch.clamp(gate_s[0] + gate_s[1], min=torch.finfo(gates.dtype).eps)
            gate_s = [gs / denom for gs in gate_s]
        combine = 0
        for m, lc, gs in zip(masks, locs, gate_s):
            loc_s = torch.sum(lc * m, dim=1)
            slot = F.one_hot(loc_s, num_classes=capacity).float()
            combine = combine + gs[:, None, None] * m.float()[:, :, None] * slot[:, None, :]
        dispatch = (combine > 0).float()
        expert_in = torch.einsum("sec,sm->ecm", dispatch, h)
        expert_out = torch.stack([e(expert_in[i]) for i, e in enumerate(self.experts)])
        return torch.einsum("sec,ecm->sm", combine, expert_out).reshape(B, T, M)


def copy_to_einsum(moe, old):
    with torch.no_grad():
        old.gate.weight.copy_(moe.gate.weight)
        for i, e in enumerate(old.experts):
            for name in ("c_fc", "c_proj"):
                stacked = getattr(moe.experts, name)
                getattr(e, name).weight.copy_(stacked.weight[i])
                getattr(e, name).bias.copy_(stacked.bias[i])


for k, factor, S in ((1, 1.0, (2, 8)), (1, 0.5, (4, 16)), (2, 1.0, (2, 8)), (2, 0.5, (4, 16))):
    moe = layer(16, 4, k, capacity_factor=factor, min_capacity=1)
    old = EinsumMoE(16, 4, k, factor, 1)
    copy_to_einsum(moe, old)
    x = torch.randn(*S, 16, generator=g)
    out, aux, _ = moe(x)
    ref = old(x)
    close(out, ref, f"einsum k={k}: output")
    close(aux, old.aux_loss, f"einsum k={k}: l_aux")
    moe.double(), old.double()
    x1, x2 = x.double().requires_grad_(), x.double().requires_grad_()
    with _Float32AsFloat64():
        out, aux, _ = moe(x1)
        ref = old(x2)
        up = torch.randn(out.shape, generator=g, dtype=torch.float64)
        ((out * up).sum() + aux).backward()
        ((ref * up).sum() + old.aux_loss).backward()
    close(x1.grad, x2.grad, f"einsum k={k}: d input", RTOL64, ATOL64)
    close(moe.gate.weight.grad, old.gate.weight.grad, f"einsum k={k}: d gate", RTOL64, ATOL64)
    for name in ("c_fc", "c_proj"):
        for part in ("weight", "bias"):
            ours = getattr(getattr(moe.experts, name), part).grad
            theirs = torch.stack([getattr(getattr(e, name), part).grad for e in old.experts])
            close(ours, theirs, f"einsum k={k}: d {name}.{part}", RTOL64, ATOL64)
print("dsc.nn.MoE: top-1 and top-2 equal the MoE GPT's former einsum MoE: output, "
      "l_aux and every gradient")


# -- DeepSpeed's dense top-k gating (k >= 3), values and gradients --------------------

def deepspeed_topk(moe, x):
    """DeepSpeed's topkgating (drop_policy 'probs') and MOELayer einsums,
    transcribed, with per-expert MLPs. Random data: no ties for its
    torch.topk calls to order."""
    E, k = moe.num_experts, moe.k
    h = x.reshape(-1, x.shape[-1])
    gates = F.softmax(F.linear(h.float(), moe.gate.weight.float()), dim=1)
    top_gate, top_idx = torch.topk(gates, k=k, dim=1)
    mask = torch.zeros_like(gates, dtype=torch.bool).scatter_(1, top_idx, 1)
    me, ce = torch.mean(gates, dim=0), torch.mean(mask.float(), dim=0)
    l_aux = torch.mean(me * ce) * E * E / k
    C = moe.capacity(h.shape[0])
    masked = torch.zeros_like(gates).scatter(1, top_idx, top_gate)
    _, cap_idx = torch.topk(masked, k=C, dim=0, sorted=False)
    mask &= torch.zeros_like(gates, dtype=torch.bool).scatter_(0, cap_idx, True)
    locations = torch.cumsum(mask, dim=0) - 1
    gm = gates * mask
    gm = gm / torch.clamp(torch.sum(gm, dim=-1, keepdim=True), min=torch.finfo(gm.dtype).eps)
    combine = torch.einsum("se,sec->sec", gm, F.one_hot(locations * mask, C).float())
    dispatched = torch.einsum("sec,sm->ecm", combine.bool().type_as(h), h)
    outs = []
    for e in range(E):
        y = F.linear(dispatched[e], moe.experts.c_fc.weight[e], moe.experts.c_fc.bias[e])
        outs.append(F.linear(F.gelu(y, approximate="tanh"), moe.experts.c_proj.weight[e],
                             moe.experts.c_proj.bias[e]))
    out = torch.einsum("sec,ecm->sm", combine, torch.stack(outs))
    return out.reshape(x.shape), l_aux, torch.sum(mask.long(), 0)


moe = layer(12, 6, 3, capacity_factor=0.5, min_capacity=1)
x = torch.randn(2, 12, 12, generator=g)
out, aux, counts = moe(x)
ref, ref_aux, kept_counts = deepspeed_topk(moe, x)
assert int(kept_counts.sum()) < 3 * 24  # routes were dropped
close(out, ref, "DeepSpeed top-3: output")
close(aux, ref_aux, "DeepSpeed top-3: l_aux")
moe.double()
x1, x2 = x.double().requires_grad_(), x.double().requires_grad_()
with _Float32AsFloat64():
    out, aux, counts = moe(x1)
    up = torch.randn(out.shape, generator=g, dtype=torch.float64)
    ((out * up).sum() + aux).backward()
    ours = {n: p.grad.clone() for n, p in moe.named_parameters()}
    moe.zero_grad()
    ref, ref_aux, _ = deepspeed_topk(moe, x2)
    ((ref * up).sum() + ref_aux).backward()
close(x1.grad, x2.grad, "DeepSpeed top-3: d input", RTOL64, ATOL64)
for n, p in moe.named_parameters():
    close(ours[n], p.grad, f"DeepSpeed top-3: d {n}", RTOL64, ATOL64)
print("dsc.nn.MoE: top-3 equals DeepSpeed's dense top-k gating: output, l_aux and every "
      "gradient")


# -- experts, names, residual, refusals ---------------------------------------------

class SwiGLU(nn.Module):
    def __init__(self, m, h):
        super().__init__()
        self.w1, self.w3 = nn.Linear(m, h, bias=False), nn.Linear(m, h, bias=False)
        self.w2 = nn.Linear(h, m, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


swiglu = SwiGLU(8, 12)
moe = MoE(8, swiglu, num_experts=3, k=2, top2_2nd_expert_sampling=False)
names = {n: tuple(p.shape) for n, p in moe.named_parameters()}
assert names == {"gate.weight": (3, 8), "experts.w1.weight": (3, 12, 8),
                 "experts.w3.weight": (3, 12, 8), "experts.w2.weight": (3, 8, 12)}, names
# Upcycled: every expert starts as the given one.
assert all(torch.equal(moe.experts.w1.weight[e], swiglu.w1.weight) for e in range(3))
with torch.no_grad():
    for p in moe.experts.parameters():
        p.copy_(torch.randn(p.shape, generator=g))
    stacked_in = torch.randn(3, 5, 8, generator=g)
    ours = moe.experts(stacked_in)
    for e in range(3):
        one = SwiGLU(8, 12)
        for name in ("w1", "w2", "w3"):
            getattr(one, name).weight.copy_(getattr(moe.experts, name).weight[e])
        close(ours[e], one(stacked_in[e]), f"SwiGLU expert {e}")
assert isinstance(MoE(8, nn.Linear(8, 8), num_experts=2, use_rts=False).experts,
                  StackedLinear)

dense = Expert(8, 16)
moe = MoE(8, dense, num_experts=4, k=1, use_residual=True, use_rts=False)
assert moe.mlp is dense and list(n for n, _ in moe.named_parameters()) == [
    "gate.weight", "experts.c_fc.weight", "experts.c_fc.bias", "experts.c_proj.weight",
    "experts.c_proj.bias", "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight",
    "mlp.c_proj.bias", "coefficient.weight", "coefficient.bias"]
x = torch.randn(2, 6, 8, generator=g)
out, _, _ = moe(x)
moe.use_residual = False
plain, _, _ = moe(x)
coef = F.softmax(moe.coefficient(x), dim=-1)
close(out, plain * coef[..., 0:1] + dense(x) * coef[..., 1:], "residual MoE")

# -- randomness: dsc's draws inside a DscDropout context ----------------------------
# The layer's noise is dsc.philox's random_uniform at sites 4n + (0 jitter,
# 1 rsample, 2 use_rts, 3 second expert), n the MoE layer's call index;
# routing by it is DeepSpeed's top1gating / top2gating fed those numbers.

def draws(site, shape, low=0.0, high=1.0):
    return random_uniform(shape, low, high, site, 5, 3, 2, 2)


def gumbel(site, shape):
    return -torch.log(-torch.log(draws(site, shape)))


xr = torch.randn(2, 12, 8, generator=g)
flat = xr.reshape(-1, 8)
weights = lambda m: ((m.experts.c_fc.weight, m.experts.c_proj.weight),  # noqa: E731
                     (m.experts.c_fc.bias, m.experts.c_proj.bias))
rts_changed = False
for layer_index in (0, 1):
    # The second MoE layer of a forward draws at sites 4..7.
    site = 4 * layer_index
    for k, kw, noise in ((1, dict(use_rts=True), "rts"),
                         (1, dict(use_rts=True, noisy_gate_policy="RSample"), "rts+rsample"),
                         (1, dict(noisy_gate_policy="Jitter"), "jitter"),
                         (2, dict(top2_2nd_expert_sampling=True), "second"),
                         (2, dict(top2_2nd_expert_sampling=True,
                                  noisy_gate_policy="Jitter"), "second+jitter")):
        moe = layer(8, 4, k, min_capacity=1, capacity_factor=0.5, **kw)
        for training in (True, False):
            moe.train(training)
            with DscDropout(step=3, first_sample=2, samples=2, seed=5) as context:
                context.moe_layer = layer_index
                out, aux, counts = moe(xr)
            S, C = flat.shape[0], moe.capacity(flat.shape[0])
            gate_in = flat
            if training and "jitter" in noise:
                gate_in = flat * draws(site + 0, (S, 8), 0.99, 1.01)
            ref, ref_aux, ref_counts, kept = reference_moe(
                flat, gate_in @ moe.gate.weight.t(), k, C, *weights(moe),
                rsample=gumbel(site + 1, (S, 4)) if training and "rsample" in noise else None,
                second_noise=gumbel(site + 3, (S, 4)) if "second" in noise else None,
                rts=draws(site + 2, (S, 4)) if "rts" in noise else None)
            what = f"{noise} (layer {layer_index}, training {training})"
            close(out.reshape(S, -1), ref, f"{what}: output")
            close(aux, ref_aux, f"{what}: l_aux")
            assert counts.tolist() == ref_counts, (what, counts, ref_counts)
            assert len(kept) < S * k, (what, "nothing dropped")
            if noise == "rts":
                # Random token selection keeps other tokens than the first C.
                plain = reference_moe(flat, flat @ moe.gate.weight.t(), 1, C, *weights(moe))[3]
                rts_changed |= plain != kept
assert rts_changed, "random token selection kept the first tokens everywhere"
# Outside a context the numbers are torch's global generator's, as DeepSpeed's.
moe = layer(8, 4, 1, min_capacity=1, capacity_factor=0.5, use_rts=True)
torch.manual_seed(0)
a = moe(xr)[0]
torch.manual_seed(0)
assert torch.equal(moe(xr)[0], a)
print("dsc.nn.MoE: use_rts, RSample, Jitter and second-expert sampling draw dsc's numbers "
      "and route as DeepSpeed's gating fed them")


class Normed(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.ln = nn.Linear(8, 8), nn.LayerNorm(8)

    def forward(self, x):
        return self.ln(self.fc(x))


class Functional(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return F.linear(x, self.fc.weight, self.fc.bias)


expect_error(ValueError, "outside nn.Linear modules (ln.weight, ln.bias)",
             lambda: MoE(8, Normed(), 2))
expect_error(RuntimeError, "the expert (Functional) failed on the stacked input [2, 6, 8]",
             lambda: MoE(8, Functional(), 2, use_rts=False)(x))
expect_error(ValueError, "k (3) must be in [1, num_experts = 2]",
             lambda: MoE(8, Expert(8, 16), 2, k=3))
expect_error(ValueError, "multiple of ep_size (3)", lambda: MoE(8, Expert(8, 16), 4, ep_size=3))
print("dsc.nn.MoE: stacked SwiGLU and Linear experts, state names, residual MoE, "
      "refusals")
