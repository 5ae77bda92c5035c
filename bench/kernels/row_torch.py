"""PyTorch eager on the shapes of bench-row-kernels (bench/kernels/row_bench.cpp):
the reference for the row kernels and the fused classifier of the kernel
library, medians of N runs after one warm-up, per thread count.

    /usr/bin/python3 bench/kernels/row_torch.py [repetitions=7] [tokens=512]
"""

import sys
import time

import torch
import torch.nn.functional as F


def median_seconds(f, reps):
    f()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]


def main():
    reps = max(5, int(sys.argv[1]) if len(sys.argv) > 1 else 7)
    tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 512
    torch.manual_seed(0)
    x = torch.randn(tokens, 768)
    dy = torch.randn(tokens, 768)
    w, b = torch.randn(768), torch.randn(768)
    scores = torch.randn(tokens * 12, 128)
    logits = torch.randn(tokens, 50257)
    targets = torch.randint(0, 50257, (tokens,))
    y = torch.softmax(x, -1)

    def layer_norm_backward():
        xr = x.clone().requires_grad_()
        wr, br = w.clone().requires_grad_(), b.clone().requires_grad_()
        F.layer_norm(xr, (768,), wr, br).backward(dy)

    def classifier():
        lr = logits.clone().requires_grad_()
        F.cross_entropy(lr, targets).backward()

    cases = [
        ("softmax f32", lambda: torch.softmax(x, -1)),
        ("log_softmax f32", lambda: torch.log_softmax(x, -1)),
        ("softmax backward f32", lambda: torch._softmax_backward_data(dy, y, -1, torch.float32)),
        ("layer_norm f32", lambda: F.layer_norm(x, (768,), w, b)),
        ("layer_norm fwd+bwd f32", layer_norm_backward),
        ("softmax f32 (attention)", lambda: torch.softmax(scores, -1)),
        ("cross_entropy f32 (none)",
         lambda: F.cross_entropy(logits, targets, reduction="none")),
        ("cross_entropy fwd+bwd f32 (+clone)", classifier),
    ]
    for threads in (1, 2):
        torch.set_num_threads(threads)
        print(f"torch {torch.__version__}, {threads} threads, median of {reps}")
        for name, f in cases:
            print(f"  {name:36s} {median_seconds(f, reps) * 1e3:9.3f} ms")


if __name__ == "__main__":
    main()
