"""A GPT whose feed-forward blocks are mixtures of experts: dsc.nn.MoE, the
DeepSpeed MoE layer, around GPT-2's MLP.

    build(size="tiny", experts=4, k=1|2|..., capacity_factor=1.0, min_capacity=4,
          aux_loss_coef=0.01, batch=2, seq=None, use_rts=False,
          noisy_gate_policy=None, top2_2nd_expert_sampling=False)

Gating is DeepSpeed's, by default without its randomness (use_rts=False,
top2_2nd_expert_sampling=False, noisy_gate_policy=None; set them to draw
DeepSpeed's noise from dsc's generator, dsc.nn.MoE): softmax gates in fp32; top-1 takes the
argmax; top-2 takes the argmax and the argmax of the rest, places first
choices before second choices and renormalizes the two gates. Each expert
takes at most `capacity = max(min_capacity, ceil(tokens / experts * k *
capacity_factor))` tokens (float32 arithmetic); the rest are dropped (their
expert output is zero, the residual carries them). The auxiliary
load-balancing loss E * sum_e mean_gate_e * fraction_routed_e (first
choices) is added to the language-model loss with `aux_loss_coef`. The
experts' weights are stacked (`moe.experts.c_fc.weight` [E, 4M, M], ...)
and each expert is initialized on its own.
"""

import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
# dsc's Python package from this checkout when PYTHONPATH does not name one.
sys.path.append(os.path.join(_HERE, "..", "..", "python"))
import gpt2  # noqa: E402
from dsc.nn import MoE, StackedLinear  # noqa: E402


class Expert(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class MoEBlock(nn.Module):
    def __init__(self, n_embd, n_head, block_size, dropout, moe_args):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = gpt2.CausalSelfAttention(n_embd, n_head, block_size, dropout)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.moe = MoE(n_embd, Expert(n_embd), **moe_args)
        self.aux_loss = None

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        out, self.aux_loss, _ = self.moe(self.ln_2(x))
        return x + out


class MoEGPT(gpt2.GPT):
    def __init__(self, moe_args, aux_loss_coef, **cfg):
        super().__init__(**cfg)
        self.transformer.h = nn.ModuleList([
            MoEBlock(cfg["n_embd"], cfg["n_head"], cfg["block_size"], 0.0, moe_args)
            for _ in range(cfg["n_layer"])])
        self.apply(self._init_weights)
        self.aux_loss_coef = aux_loss_coef

    @staticmethod
    def _init_weights(module):
        # Every expert drawn on its own (not upcycled from one MLP), so that
        # a routing error changes the numbers.
        gpt2.GPT._init_weights(module)
        if isinstance(module, StackedLinear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)

    def forward(self, tokens, targets):
        loss = super().forward(tokens, targets)
        aux = sum(block.aux_loss for block in self.transformer.h)
        return loss + self.aux_loss_coef * aux


def build(size="tiny", experts=4, k=1, capacity_factor=1.0, min_capacity=4,
          aux_loss_coef=0.01, batch=2, seq=None, vocab=None, layers=None,
          use_rts=False, noisy_gate_policy=None, top2_2nd_expert_sampling=False):
    cfg = dict(gpt2.SIZES[size])
    if vocab is not None:
        cfg["vocab_size"] = vocab
    if layers is not None:
        cfg["n_layer"] = layers
    seq = seq or min(cfg["block_size"], 8 if size == "tiny" else 64)
    model = MoEGPT(dict(num_experts=experts, k=k, capacity_factor=capacity_factor,
                        min_capacity=min_capacity, use_rts=use_rts,
                        noisy_gate_policy=noisy_gate_policy,
                        top2_2nd_expert_sampling=top2_2nd_expert_sampling),
                   aux_loss_coef, **cfg)
    g = torch.Generator().manual_seed(1234)
    tokens = torch.randint(0, cfg["vocab_size"], (batch, seq), generator=g)
    targets = torch.randint(0, cfg["vocab_size"], (batch, seq), generator=g)
    return model, (tokens, targets)
