"""Reads and writes the safetensors format without the safetensors package.

Format (https://huggingface.co/docs/safetensors): an 8-byte little-endian
header length N, N bytes of JSON header mapping each tensor name to
{"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
byte after the header) plus an optional "__metadata__" of strings, then the
raw little-endian row-major data. Hugging Face pads the header with spaces
to a multiple of 8 bytes; so do we.
"""

import json
import os
import struct

import numpy as np

# safetensors dtype names <-> numpy dtypes. BF16 has no numpy dtype: it is
# carried as raw uint16 words.
_TO_NUMPY = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.uint16,
    "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8,
    "U8": np.uint8, "U16": np.uint16, "BOOL": np.bool_,
}
_FROM_NUMPY = {np.dtype(v): k for k, v in _TO_NUMPY.items() if k != "BF16"}


class SafetensorsError(ValueError):
    pass


def _torch_to_numpy(t):
    import torch
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16), "BF16"
    a = t.numpy()
    return a, _FROM_NUMPY[a.dtype]


def save(tensors, path, metadata=None):
    """Writes {name: torch.Tensor or numpy array} to `path` atomically
    (temporary file, fsync, rename), in sorted name order."""
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        value = tensors[name]
        if isinstance(value, np.ndarray):
            array = np.ascontiguousarray(value)
            if array.dtype not in _FROM_NUMPY:
                raise SafetensorsError(f"{name}: unsupported dtype {array.dtype}")
            dtype = _FROM_NUMPY[array.dtype]
        else:
            array, dtype = _torch_to_numpy(value)
        data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _parse_header(path, prefix, size):
    """(header dict, header length) from the first bytes of a file of
    `size` bytes."""
    if len(prefix) < 8:
        raise SafetensorsError(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", prefix[:8])
    if n > size - 8:
        raise SafetensorsError(f"{path}: header length {n} exceeds the file")
    try:
        header = json.loads(prefix[8:8 + n])
    except ValueError as e:
        raise SafetensorsError(f"{path}: header is not JSON: {e}")
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: header is not a JSON object")
    return header, n


def read_header(path):
    """{name: {"dtype", "shape", ...}} of a safetensors file, metadata left
    out, reading the header only."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        prefix = f.read(8)
        if len(prefix) == 8:
            (n,) = struct.unpack("<Q", prefix)
            prefix += f.read(min(n, max(size - 8, 0)))
    header, _ = _parse_header(path, prefix, size)
    header.pop("__metadata__", None)
    return header


def load_numpy(path):
    """Returns ({name: numpy array}, metadata). BF16 tensors come back as
    uint16 arrays; load_torch converts them."""
    with open(path, "rb") as f:
        raw = f.read()
    header, n = _parse_header(path, raw, len(raw))
    metadata = header.pop("__metadata__", {})
    data = memoryview(raw)[8 + n:]
    out = {}
    for name, info in header.items():
        dtype = info["dtype"]
        if dtype not in _TO_NUMPY:
            raise SafetensorsError(f"{path}: {name}: unknown dtype {dtype}")
        begin, end = info["data_offsets"]
        if not 0 <= begin <= end <= len(data):
            raise SafetensorsError(f"{path}: {name}: data outside the file")
        np_dtype = np.dtype(_TO_NUMPY[dtype]).newbyteorder("<")
        count = int(np.prod(info["shape"], dtype=np.int64))
        if count * np_dtype.itemsize != end - begin:
            raise SafetensorsError(f"{path}: {name}: {end - begin} bytes for "
                                   f"shape {info['shape']} of {dtype}")
        out[name] = np.frombuffer(data[begin:end], dtype=np_dtype).reshape(info["shape"])
    return out, metadata


def load_torch(path):
    """Returns {name: torch.Tensor} (copies, writable)."""
    import torch
    arrays, _ = load_numpy(path)
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    out = {}
    for name, array in arrays.items():
        t = torch.from_numpy(array.astype(array.dtype.newbyteorder("="), copy=True))
        if header[name]["dtype"] == "BF16":
            t = t.view(torch.bfloat16)
        out[name] = t
    return out
