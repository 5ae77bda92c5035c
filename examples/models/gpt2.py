"""GPT-2 in plain PyTorch, in nanoGPT's layout and parameter names.

    build(size="tiny"|"small"|"medium"|"gpt3-1.3b"|"gpt3-175b", batch=2, seq=None,
          vocab=None, dropout=0.0, layers=None, width=None, heads=None)

`small` is GPT-2 124M (12 layers, 12 heads, width 768, vocab 50257, context
1024). `tiny` (2 layers, 2 heads, width 32, byte-level vocab 256, context 16)
is what tests train. `gpt3-1.3b` and `gpt3-175b` are GPT-3 XL and GPT-3
(Brown et al. 2020, table 2.1) in this layout, context 2048, vocab 50257;
their sequence defaults to the full context. Export them with --meta: 175B
fp32 parameters are 700 GB. The LM head is tied to the token embedding. The inputs
are (tokens, targets), int64 [batch, seq]; the output is the mean
cross-entropy over every target token.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

SIZES = {
    "tiny": dict(n_layer=2, n_head=2, n_embd=32, vocab_size=256, block_size=16),
    "small": dict(n_layer=12, n_head=12, n_embd=768, vocab_size=50257, block_size=1024),
    "medium": dict(n_layer=24, n_head=16, n_embd=1024, vocab_size=50257, block_size=1024),
    "gpt3-1.3b": dict(n_layer=24, n_head=16, n_embd=2048, vocab_size=50257, block_size=2048),
    "gpt3-175b": dict(n_layer=96, n_head=96, n_embd=12288, vocab_size=50257, block_size=2048),
}


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size, dropout):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        self.n_head = n_head
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                             .view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, n_embd, dropout):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate="tanh")))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size, dropout)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, n_layer, n_head, n_embd, vocab_size, block_size, dropout=0.0):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            drop=nn.Dropout(dropout),
            h=nn.ModuleList([Block(n_embd, n_head, block_size, dropout)
                             for _ in range(n_layer)]),
            ln_f=nn.LayerNorm(n_embd),
        ))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, tokens, targets):
        b, t = tokens.size()
        pos = torch.arange(0, t, dtype=torch.long, device=tokens.device)
        x = self.transformer.drop(self.transformer.wte(tokens) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                               ignore_index=-1)


def build(size="tiny", batch=2, seq=None, vocab=None, dropout=0.0, layers=None,
          width=None, heads=None):
    cfg = dict(SIZES[size])
    if vocab is not None:
        cfg["vocab_size"] = vocab
    if layers is not None:
        cfg["n_layer"] = layers
    if width is not None:
        cfg["n_embd"] = width
    if heads is not None:
        cfg["n_head"] = heads
    if not seq:
        seq = (cfg["block_size"] if size.startswith("gpt3-") else
               min(cfg["block_size"], 8 if size == "tiny" else 64))
    model = GPT(dropout=dropout, **cfg)
    g = torch.Generator().manual_seed(1234)
    tokens = torch.randint(0, cfg["vocab_size"], (batch, seq), generator=g)
    targets = torch.randint(0, cfg["vocab_size"], (batch, seq), generator=g)
    return model, (tokens, targets)
