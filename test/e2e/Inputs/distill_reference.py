#!/usr/bin/env python3
"""Mixture-of-Students in PyTorch, as Megatron-DeepSpeed computes it: the
student trains (SGD) on total = LM loss (+ the MoE balance term the model
adds) + KD, KD = beta * tau^2 * KLDivLoss(reduction='batchmean')(
log_softmax(z_s / tau), softmax(z_t / tau)) / seq over [b, s, V], the
teacher in eval mode without gradients. With RANKS > 1 every term is the
mean over the ranks of each rank's micro-batch (data parallelism). The
logits of both models are taken where dsc takes them: the input of the
model's cross-entropy. With --kd-stop-step S (staged KD) the steps after
S train the student alone: the teacher does not run, the loss is the
student's own and its KD term 0.

Usage: distill_reference.py MODEL.py STUDENT.safetensors TEACHER.safetensors
           DATA STEPS BATCH SEQ RANKS LR BETA TAU OUT.json [--momentum M]
           [--kd-stop-step S] [student key=value ...] -- [teacher key=value ...]

Writes OUT.json: `losses`, `lm_loss`, `kd_loss` and `aux_loss` (the total
minus the LM loss: zero for a dense student), one per step.
"""
import json
import sys

import torch
import torch.nn.functional as F

from dsc import data
from dsc.export import build_model, parse_overrides
from dsc.golden import load_weights

(model_file, student_weights, teacher_weights, data_file, steps, batch, seq,
 ranks, lr, beta, tau, out) = sys.argv[1:13]
steps, batch, seq, ranks = int(steps), int(batch), int(seq), int(ranks)
lr, beta, tau = float(lr), float(beta), float(tau)
rest = sys.argv[13:]
momentum, stop = 0.0, 0
while rest[:1] in (["--momentum"], ["--kd-stop-step"]):
    if rest[0] == "--momentum":
        momentum = float(rest[1])
    else:
        stop = int(rest[1])
    rest = rest[2:]
split = rest.index("--") if "--" in rest else len(rest)
torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)
student, _ = build_model(model_file, parse_overrides(rest[:split]))
teacher, _ = build_model(model_file, parse_overrides(rest[split + 1:]))
load_weights(student, student_weights)
load_weights(teacher, teacher_weights)
student.train()
teacher.eval()
for p in teacher.parameters():
    p.requires_grad_(False)

captured = []
cross_entropy = F.cross_entropy


def capturing_cross_entropy(logits, *args, **kwargs):
    captured.append(logits)
    return cross_entropy(logits, *args, **kwargs)


F.cross_entropy = capturing_cross_entropy


def run(model, x, y):
    """The model's loss, its cross-entropy's value, and its logits [b, s, V]."""
    captured.clear()
    loss = model(x, y)
    (logits,) = captured
    lm = cross_entropy(logits, y.view(-1), ignore_index=-1)
    return loss, lm, logits.view(x.shape[0], x.shape[1], -1)


optimizer = torch.optim.SGD(student.parameters(), lr=lr, momentum=momentum)
tokens = data.load(data_file)
terms = {"losses": [], "lm_loss": [], "kd_loss": [], "aux_loss": []}
for step in range(steps):
    optimizer.zero_grad()
    sums = dict.fromkeys(terms, 0.0)
    for r in range(ranks):
        x, y = (torch.from_numpy(a) for a in
                data.batch(tokens, step, batch, seq, rank=r, world=ranks))
        loss, lm, z_s = run(student, x, y)
        if stop and step + 1 > stop:
            kd = torch.zeros(())
        else:
            with torch.no_grad():
                _, _, z_t = run(teacher, x, y)
            kd = tau * tau * torch.nn.KLDivLoss(reduction="batchmean")(
                F.log_softmax(z_s / tau, dim=2), F.softmax(z_t / tau, dim=2))
            kd = kd.div(seq) * beta
        total = loss + kd
        (total / ranks).backward()
        for key, value in (("losses", total), ("lm_loss", lm), ("kd_loss", kd),
                           ("aux_loss", loss - lm)):
            sums[key] += float(value) / ranks
    optimizer.step()
    for key in terms:
        terms[key].append(sums[key])
json.dump(terms, open(out, "w"))
