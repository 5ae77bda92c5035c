"""Compares the `grad_norm=` of dsc-run's step lines with the total norms
torch.nn.utils.clip_grad_norm_ returns in dsc.golden's run of the same job.

    compare_grad_norms.py RUN.txt GOLDEN_ARGS...

GOLDEN_ARGS are dsc.golden's (model, --weights, --data, ..., -o DIR). The
norm is a sum over every gradient element of a model: fp32 rounding in the
order of the sum, rtol 1e-5 (the losses' tolerance).
"""
import math
import re
import sys

import torch

import dsc.golden as golden

RTOL = 1e-5


def main():
    run_path, golden_args = sys.argv[1], sys.argv[2:]
    printed = [float(m.group(1)) for m in
               re.finditer(r"^step=\d+ .* grad_norm=(\S+)", open(run_path).read(), re.M)]
    norms = []
    clip = torch.nn.utils.clip_grad_norm_

    def recording(params, max_norm, *args, **kwargs):
        total = clip(params, max_norm, *args, **kwargs)
        norms.append(float(total))
        return total

    torch.nn.utils.clip_grad_norm_ = recording
    golden.main(golden_args)
    if len(printed) != len(norms) or not norms:
        print(f"MISMATCH: {len(printed)} printed norms, {len(norms)} from PyTorch")
        return 1
    for step, (got, want) in enumerate(zip(printed, norms), 1):
        ok = math.isclose(got, want, rel_tol=RTOL)
        print(f"step {step} grad_norm {got:.9g} torch {want:.9g}: {'ok' if ok else 'MISMATCH'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
