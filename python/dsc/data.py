"""Training data, in the two formats dsc-run reads, and the batch layout
every dsc component follows.

Token files are nanoGPT's flat little-endian uint16 `.bin` format (here with
a byte-level tokenizer); they feed models whose inputs are `tokens` and
`targets` (the next tokens). A samples file (`.safetensors`) feeds any
model: one tensor per graph input, named after it, samples first.

    PYTHONPATH=python /usr/bin/python3 -m dsc.data -o data/licenses.bin

builds a corpus from the license texts every Debian machine has in
/usr/share/common-licenses (sorted, so the file is the same everywhere the
texts are);

    PYTHONPATH=python /usr/bin/python3 -m dsc.data -o data/licenses.safetensors \
        --from-tokens data/licenses.bin --seq 128 [--names input_ids,labels]

cuts a token file into the samples file of its sequences (input_ids) and
their next tokens (labels), in the token format's order, so that a model
with Hugging Face input names trains on the sequences the token file holds.
"""

import argparse
import os
import sys

import numpy as np

from . import safetensors

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


def sample_rows(step, batch_size, count, rank=0, world=1):
    """The sample indices of rank `rank`'s rows of step `step` (0-based):
    sample j of the step is (step*B + j) % count, and rank r takes j in
    [r*B/N, (r+1)*B/N). The layout of every format, as dsc-run's
    BatchShare."""
    if batch_size % world:
        raise ValueError(f"batch {batch_size} does not divide among {world} ranks")
    per_rank = batch_size // world
    return [(step * batch_size + j) % count
            for j in range(rank * per_rank, (rank + 1) * per_rank)]


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
    rows_x, rows_y = [], []
    for sequence in sample_rows(step, batch_size, nseq, rank, world):
        start = sequence * seq_len
        rows_x.append(data[start:start + seq_len])
        rows_y.append(data[start + 1:start + seq_len + 1])
    return (np.stack(rows_x).astype(np.int64), np.stack(rows_y).astype(np.int64))


def is_samples_file(path):
    """Whether dsc-run reads `path` as samples (a .safetensors file) rather
    than tokens."""
    return str(path).endswith(".safetensors")


def check_samples(tensors, where="samples"):
    """The number of samples in {name: array}, each with the samples first;
    ValueError unless there is at least one tensor, none is 0-d, and all
    hold the same n > 0."""
    if not tensors:
        raise ValueError(f"{where}: no tensors")
    counts = {}
    for name, array in sorted(tensors.items()):
        if len(array.shape) == 0:
            raise ValueError(f"{where}: tensor '{name}' is a scalar; samples go "
                             "along the first dimension")
        counts[name] = array.shape[0]
    n = next(iter(counts.values()))
    for name, count in counts.items():
        if count != n:
            first = next(iter(counts))
            raise ValueError(f"{where}: tensor '{name}' holds {count} samples, "
                             f"but '{first}' holds {n}")
    if n == 0:
        raise ValueError(f"{where}: the tensors hold no samples")
    return n


# safetensors dtype names of the graph's element types (signature.json).
_SAFETENSORS_DTYPE = {"f64": "F64", "f32": "F32", "f16": "F16", "bf16": "BF16",
                      "i64": "I64", "i32": "I32", "i1": "BOOL"}


def check_samples_file(path, inputs):
    """Checks a samples file against a graph's inputs (signature.json's
    "inputs": name, shape with the micro-batch first, dtype), reading its
    header only: one tensor per input, named after it, of its dtype and
    per-sample shape, all with the same number of samples, nothing else.
    Returns the number of samples; ValueError listing every mismatch."""
    header = safetensors.read_header(path)
    problems = []
    for entry in inputs:
        name, want = entry["name"], entry["shape"][1:]
        dtype = _SAFETENSORS_DTYPE.get(entry["dtype"], entry["dtype"])
        info = header.get(name)
        if info is None:
            problems.append(f"no tensor '{name}' for the graph input of that name")
        elif info["dtype"] != dtype:
            problems.append(f"tensor '{name}' is {info['dtype']}, the graph input "
                            f"{dtype}")
        elif list(info["shape"][1:]) != list(want) or not info["shape"]:
            problems.append(f"tensor '{name}' holds samples of shape "
                            f"{list(info['shape'][1:])}, the graph input {list(want)}")
    for name in sorted(set(header) - {e["name"] for e in inputs}):
        problems.append(f"tensor '{name}' is no input of the graph")
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    return check_samples({n: np.empty(i["shape"][:1] + [0])
                          for n, i in header.items()}, path)


def load_samples(path):
    """{name: numpy array} of a samples file, checked (check_samples)."""
    tensors, _ = safetensors.load_numpy(path)
    check_samples(tensors, path)
    return tensors


def save_samples(path, tensors):
    """Writes {name: numpy array or torch tensor}, samples first, as a
    samples file: one tensor per input of the model, named after it."""
    check_samples(tensors, path)
    safetensors.save(tensors, path)


def sample_batch(samples, step, batch_size, rank=0, world=1):
    """{name: rows} of rank `rank` for step `step` (0-based) of a samples
    file's tensors (load_samples), cut alike by sample_rows()."""
    rows = sample_rows(step, batch_size, check_samples(samples), rank, world)
    return {name: np.ascontiguousarray(array[rows]) for name, array in samples.items()}


def token_samples(tokens, seq_len, names=("input_ids", "labels")):
    """The sequences of a token file as samples: {names[0]: [nseq, T] the
    sequences, names[1]: [nseq, T] their next tokens}, int64, in the order
    batch() takes them, so that a samples file of them gives batch()'s
    batches step for step."""
    nseq = (len(tokens) - 1) // seq_len
    if nseq < 1:
        raise ValueError(f"{len(tokens)} tokens hold no sequence of length {seq_len}")
    x = tokens[:nseq * seq_len].reshape(nseq, seq_len)
    y = tokens[1:nseq * seq_len + 1].reshape(nseq, seq_len)
    return {names[0]: x.astype(np.int64), names[1]: y.astype(np.int64)}


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
    p.add_argument("-o", "--output", required=True,
                   help="the .bin to write, or with --from-tokens the .safetensors")
    p.add_argument("--source", default="/usr/share/common-licenses",
                   help="directory of text files (default: %(default)s)")
    p.add_argument("--limit", type=int, default=None,
                   help="keep only the first LIMIT bytes")
    p.add_argument("--from-tokens", metavar="FILE.bin",
                   help="write the samples file of this token file's sequences")
    p.add_argument("--seq", type=int, help="with --from-tokens: the sequence length")
    p.add_argument("--names", default="input_ids,labels",
                   help="with --from-tokens: the two inputs' names, the sequences' "
                        "and their next tokens' (default: %(default)s)")
    args = p.parse_args(argv)
    if args.from_tokens:
        names = args.names.split(",")
        if args.seq is None or args.seq < 1 or len(names) != 2 \
                or not is_samples_file(args.output):
            p.error("--from-tokens needs --seq T > 0, two --names and an output "
                    "ending in .safetensors")
        try:
            samples = token_samples(load(args.from_tokens), args.seq, names)
        except (OSError, ValueError) as e:
            print(f"dsc.data: error: {args.from_tokens}: {e}", file=sys.stderr)
            return 1
        save_samples(args.output, samples)
        n = next(iter(samples.values())).shape[0]
        print(f"wrote {n} samples of {args.seq} tokens ({', '.join(names)}) "
              f"to {args.output}")
        return 0
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
