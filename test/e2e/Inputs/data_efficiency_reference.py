#!/usr/bin/env python3
"""The first step of GPT-2 (the zoo's gpt2.py) under curriculum learning
and random-LTD. With --seqlen S the batch is cut to its first S tokens
(DeepSpeed's curriculum truncation). With --kept K the random-LTD blocks run as a masked
dense PyTorch model: every block in --layers runs on the whole sequence
with its attention restricted to the kept tokens (kept x kept, causal) and
its outputs kept only at the kept positions; the dropped ones pass the
block's input through. The kept positions are dsc's (dsc.philox's
random_ltd_indices for the run's seed, step 1 and each sample's place in
the batch), a formulation that shares nothing with dsc's gather and
scatter. Writes GOLD/losses.json and GOLD/grads_step1.safetensors as
dsc.golden does, for compare_gradients.py; with --indices FILE also the
indices (int64 [batch, kept]) as text, one row per line.

Usage: data_efficiency_reference.py --weights W --data D --batch B --seq T
           [--seqlen S] [--kept K --layers 1[,2...]] -o GOLD [--seed S]
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

from dsc import data, safetensors
from dsc.capture import NamedState
from dsc.golden import load_weights
from dsc.philox import DEFAULT_SEED, random_ltd_indices

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(SRC, "examples", "models"))
import gpt2  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--weights", required=True)
p.add_argument("--data", required=True)
p.add_argument("--batch", type=int, required=True)
p.add_argument("--seq", type=int, required=True)
p.add_argument("--seqlen", type=int, default=0)
p.add_argument("--kept", type=int, default=0)
p.add_argument("--layers", default="")
p.add_argument("--seed", type=int, default=DEFAULT_SEED)
p.add_argument("--indices")
p.add_argument("-o", "--output", required=True)
args = p.parse_args()
torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)

model, _ = gpt2.build("tiny", batch=args.batch, seq=args.seq)
state = load_weights(model, args.weights)
tokens, targets = (torch.from_numpy(a) for a in
                   data.batch(data.load(args.data), 0, args.batch, args.seq))
length = args.seqlen or args.seq
tokens, targets = tokens[:, :length].contiguous(), targets[:, :length].contiguous()
indices = random_ltd_indices(args.batch, length, args.kept or length, args.seed, step=1,
                             first_sample=0)
kept = torch.zeros(args.batch, length, dtype=torch.bool)
kept[torch.arange(args.batch)[:, None], indices] = True
# [B, 1, T, T]: a kept query sees the kept keys up to itself; a dropped
# query's row is only causal (its output is discarded).
causal = torch.tril(torch.ones(length, length, dtype=torch.bool))
pair = kept[:, None, :, None] & kept[:, None, None, :]
visible = causal & (pair | ~kept[:, None, :, None])


def masked_attention(attn, x):
    B, T, C = x.size()
    q, k, v = attn.c_attn(x).split(C, dim=2)
    q, k, v = (t.view(B, T, attn.n_head, C // attn.n_head).transpose(1, 2) for t in (q, k, v))
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    att = F.softmax(att.masked_fill(~visible, float("-inf")), dim=-1)
    y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
    return attn.c_proj(y)


def dropping_block(block):
    def forward(x):
        h = x + masked_attention(block.attn, block.ln_1(x))
        h = h + block.mlp(block.ln_2(h))
        return torch.where(kept[:, :, None], h, x)
    return forward


for layer in (int(i) for i in args.layers.split(",") if args.kept and i):
    model.transformer.h[layer].forward = dropping_block(model.transformer.h[layer])
loss = model(tokens, targets)
loss.backward()
os.makedirs(args.output, exist_ok=True)
grads = {name: t.grad.detach().numpy() for name, t in state.tensors.items()
         if t.grad is not None}
safetensors.save(grads, os.path.join(args.output, "grads_step1.safetensors"))
with open(os.path.join(args.output, "losses.json"), "w") as f:
    json.dump({"losses": [float(loss)]}, f)
if args.indices:
    with open(args.indices, "w") as f:
        for row in indices.tolist():
            f.write(" ".join(str(i) for i in row) + "\n")
print(f"loss {float(loss):.9g}")
