"""Builds its state on the meta device itself: parameters with
--set buffer=false, parameters and a buffer by default."""
import torch
import torch.nn as nn


class Scaled(nn.Module):
    def __init__(self, buffer):
        super().__init__()
        self.w = nn.Parameter(torch.empty(4, device="meta"))
        self.register_buffer("scale", torch.ones(4, device="meta" if buffer else "cpu"))

    def forward(self, x):
        return (x * self.w * self.scale).sum()


def build(buffer=True):
    return Scaled(buffer), (torch.ones(2, 4),)
