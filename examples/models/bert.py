"""A BERT-style encoder with a masked-language-modelling loss, plain PyTorch,
in Hugging Face's BertForMaskedLM parameter layout.

    build(size="tiny"|"base", batch=2, seq=None, vocab=None)

The inputs are (tokens, targets) like every zoo model, so one data loader
feeds them all; BERT ignores `targets`. Masking is deterministic, so exports
and golden runs are reproducible: positions p with p % 7 == 3 are replaced by
the [MASK] id (the last vocabulary entry) and their original tokens are the
labels; every other position is ignored (-100). The loss is the mean
cross-entropy over the masked positions.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

SIZES = {
    "tiny": dict(layers=2, heads=2, hidden=32, intermediate=128, vocab=256, max_pos=16),
    "base": dict(layers=12, heads=12, hidden=768, intermediate=3072, vocab=30522, max_pos=512),
}


class Embeddings(nn.Module):
    def __init__(self, vocab, hidden, max_pos):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden, padding_idx=0)
        self.position_embeddings = nn.Embedding(max_pos, hidden)
        self.token_type_embeddings = nn.Embedding(2, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, tokens):
        t = tokens.size(1)
        pos = torch.arange(t, device=tokens.device)
        types = torch.zeros_like(tokens)
        x = (self.word_embeddings(tokens) + self.position_embeddings(pos)
             + self.token_type_embeddings(types))
        return self.LayerNorm(x)


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.heads = heads

    def forward(self, x):
        B, T, C = x.shape
        split = lambda y: y.view(B, T, self.heads, C // self.heads).permute(0, 2, 1, 3)
        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(C // self.heads)
        probs = F.softmax(scores, dim=-1)
        return torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(B, T, C)


class Layer(nn.Module):
    def __init__(self, hidden, heads, intermediate):
        super().__init__()
        self.attention = nn.ModuleDict(dict(
            self=SelfAttention(hidden, heads),
            output=nn.ModuleDict(dict(dense=nn.Linear(hidden, hidden),
                                      LayerNorm=nn.LayerNorm(hidden, eps=1e-12)))))
        self.intermediate = nn.ModuleDict(dict(dense=nn.Linear(hidden, intermediate)))
        self.output = nn.ModuleDict(dict(dense=nn.Linear(intermediate, hidden),
                                         LayerNorm=nn.LayerNorm(hidden, eps=1e-12)))

    def forward(self, x):
        attn = self.attention
        x = attn.output.LayerNorm(x + attn.output.dense(attn.self(x)))
        h = F.gelu(self.intermediate.dense(x))
        return self.output.LayerNorm(x + self.output.dense(h))


class BertForMaskedLM(nn.Module):
    def __init__(self, layers, heads, hidden, intermediate, vocab, max_pos):
        super().__init__()
        self.bert = nn.ModuleDict(dict(
            embeddings=Embeddings(vocab, hidden, max_pos),
            encoder=nn.ModuleDict(dict(layer=nn.ModuleList(
                [Layer(hidden, heads, intermediate) for _ in range(layers)])))))
        self.cls = nn.ModuleDict(dict(predictions=nn.ModuleDict(dict(
            transform=nn.ModuleDict(dict(dense=nn.Linear(hidden, hidden),
                                         LayerNorm=nn.LayerNorm(hidden, eps=1e-12))),
            decoder=nn.Linear(hidden, vocab, bias=False)))))
        self.cls.predictions.bias = nn.Parameter(torch.zeros(vocab))
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight
        self.mask_id = vocab - 1
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, tokens, targets):
        t = tokens.size(1)
        masked = (torch.arange(t, device=tokens.device) % 7) == 3
        inputs = torch.where(masked, torch.full_like(tokens, self.mask_id), tokens)
        labels = torch.where(masked, tokens, torch.full_like(tokens, -100))
        x = self.bert.embeddings(inputs)
        for layer in self.bert.encoder.layer:
            x = layer(x)
        p = self.cls.predictions
        h = p.transform.LayerNorm(F.gelu(p.transform.dense(x)))
        logits = p.decoder(h) + p.bias
        return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))


def build(size="tiny", batch=2, seq=None, vocab=None, heads=None):
    cfg = dict(SIZES[size])
    if vocab is not None:
        cfg["vocab"] = vocab
    if heads is not None:  # e.g. 4 for tensor parallelism over 4 ranks
        cfg["heads"] = heads
    seq = seq or min(cfg["max_pos"], 8 if size == "tiny" else 128)
    model = BertForMaskedLM(**cfg)
    g = torch.Generator().manual_seed(1234)
    tokens = torch.randint(0, cfg["vocab"] - 1, (batch, seq), generator=g)
    targets = torch.randint(0, cfg["vocab"] - 1, (batch, seq), generator=g)
    return model, (tokens, targets)
