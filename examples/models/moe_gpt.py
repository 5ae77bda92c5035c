"""A GPT whose feed-forward blocks are mixtures of experts, in plain PyTorch.

    build(size="tiny", experts=4, k=1|2, capacity_factor=1.0, min_capacity=4,
          aux_loss_coef=0.01, batch=2, seq=None)

Gating follows DeepSpeed's top1gating / top2gating (GShard): softmax gates in
fp32; top-1 takes the argmax; top-2 takes the argmax and the argmax of the
rest, places first choices before second choices and renormalizes the two
gates. Each expert takes at most `capacity = max(min_capacity,
ceil(k * tokens / experts * capacity_factor))` tokens; the rest are dropped
(their expert output is zero, the residual carries them). The auxiliary
load-balancing loss E * sum_e mean_gate_e * fraction_routed_e (first choices)
is added to the language-model loss with `aux_loss_coef`.
"""

import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2  # noqa: E402


class Expert(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class MoE(nn.Module):
    def __init__(self, n_embd, experts, k, capacity_factor, min_capacity):
        super().__init__()
        assert k in (1, 2), "top-1 and top-2 gating"
        self.gate = nn.Linear(n_embd, experts, bias=False)
        self.experts = nn.ModuleList([Expert(n_embd) for _ in range(experts)])
        self.k, self.capacity_factor, self.min_capacity = k, capacity_factor, min_capacity
        self.aux_loss = None

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
        # Load balancing over first choices: E * sum_e me_e * ce_e.
        me = torch.mean(gates, dim=0)
        ce = torch.mean(mask1.float(), dim=0)
        self.aux_loss = torch.sum(me * ce) * E

        masks, locs = [mask1], [loc1]
        if self.k == 2:
            logits2 = logits.masked_fill(mask1.bool(), float("-inf"))
            index2 = torch.argmax(logits2, dim=1)
            mask2 = F.one_hot(index2, num_classes=E)
            # Second choices queue behind every first choice of their expert.
            loc2 = torch.cumsum(mask2, dim=0) - 1 + torch.sum(mask1, dim=0, keepdim=True)
            masks.append(mask2)
            locs.append(loc2)

        masks = [m * torch.lt(l, capacity) for m, l in zip(masks, locs)]
        gate_s = [torch.sum(gates * m.float(), dim=1) for m in masks]
        if self.k == 2:
            denom = torch.clamp(gate_s[0] + gate_s[1], min=torch.finfo(gates.dtype).eps)
            gate_s = [g / denom for g in gate_s]
        combine = 0
        for m, l, g in zip(masks, locs, gate_s):
            loc_s = torch.sum(l * m, dim=1)
            slot = F.one_hot(loc_s, num_classes=capacity).float()
            combine = combine + g[:, None, None] * m.float()[:, :, None] * slot[:, None, :]
        dispatch = (combine > 0).float()                          # [S, E, C]
        expert_in = torch.einsum("sec,sm->ecm", dispatch, h)      # [E, C, M]
        expert_out = torch.stack([e(expert_in[i]) for i, e in enumerate(self.experts)])
        out = torch.einsum("sec,ecm->sm", combine, expert_out)
        return out.reshape(B, T, M)


class MoEBlock(nn.Module):
    def __init__(self, n_embd, n_head, block_size, dropout, moe_args):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = gpt2.CausalSelfAttention(n_embd, n_head, block_size, dropout)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.moe = MoE(n_embd, **moe_args)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.moe(self.ln_2(x))


class MoEGPT(gpt2.GPT):
    def __init__(self, moe_args, aux_loss_coef, **cfg):
        super().__init__(**cfg)
        self.transformer.h = nn.ModuleList([
            MoEBlock(cfg["n_embd"], cfg["n_head"], cfg["block_size"], 0.0, moe_args)
            for _ in range(cfg["n_layer"])])
        self.apply(self._init_weights)
        self.aux_loss_coef = aux_loss_coef

    def forward(self, tokens, targets):
        loss = super().forward(tokens, targets)
        aux = sum(block.moe.aux_loss for block in self.transformer.h)
        return loss + self.aux_loss_coef * aux


def build(size="tiny", experts=4, k=1, capacity_factor=1.0, min_capacity=4,
          aux_loss_coef=0.01, batch=2, seq=None, vocab=None, layers=None):
    cfg = dict(gpt2.SIZES[size])
    if vocab is not None:
        cfg["vocab_size"] = vocab
    if layers is not None:
        cfg["n_layer"] = layers
    seq = seq or min(cfg["block_size"], 8 if size == "tiny" else 64)
    model = MoEGPT(dict(experts=experts, k=k, capacity_factor=capacity_factor,
                        min_capacity=min_capacity), aux_loss_coef, **cfg)
    g = torch.Generator().manual_seed(1234)
    tokens = torch.randint(0, cfg["vocab_size"], (batch, seq), generator=g)
    targets = torch.randint(0, cfg["vocab_size"], (batch, seq), generator=g)
    return model, (tokens, targets)
