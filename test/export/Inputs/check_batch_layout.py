import numpy as np

from dsc import data

tokens = np.arange(100, dtype="<u2")          # token i has id i
T, B = 8, 4
nseq = (len(tokens) - 1) // T                 # 12
for step in range(5):
    x, y = data.batch(tokens, step, B, T)
    for j in range(B):
        start = ((step * B + j) % nseq) * T
        assert (x[j] == np.arange(start, start + T)).all()
        assert (y[j] == x[j] + 1).all()
    assert x.dtype == np.int64 and x.shape == (B, T)
    # Ranks take consecutive slices of the global batch.
    parts = [data.batch(tokens, step, B, T, rank=r, world=2)[0] for r in range(2)]
    assert (np.concatenate(parts) == x).all()
# Step 3 wraps: sequences 12..15 are 0..3 again.
assert data.batch(tokens, 3, B, T)[0][0][0] == 0
try:
    data.batch(tokens, 0, 3, T, world=2)
    raise SystemExit("an indivisible batch must be refused")
except ValueError:
    pass
print("batch layout ok")
