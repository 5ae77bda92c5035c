#!/usr/bin/env python3
"""PyTorch's first-step loss and gradients as N data-parallel ranks see them
when the loss is not a plain mean cross-entropy (a mixture-of-experts loss
routes each micro-batch on its own): the mean over ranks of the model's
loss, and of its gradients, on each rank's micro-batch. Writes OUT/losses.json
and OUT/grads_step1.safetensors, as dsc.golden does.

Usage: rank_mean_gradients.py MODEL.py WEIGHTS DATA BATCH SEQ RANKS OUT [key=value ...]
"""
import json
import os
import sys

import torch

from dsc import data, safetensors
from dsc.export import build_model, parse_overrides
from dsc.golden import load_weights

model_file, weights, data_file, batch, seq, ranks, out = sys.argv[1:8]
batch, seq, ranks = int(batch), int(seq), int(ranks)
torch.set_num_threads(1)
model, _ = build_model(model_file, parse_overrides(sys.argv[8:]))
state = load_weights(model, weights)
model.train()
tokens = data.load(data_file)
params = {n: t for n, t in state.tensors.items() if state.role[n] == "parameter"}
loss, grads = 0.0, {}
for r in range(ranks):
    for t in params.values():
        t.grad = None
    x, y = data.batch(tokens, 0, batch, seq, rank=r, world=ranks)
    rank_loss = model(torch.from_numpy(x), torch.from_numpy(y))
    rank_loss.backward()
    loss += float(rank_loss.detach()) / ranks
    for n, t in params.items():
        if t.grad is not None:
            grads[n] = grads.get(n, 0) + t.grad.detach() / ranks
os.makedirs(out, exist_ok=True)
json.dump({"losses": [loss]}, open(os.path.join(out, "losses.json"), "w"))
safetensors.save(grads, os.path.join(out, "grads_step1.safetensors"))
