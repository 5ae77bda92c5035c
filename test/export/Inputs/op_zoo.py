"""One model that exercises the ATen mappings the zoo models do not, so the
exporter's node-by-node check against PyTorch covers them."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class OpZoo(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.table = nn.Parameter(torch.randn(10, 6))

    def forward(self, x, idx):
        h = self.fc(x)                                     # [4, 6]
        a = torch.clamp(h, -0.5, 0.5) + h.clamp(min=0.1) + h.clamp(max=0.2)
        b = torch.relu(h) + torch.sigmoid(h) * torch.exp(-h.abs() if False else -h * h)
        c = torch.log(1.0 + torch.sqrt(h * h + 1.0)) + torch.reciprocal(h * h + 2.0)
        d = torch.maximum(a, b) - torch.minimum(b, c) + (1.0 - c)   # rsub
        e = torch.where(h > 0, d, 0.25) + torch.where(h < 0.1, 1.5, d)
        g = torch.gather(e, 1, idx)                        # [4, 2]
        s = torch.zeros(4, 6).scatter_add(1, idx, g)       # [4, 6]
        t = torch.cat([s, e], dim=1)                       # [4, 12]
        u = torch.stack([t, t * 2.0], dim=0)               # [2, 4, 12]
        v = u.select(0, 1).unsqueeze(0).squeeze(0).flatten(0, 1)   # [48]
        w = v.view(4, 12)
        m, mi = w.max(dim=1)                               # [4], [4]
        am = torch.amax(w, dim=0, keepdim=True)            # [1, 12]
        # Distinct values: on ties torch.topk orders indices as its kernel
        # happens to, dsc.top_k lower index first.
        top, topi = torch.topk(w + torch.arange(12) * 1e-3, 2, dim=1)
        counts = torch.cumsum(torch.ones_like(idx), dim=0) # int64
        ratio = counts / (idx + 1)                         # int / int -> float
        emb = F.embedding(idx[:, 0], self.table)           # [4, 6]
        total = (m.sum() + am.mean() + top.sum() + topi.float().mean() + ratio.sum()
                 + mi.float().sum() + emb.pow(2).mean() + w.mean(dim=1).sum())
        logits = torch.cat([w, emb], dim=1)                # [4, 18]
        ce = F.cross_entropy(logits, idx[:, 1], reduction="sum")
        return ce * 0.01 + total / torch.full_like(total, 100.0)


def build():
    torch.manual_seed(3)
    x = torch.randn(4, 6)
    idx = torch.tensor([[0, 5], [2, 2], [4, 1], [3, 0]])
    return OpZoo(), (x, idx)
