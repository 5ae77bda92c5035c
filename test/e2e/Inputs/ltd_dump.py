"""For the random-LTD references: reads dsc-run --dump-ltd-indices files
(a line `STEP SAMPLE I0 I1 ...` per sample of each step's global batch)
and writes the GOLD files."""
import json
import os

import torch

from dsc import safetensors


def kept_positions(path, step, samples, drawn):
    """The kept positions of `samples` samples at `step`, int64
    [samples, kept]; prints whether they are `drawn` (dsc.philox's)."""
    rows = {}
    with open(path) as f:
        for line in f:
            at, sample, *row = (int(v) for v in line.split())
            if at == step:
                rows[sample] = row
    dumped = torch.tensor([rows[j] for j in range(samples)], dtype=torch.int64)
    same = dumped.shape == drawn.shape and torch.equal(dumped, drawn)
    print("dumped indices " + ("equal" if same else "DIFFER from") + " dsc.philox's")
    return dumped


def write_gold(directory, state, loss):
    """GOLD/losses.json and GOLD/grads_step1.safetensors as dsc.golden
    writes them (for compare_gradients.py), after loss.backward()."""
    os.makedirs(directory, exist_ok=True)
    grads = {name: t.grad.detach().numpy() for name, t in state.tensors.items()
             if t.grad is not None}
    safetensors.save(grads, os.path.join(directory, "grads_step1.safetensors"))
    with open(os.path.join(directory, "losses.json"), "w") as f:
        json.dump({"losses": [float(loss)]}, f)
