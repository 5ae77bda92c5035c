"""Token data: nanoGPT's flat little-endian uint16 `.bin` format, a byte-level
tokenizer, and the batch layout every dsc component follows.

    PYTHONPATH=python /usr/bin/python3 -m dsc.data -o data/licenses.bin

builds a corpus from the license texts every Debian machine has in
/usr/share/common-licenses (sorted, so the file is the same everywhere the
texts are).
"""

import argparse
import os
import sys

import numpy as np

VOCAB_SIZE = 256  # byte-level: token id = byte value


def encode(text: bytes) -> np.ndarray:
    return np.frombuffer(text, dtype=np.uint8).astype("<u2")


def decode(tokens) -> bytes:
    return bytes(int(t) for t in tokens)


def load(path) -> np.ndarray:
    data = np.fromfile(path, dtype="<u2")
    if data.size < 2:
        raise ValueError(f"{path}: needs at least 2 tokens, has {data.size}")
    return data


def batch(data, step, batch_size, seq_len, rank=0, world=1):
    """(tokens, targets) of rank `rank` for step `step` (0-based), int64
    [batch_size/world, seq_len].

    Sequence j of the step starts at ((step*B + j) % nseq) * T with
    nseq = (ntokens-1) // T; rank r takes j in [r*B/N, (r+1)*B/N).
    """
    if batch_size % world:
        raise ValueError(f"batch {batch_size} does not divide among {world} ranks")
    nseq = (len(data) - 1) // seq_len
    if nseq < 1:
        raise ValueError(f"{len(data)} tokens hold no sequence of length {seq_len}")
    per_rank = batch_size // world
    rows_x, rows_y = [], []
    for j in range(rank * per_rank, (rank + 1) * per_rank):
        start = ((step * batch_size + j) % nseq) * seq_len
        rows_x.append(data[start:start + seq_len])
        rows_y.append(data[start + 1:start + seq_len + 1])
    return (np.stack(rows_x).astype(np.int64), np.stack(rows_y).astype(np.int64))


def build_corpus(source_dir="/usr/share/common-licenses", limit=None) -> bytes:
    parts = []
    for name in sorted(os.listdir(source_dir)):
        path = os.path.join(source_dir, name)
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, "rb") as f:
                parts.append(f.read())
    text = b"\n".join(parts)
    return text[:limit] if limit else text


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m dsc.data", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", required=True, help="the .bin to write")
    p.add_argument("--source", default="/usr/share/common-licenses",
                   help="directory of text files (default: %(default)s)")
    p.add_argument("--limit", type=int, default=None,
                   help="keep only the first LIMIT bytes")
    args = p.parse_args(argv)
    if not os.path.isdir(args.source):
        print(f"dsc.data: error: {args.source} is not a directory", file=sys.stderr)
        return 1
    tokens = encode(build_corpus(args.source, args.limit))
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    tmp = args.output + ".tmp"
    tokens.tofile(tmp)
    os.replace(tmp, args.output)
    print(f"wrote {tokens.size} tokens (vocab {VOCAB_SIZE}) to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
