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
scatter. With --moe "k=K capacity_factor=C ..." the model is the zoo
GPT-2 as dsc-opt's --moe-experts rewrite makes it (gpt2_moe_rewrite.py,
with those settings); its random-LTD blocks then run on the kept tokens
alone (gathered in PyTorch, the block's own causal attention over them,
the outputs put back at their positions): an expert layer routes and
counts capacity over the tokens it is given, so the masked formulation,
whose block sees every token, is not the model; the reference then also
writes GOLD/outputs_step1.safetensors with the rewrite's metrics (each
layer's routes per expert, the routes dropped, the balance term).
With --indices-from FILE the kept positions are instead step 1's lines
of FILE (dsc-run --dump-ltd-indices: `STEP SAMPLE I0 I1 ...`), and the
script says whether they are dsc.philox's.
Writes GOLD/losses.json and GOLD/grads_step1.safetensors as
dsc.golden does, for compare_gradients.py; with --indices FILE also the
indices (int64 [batch, kept]) as text, one row per line.

Usage: data_efficiency_reference.py --weights W --data D --batch B --seq T
           [--seqlen S] [--kept K --layers 1[,2...]] [--moe SETTINGS]
           [--indices-from DUMP]
           -o GOLD [--seed S]
"""
import argparse
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
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ltd_dump import kept_positions, write_gold  # noqa: E402

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
p.add_argument("--indices-from", help="dsc-run --dump-ltd-indices output")
p.add_argument("--moe", help="settings of gpt2_moe_rewrite.build, as 'k=1 capacity_factor=0.5'")
p.add_argument("-o", "--output", required=True)
args = p.parse_args()
torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)

if args.moe is None:
    model, _ = gpt2.build("tiny", batch=args.batch, seq=args.seq)
else:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gpt2_moe_rewrite  # noqa: E402
    settings = {}
    for item in args.moe.split():
        key, value = item.split("=", 1)
        settings[key] = float(value) if "." in value else int(value)
    model, _ = gpt2_moe_rewrite.build("tiny", batch=args.batch, seq=args.seq, **settings)
state = load_weights(model, args.weights)
tokens, targets = (torch.from_numpy(a) for a in
                   data.batch(data.load(args.data), 0, args.batch, args.seq))
length = args.seqlen or args.seq
tokens, targets = tokens[:, :length].contiguous(), targets[:, :length].contiguous()
indices = random_ltd_indices(args.batch, length, args.kept or length, args.seed, step=1,
                             first_sample=0)
if args.indices_from:
    indices = kept_positions(args.indices_from, 1, args.batch, indices)
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


def gathering_block(block):
    forward = block.forward
    where = indices[:, :, None].expand(-1, -1, model.transformer.wte.weight.shape[1])

    def run(x):
        return x.scatter(1, where, forward(x.gather(1, where)))
    return run


for layer in (int(i) for i in args.layers.split(",") if args.kept and i):
    block = model.transformer.h[layer]
    block.forward = (dropping_block if args.moe is None else gathering_block)(block)
loss = model(tokens, targets)
loss.backward()
write_gold(args.output, state, loss)
if args.moe is not None:
    metrics, dropped, aux = {}, 0, 0.0
    for i, block in enumerate(model.transformer.h):
        moe = block.mlp
        counts = moe.exp_counts.detach().numpy().astype(np.int64)
        capacity = moe.capacity(int(counts.sum()) // moe.k)
        dropped += int(np.maximum(counts - capacity, 0).sum())
        aux += float(moe.l_aux)
        metrics[f"moe.exp_counts.transformer.h.{i}.mlp"] = counts
    metrics["moe.dropped"] = np.array(dropped, dtype=np.float32)
    metrics["aux_loss"] = np.array(model.aux_loss_coef * aux, dtype=np.float32)
    safetensors.save(metrics, os.path.join(args.output, "outputs_step1.safetensors"))
if args.indices:
    with open(args.indices, "w") as f:
        for row in indices.tolist():
            f.write(" ".join(str(i) for i in row) + "\n")
print(f"loss {float(loss):.9g}")
