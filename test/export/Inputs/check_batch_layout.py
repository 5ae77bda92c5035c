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

# Samples files share the layout (dsc-run's BatchShare): step 2 of batch 4
# over 2 ranks and 10 samples is samples 8, 9 | 0, 1.
assert data.sample_rows(2, 4, 10, rank=0, world=2) == [8, 9]
assert data.sample_rows(2, 4, 10, rank=1, world=2) == [0, 1]
assert data.sample_rows(2**62, 4, 12) == [4, 5, 6, 7]   # 2^64 % 12 == 4
samples = {"features": np.arange(30, dtype=np.float32).reshape(10, 3),
           "labels": np.arange(10) % 3}
rows = data.sample_batch(samples, 2, 4, rank=1, world=2)
assert (rows["features"] == samples["features"][[0, 1]]).all()
assert (rows["labels"] == [0, 1]).all()
# A token file's sequences as samples give its batches, step for step.
cut = data.token_samples(tokens, T, ("input_ids", "labels"))
assert cut["input_ids"].shape == (nseq, T) and cut["input_ids"].dtype == np.int64
for step in range(7):
    for r in range(2):
        x, y = data.batch(tokens, step, B, T, rank=r, world=2)
        b = data.sample_batch(cut, step, B, rank=r, world=2)
        assert (b["input_ids"] == x).all() and (b["labels"] == y).all()
for bad, message in [({"a": np.zeros((3, 2)), "b": np.zeros(2)}, "holds 2 samples"),
                     ({"a": np.zeros((0, 2))}, "no samples"),
                     ({"a": np.zeros(())}, "is a scalar"),
                     ({}, "no tensors")]:
    try:
        data.check_samples(bad)
        raise SystemExit(f"{message}: not refused")
    except ValueError as e:
        assert message in str(e), e
assert data.is_samples_file("x/train.safetensors") and not data.is_samples_file("d.bin")
print("sample layout ok")
