"""A classifier of feature vectors: float inputs and integer labels, the
shape of most models that are not language models (tabular data, image
embeddings), fed to dsc-run from a samples file.

    build(batch=4, features=8, hidden=16, classes=3, layers=2)

The inputs are (features, labels): float32 [batch, features] and int64
[batch] class indices in [0, classes); the loss is the mean cross-entropy.
dsc-run feeds them from a .safetensors file holding `features` [n, features]
and `labels` [n] (docs/running.md). Run as a script, this file writes such
a file: `samples()`'s synthetic data, one Gaussian cluster per class.

    PYTHONPATH=python /usr/bin/python3 examples/models/classifier.py \\
        -o data/classifier.safetensors [--samples 256] [--ignore I ...] \\
        [--set features=8 ...]
"""

import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self, features=8, hidden=16, classes=3, layers=2):
        super().__init__()
        widths = [features] + [hidden] * (layers - 1)
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:]))
        self.norm = nn.LayerNorm(widths[-1])
        self.head = nn.Linear(widths[-1], classes)

    def forward(self, features, labels):
        x = features
        for layer in self.hidden:
            x = F.gelu(layer(x))
        return F.cross_entropy(self.head(self.norm(x)), labels)


def samples(n, features=8, classes=3, seed=0):
    """{features: float32 [n, features], labels: int64 [n]}: sample i has
    label i % classes and features drawn around its class's center."""
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(classes, features, generator=g) * 2
    labels = torch.arange(n) % classes
    points = centers[labels] + torch.randn(n, features, generator=g)
    return {"features": points, "labels": labels}


def build(batch=4, features=8, hidden=16, classes=3, layers=2):
    model = Classifier(features, hidden, classes, layers)
    example = samples(batch, features, classes, seed=1)
    return model, (example["features"], example["labels"])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", required=True, help="the .safetensors to write")
    p.add_argument("--samples", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ignore", type=int, action="append", default=[], metavar="I",
                   help="give sample I the label -100, which the loss ignores "
                        "(as Hugging Face's padding labels)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="features= and classes=, as for the export")
    args = p.parse_args(argv)
    sizes = {}
    for item in args.set:
        key, _, value = item.partition("=")
        if key not in ("features", "classes") or not value.isdigit():
            p.error(f"--set {item}: expected features=N or classes=N")
        sizes[key] = int(value)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "python"))
    from dsc import data
    tensors = samples(args.samples, seed=args.seed, **sizes)
    tensors["labels"][args.ignore] = -100
    data.save_samples(args.output, tensors)
    print(f"wrote {args.samples} samples to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
