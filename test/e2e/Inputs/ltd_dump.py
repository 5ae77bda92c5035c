"""Reads dsc-run --dump-ltd-indices files (a line `STEP SAMPLE I0 I1 ...`
per sample of each step's global batch) for the random-LTD references."""
import torch


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
