"""Causal self-attention through F.scaled_dot_product_attention (torch 2.x),
as an unmodified nanoGPT writes it, and a padded-keys attention with a
boolean mask; the loss is the sum of both outputs.

    build(batch=2, seq=8, heads=2, width=32)
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.qkv = nn.Linear(width, 3 * width)
        self.heads = heads

    def forward(self, x, keep):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        split = lambda y: y.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        padded = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        return (causal + padded).sum()


def build(batch=2, seq=8, heads=2, width=32):
    torch.manual_seed(0)
    model = Attention(width, heads)
    x = torch.randn(batch, seq, width)
    keep = torch.ones(batch, 1, 1, seq, dtype=torch.bool)
    keep[:, :, :, -2:] = False
    return model, (x, keep)
