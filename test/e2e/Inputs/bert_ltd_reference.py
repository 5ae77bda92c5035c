#!/usr/bin/env python3
"""The first step of the zoo's BERT (bert.py) with random-LTD on the blocks
of --layers, as a masked dense PyTorch model: each such block runs on every
token with its attention restricted to the kept ones (a kept query sees
every kept key, in both directions: an encoder), and its outputs are kept
only at the kept positions; the dropped ones pass the block's input
through. The kept positions are step 1's lines of the dsc-run
--dump-ltd-indices file (`STEP SAMPLE I0 I1 ...`); the script says whether
they are dsc.philox's. Writes GOLD/losses.json and
GOLD/grads_step1.safetensors as dsc.golden does, for compare_gradients.py.

Usage: bert_ltd_reference.py --weights W --data D --batch B --seq T
           --kept K --layers 1[,2...] --indices-from DUMP -o GOLD [--seed S]
"""
import argparse
import math
import os
import sys

import torch
import torch.nn.functional as F

from dsc import data
from dsc.golden import load_weights
from dsc.philox import DEFAULT_SEED, random_ltd_indices

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(SRC, "examples", "models"))
import bert  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ltd_dump import kept_positions, write_gold  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--weights", required=True)
p.add_argument("--data", required=True)
p.add_argument("--batch", type=int, required=True)
p.add_argument("--seq", type=int, required=True)
p.add_argument("--kept", type=int, required=True)
p.add_argument("--layers", required=True)
p.add_argument("--indices-from", required=True, help="dsc-run --dump-ltd-indices output")
p.add_argument("--seed", type=int, default=DEFAULT_SEED)
p.add_argument("-o", "--output", required=True)
args = p.parse_args()
torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)

model, _ = bert.build("tiny", batch=args.batch, seq=args.seq)
state = load_weights(model, args.weights)
tokens, targets = (torch.from_numpy(a) for a in
                   data.batch(data.load(args.data), 0, args.batch, args.seq))

drawn = random_ltd_indices(args.batch, args.seq, args.kept, args.seed, step=1,
                           first_sample=0)
indices = kept_positions(args.indices_from, 1, args.batch, drawn)
kept = torch.zeros(args.batch, args.seq, dtype=torch.bool)
kept[torch.arange(args.batch)[:, None], indices] = True
# [B, 1, T, T]: a kept query sees the kept keys; a dropped query's row sees
# every key (its output is discarded).
visible = (kept[:, None, :, None] & kept[:, None, None, :]) | ~kept[:, None, :, None]


def masked_self_attention(attn, x):
    B, T, C = x.shape
    split = lambda y: y.view(B, T, attn.heads, C // attn.heads).permute(0, 2, 1, 3)
    q, k, v = split(attn.query(x)), split(attn.key(x)), split(attn.value(x))
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(C // attn.heads)
    probs = F.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)
    return torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(B, T, C)


def dropping_layer(layer):
    def forward(x):
        attn = layer.attention
        h = attn.output.LayerNorm(x + attn.output.dense(masked_self_attention(attn.self, x)))
        h = layer.output.LayerNorm(h + layer.output.dense(F.gelu(layer.intermediate.dense(h))))
        return torch.where(kept[:, :, None], h, x)
    return forward


for i in (int(i) for i in args.layers.split(",") if i):
    layer = model.bert.encoder.layer[i]
    layer.forward = dropping_layer(layer)
loss = model(tokens, targets)
loss.backward()
write_gold(args.output, state, loss)
print(f"loss {float(loss):.9g}")
