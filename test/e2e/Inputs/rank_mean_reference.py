#!/usr/bin/env python3
"""PyTorch's loss per step as N data-parallel ranks see it when the loss is
not a plain mean cross-entropy (a mixture-of-experts loss with its balance
term): the mean over ranks of the model's loss on each rank's micro-batch.

Usage: rank_mean_reference.py MODEL.py WEIGHTS DATA STEPS BATCH SEQ RANKS OUT.json [key=value ...]
"""
import json
import sys

import torch

from dsc import data
from dsc.export import build_model, parse_overrides
from dsc.golden import load_weights

model_file, weights, data_file, steps, batch, seq, ranks, out = sys.argv[1:9]
steps, batch, seq, ranks = int(steps), int(batch), int(seq), int(ranks)
torch.set_num_threads(1)
model, _ = build_model(model_file, parse_overrides(sys.argv[9:]))
load_weights(model, weights)
model.train()
tokens = data.load(data_file)
losses = []
with torch.no_grad():
    for step in range(steps):
        per_rank = []
        for r in range(ranks):
            x, y = data.batch(tokens, step, batch, seq, rank=r, world=ranks)
            per_rank.append(float(model(torch.from_numpy(x), torch.from_numpy(y))))
        losses.append(sum(per_rank) / ranks)
json.dump(losses, open(out, "w"))
