"""GPT-2 as dsc-opt's --moe-experts rewrite makes it, written in PyTorch.

    build(size="tiny", batch=4, seq=16, experts=4, k=2, capacity_factor=1.0,
          min_capacity=4, aux_loss_coef=0.01, use_residual=False,
          use_rts=False, noisy_gate_policy=None, top2_2nd_expert_sampling=True)

Every block's MLP becomes dsc.nn.MoE around that MLP (gate
`mlp.gate.weight`, experts `mlp.experts.c_fc.*` / `mlp.experts.c_proj.*`,
the names the rewrite gives its states), with the rewrite's defaults for
the random options (--moe-use-rts, --moe-noisy-gate-policy,
--moe-top2-2nd-expert-sampling; dsc.golden's DscDropout context makes the
layer draw the rewrite's numbers), and the loss gains aux_loss_coef times
the sum of the blocks' l_aux, as the rewrite adds it. use_residual: residual MoE
(--moe-residual), the MLP itself beside the experts (`mlp.mlp.*`) mixed by
`mlp.coefficient`. The initial weights of a parity
test come from dsc itself (dsc-run --steps 0 --save, then dsc-ckpt export),
so both sides start from the same gate and experts.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(SRC, "examples", "models"))
sys.path.insert(0, os.path.join(SRC, "python"))

import gpt2  # noqa: E402
from dsc.nn import MoE  # noqa: E402


class MoEMLP(MoE):
    """dsc.nn.MoE in a block's `mlp` slot: returns the output, keeps l_aux."""

    def forward(self, x):
        out, self.l_aux, self.exp_counts = super().forward(x)
        return out


class RewrittenGPT(gpt2.GPT):
    def forward(self, tokens, targets):
        loss = super().forward(tokens, targets)
        aux = sum(block.mlp.l_aux for block in self.transformer.h)
        return loss + self.aux_loss_coef * aux


def build(size="tiny", batch=4, seq=16, experts=4, k=2, capacity_factor=1.0,
          min_capacity=4, aux_loss_coef=0.01, use_residual=False, use_rts=False,
          noisy_gate_policy=None, top2_2nd_expert_sampling=True):
    model, inputs = gpt2.build(size=size, batch=batch, seq=seq)
    model.__class__ = RewrittenGPT
    model.aux_loss_coef = aux_loss_coef
    for block in model.transformer.h:
        block.mlp = MoEMLP(block.mlp.c_fc.in_features, block.mlp,
                           num_experts=experts, k=k,
                           capacity_factor=capacity_factor,
                           min_capacity=min_capacity, use_rts=use_rts,
                           noisy_gate_policy=noisy_gate_policy,
                           top2_2nd_expert_sampling=top2_2nd_expert_sampling,
                           use_residual=use_residual)
    return model, inputs
