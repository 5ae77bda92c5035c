"""A decoder outside the zoo, written the way Llama-family code is: RMSNorm,
rotary position embeddings (cos/sin tables from an inv_freq buffer, applied
with rotate_half), a SwiGLU gated MLP, no biases, an untied LM head, and a
causal mask built in forward from torch.full + torch.triu.

build(hf_names=True) names the inputs the Hugging Face way, (input_ids,
labels), with the same parameters: labels are the next tokens (already
shifted), so a token file's sequences feed it as a samples file
(`python3 -m dsc.data --from-tokens`)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, dim, bias=False)
        self.v_proj = nn.Linear(dim, dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)
        self.heads = heads
        hd = dim // heads
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd)))

    def forward(self, x):
        B, T, C = x.shape
        hd = C // self.heads
        q = self.q_proj(x).view(B, T, self.heads, hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.heads, hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.heads, hd).transpose(1, 2)
        t = torch.arange(T, dtype=self.inv_freq.dtype)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        mask = torch.full((T, T), float("-inf")).triu(1)
        att = q @ k.transpose(-2, -1) / hd ** 0.5 + mask
        att = F.softmax(att.float(), dim=-1).type_as(q)
        return self.o_proj((att @ v).transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.input_layernorm = RMSNorm(dim)
        self.self_attn = Attention(dim, heads)
        self.post_attention_layernorm = RMSNorm(dim)
        self.mlp = MLP(dim, hidden)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(nn.Module):
    def __init__(self, vocab=256, dim=32, heads=4, hidden=88, layers=2):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([Layer(dim, heads, hidden) for _ in range(layers)])
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens, targets):
        x = self.embed_tokens(tokens)
        for layer in self.layers:
            x = layer(x)
        logits = self.lm_head(self.norm(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class HFNamedDecoder(Decoder):
    """The Decoder whose graph inputs are named input_ids and labels."""

    def forward(self, input_ids, labels):
        return super().forward(input_ids, labels)


def build(batch=2, seq=8, hf_names=False, layers=2):
    model = HFNamedDecoder(layers=layers) if hf_names else Decoder(layers=layers)
    g = torch.Generator().manual_seed(7)
    tokens = torch.randint(0, 256, (batch, seq), generator=g)
    targets = torch.randint(0, 256, (batch, seq), generator=g)
    return model, (tokens, targets)
