"""Small language models that, together, put every differentiable dsc op
between a parameter and the loss, for the gradient checks against
torch.autograd (test/e2e/gradients-ops.test). `block` picks one:

    elementwise  every unary and binary elementwise op, select, convert,
                 a tied embedding with padding_idx, mean cross-entropy
    structure    linear with and without bias, matmul with transposes,
                 causal mask, softmax, log_softmax, layer norms, reshape,
                 transpose, permute, expand, concat, slice, summed
                 cross-entropy with ignore_index
    indexing     gather, scatter_add, top_k values, cumsum, the reductions
                 (sum, mean, amax, max), cross-entropy without reduction

Inputs are byte-level tokens and targets [batch, seq], as dsc-run feeds them.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, D = 256, 8


class Elementwise(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D, padding_idx=32)   # ' ' is common
        self.w = nn.Parameter(torch.randn(D))
        self.b = nn.Parameter(torch.randn(D))
        self.c = nn.Parameter(torch.randn(D) * 0.5)
        self.e = nn.Parameter(torch.rand(D) + 0.5)

    def forward(self, tokens, targets):
        a = self.emb(tokens) * self.w + self.b                     # [B, T, D]
        sq = a * a
        u = torch.exp(-sq) / (1.0 + a.pow(2)) - torch.sqrt(sq + 1.0)
        u = u + torch.rsqrt(sq + 2.0) + torch.log(sq + 1.0) - (-a)
        u = u + torch.cos(a) * torch.sin(self.c * a)
        t = torch.tanh(a) - torch.sigmoid(a) + F.relu(a) + F.silu(a)
        t = t + F.gelu(a) + F.gelu(a, approximate="tanh")
        m = torch.maximum(a, self.c) + torch.minimum(a, -self.c)
        p = torch.pow(sq + 1.0, self.e)
        conv = (a.double() * 1.5).float()
        s = torch.where(a > 0, a, self.w * 0.5)
        h = u + t + m + p + conv + s
        logits = F.linear(h, self.emb.weight)                      # tied
        return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


class Structure(nn.Module):
    def __init__(self, seq):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.qk = nn.Linear(D, 2 * D)
        self.proj = nn.Linear(2 * D, 2 * D, bias=False)
        self.ln = nn.LayerNorm(2 * D)
        self.ln2 = nn.LayerNorm([seq, 2 * D], elementwise_affine=False)
        self.g = nn.Parameter(torch.randn(2 * D))
        self.head = nn.Linear(2 * D, VOCAB)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)))

    def forward(self, tokens, targets):
        B, T = tokens.shape
        x = self.emb(tokens)                                       # [B, T, D]
        q, k = self.qk(x).split(D, dim=-1)
        att = (q @ k.transpose(-2, -1)) * 0.5
        att = att.masked_fill(self.mask[:T, :T] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ x                             # [B, T, D]
        y = y.permute(0, 2, 1).reshape(B, D, T).transpose(1, 2)
        z = torch.cat([y, x], dim=-1)                              # [B, T, 2D]
        z = self.ln(self.proj(z)) + self.g.expand(B, T, 2 * D)
        z = self.ln2(z)
        logp = F.log_softmax(self.head(z), dim=-1)
        ignored = torch.where(targets == 101, torch.full_like(targets, -1), targets)
        ce = F.cross_entropy(self.head(z).reshape(-1, VOCAB), ignored.reshape(-1),
                             ignore_index=-1, reduction="sum")
        return ce / (B * T) - logp.mean()


class Indexing(nn.Module):
    def __init__(self, seq):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.register_buffer("idx", torch.randint(0, D, (seq, 2)))
        self.w = nn.Parameter(torch.randn(2))
        self.head = nn.Linear(D, VOCAB)

    def forward(self, tokens, targets):
        x = self.emb(tokens)                                       # [B, T, D]
        idx = self.idx.expand(x.shape[0], -1, -1)                  # [B, T, 2]
        g = torch.gather(x, 2, idx) * self.w                       # [B, T, 2]
        s = torch.zeros_like(x).scatter_add(2, idx, g)
        top, _ = torch.topk(x, 2, dim=-1)
        cs = torch.cumsum(x, dim=1) * 0.1
        am = torch.amax(x, dim=1, keepdim=True)
        mx, _ = x.max(dim=-1, keepdim=True)
        h = s + cs + am + mx + top.sum(dim=-1, keepdim=True) + x.mean(dim=1, keepdim=True)
        ce = F.cross_entropy(self.head(h).reshape(-1, VOCAB), targets.reshape(-1),
                             reduction="none")
        # Means only: on N ranks the loss is the mean of the ranks' losses.
        return ce.mean() + 0.1 * x.mean()


def build(block="elementwise", batch=2, seq=8):
    torch.manual_seed(7)
    model = Elementwise() if block == "elementwise" else (
        Indexing(seq) if block == "indexing" else Structure(seq))
    g = torch.Generator().manual_seed(1234)
    tokens = torch.randint(0, VOCAB, (batch, seq), generator=g)
    targets = torch.randint(0, VOCAB, (batch, seq), generator=g)
    return model, (tokens, targets)
