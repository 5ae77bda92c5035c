"""Spelling of MLIR types and attributes for the exporter.

The exporter prints dsc ops in MLIR's generic form, the most stable syntax
(there are no MLIR Python bindings in Debian, so the exporter writes
text); `dsc-opt model.mlir` prints the custom form.
"""

import math
import struct

import numpy as np
import torch

_ELEMENT = {
    torch.float64: "f64", torch.float32: "f32", torch.float16: "f16",
    torch.bfloat16: "bf16", torch.int64: "i64", torch.int32: "i32",
    torch.bool: "i1",
}

# Mirrors include/dsc/Dialect/DSC/IR/DSCEnums.td: I32EnumAttr cases are
# integers in the generic form. The export lit tests print the custom form
# and catch any drift.
STATE_ROLE = {"parameter": 0, "buffer": 1}
GELU = {"erf": 0, "tanh": 1}
COMPARE = {"eq": 0, "ne": 1, "lt": 2, "le": 3, "gt": 4, "ge": 5}
REDUCTION = {"mean": 0, "sum": 1, "none": 2}


class UnsupportedDtype(ValueError):
    pass


def element_type(dtype):
    try:
        return _ELEMENT[dtype]
    except KeyError:
        raise UnsupportedDtype(f"dtype {dtype} has no dsc element type "
                               f"(supported: {', '.join(map(str, _ELEMENT))})")


def tensor_type(shape, dtype):
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{element_type(dtype)}>"


def float_literal(v):
    """A float MLIR parses back exactly (a '.' is required; repr is the
    shortest round-tripping decimal of the double)."""
    v = float(v)
    s = repr(v)
    if "e" in s and "." not in s:
        s = s.replace("e", ".0e")
    elif "." not in s and "e" not in s:
        s += ".0"
    return s


def f64_attr(v):
    v = float(v)
    if not math.isfinite(v):
        return "0x%016X : f64" % struct.unpack("<Q", struct.pack("<d", v))[0]
    return f"{float_literal(v)} : f64"


def i64_attr(v):
    return f"{int(v)} : i64"


def i64_array(values):
    return "array<i64" + "".join(
        (": " if i == 0 else ", ") + str(int(v)) for i, v in enumerate(values)) + ">"


def _element_literal(v, dtype):
    if dtype == torch.bool:
        return "true" if bool(v) else "false"
    if dtype.is_floating_point:
        return float_literal(v)
    return str(int(v))


def dense_attr(t):
    """`dense<...> : tensor<...>` for a constant tensor. Splats and small
    finite tensors print as literals; others as the exact hex form (raw
    little-endian bytes)."""
    t = t.detach().cpu().contiguous()
    ty = tensor_type(tuple(t.shape), t.dtype)
    flat = t.reshape(-1)
    n = flat.numel()
    finite = not t.dtype.is_floating_point or bool(torch.isfinite(t).all())
    if n > 0 and finite and bool((flat == flat[0]).all()):
        return f"dense<{_element_literal(flat[0].item(), t.dtype)}> : {ty}"
    if finite and (n <= 64 or t.dtype == torch.bool):
        def nest(a):
            if a.dim() == 0:
                return _element_literal(a.item(), t.dtype)
            return "[" + ", ".join(nest(x) for x in a) + "]"
        return f"dense<{nest(t)}> : {ty}"
    if t.dtype == torch.bfloat16:
        raw = t.view(torch.int16).numpy().astype("<i2").tobytes()
    else:
        a = t.numpy()
        raw = a.astype(a.dtype.newbyteorder("<")).tobytes()
    return f'dense<"0x{raw.hex().upper()}"> : {ty}'


def format_attr(kind, value):
    """Typed exporter attributes -> MLIR attribute syntax."""
    if kind == "i64":
        return i64_attr(value)
    if kind == "f64":
        return f64_attr(value)
    if kind == "enum":
        return f"{int(value)} : i32"
    if kind == "i64array":
        return i64_array(value)
    if kind == "i32array":
        return "array<i32" + "".join((": " if i == 0 else ", ") + str(int(v))
                                      for i, v in enumerate(value)) + ">"
    if kind == "dense":
        return dense_attr(value)
    if kind == "symbol":
        return f'@"{value}"'
    raise ValueError(f"unknown attribute kind {kind}")


def format_op(op):
    """`%r = "dsc.name"(%a, %b) {attrs} : (types) -> types`, generic form."""
    attrs = ""
    if op.attrs:
        attrs = " {" + ", ".join(
            k if kind == "unit" else f"{k} = {format_attr(kind, v)}"
            for k, (kind, v) in sorted(op.attrs.items())) + "}"
    lhs = ", ".join(v.name for v in op.results)
    args = ", ".join(o.name for o in op.operands)
    in_types = ", ".join(o.type for o in op.operands)
    out_types = ", ".join(v.type for v in op.results)
    if len(op.results) > 1:
        out_types = f"({out_types})"
    return f'    {lhs} = "dsc.{op.name}"({args}){attrs} : ({in_types}) -> {out_types}'
