"""Every dsc.moe_* operator in one small model, with each optional operand
present and absent, so that the export of each is checked against PyTorch
(the MoE layer itself uses neither dispatch weights nor moe_route_dot)."""

import torch
import torch.nn as nn

import dsc.moe_ops  # noqa: F401

E, C = 3, 4


class Routed(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(8, E, bias=False)
        self.w = nn.Parameter(torch.randn(E, 8, 8) * 0.3)

    def forward(self, x):
        probs = torch.softmax(self.gate(x), dim=1)
        top, experts = torch.topk(probs, 2, dim=1)
        plain, _ = torch.ops.dsc.moe_slots(experts, None, E, C)
        ranked, counts = torch.ops.dsc.moe_slots(experts, top, E, C)
        scaled = torch.ops.dsc.moe_dispatch(x, ranked, top, E, C)
        copied = torch.ops.dsc.moe_dispatch(x, plain, None, E, C)
        y = torch.ops.dsc.moe_combine(torch.tanh(scaled @ self.w), ranked, top) + \
            torch.ops.dsc.moe_combine(copied, plain, None)
        dots = torch.ops.dsc.moe_route_dot(x, scaled, ranked)
        return (y * y).mean() + dots.sum() + counts.float().sum()


def build():
    g = torch.Generator().manual_seed(7)
    return Routed(), (torch.randn(10, 8, generator=g),)
