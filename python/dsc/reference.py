"""Reference semantics of the dsc dialect, in PyTorch.

Evaluates the ops the exporter recorded, one by one, with the meaning each
op's reference documentation gives it. The exporter runs it on the example
inputs and refuses to write a graph whose loss differs from PyTorch's: a
wrong mapping is caught at export time, before any compiler pass runs.
"""

import math

import torch
import torch.nn.functional as F

from . import moe_ops

_DTYPE = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16,
          "bf16": torch.bfloat16, "i64": torch.int64, "i32": torch.int32,
          "i1": torch.bool}


def _attr(op, name, default=None):
    entry = op.attrs.get(name)
    return default if entry is None else entry[1]


def _causal(x, fill):
    q, k = x.shape[-2], x.shape[-1]
    future = torch.ones(q, k, dtype=torch.bool).triu(diagonal=k - q + 1)
    return x.masked_fill(future, fill)


def _div(a, b):
    if a.dtype.is_floating_point:
        return a / b
    return torch.div(a, b, rounding_mode="trunc")


_BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": _div,
           "pow": torch.pow, "maximum": torch.maximum, "minimum": torch.minimum}
_UNARY = {"neg": torch.neg, "relu": torch.relu, "silu": F.silu,
          "sigmoid": torch.sigmoid, "tanh": torch.tanh, "exp": torch.exp,
          "cos": torch.cos, "sin": torch.sin, "log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt}
_COMPARE = [torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge]


def evaluate_op(op, args, state):
    n = op.name
    r = op.results
    if n == "load":
        return [state[_attr(op, "state")]]
    if n == "constant":
        return [_attr(op, "value")]
    if n in _BINARY:
        return [_BINARY[n](*args).to(r[0].dtype)]
    if n in _UNARY:
        return [_UNARY[n](args[0])]
    if n == "gelu":
        return [F.gelu(args[0], approximate="tanh" if _attr(op, "approximation") == 1 else "none")]
    if n == "gelu_grad":
        x = args[0].detach().requires_grad_(True)
        form = "tanh" if _attr(op, "approximation") == 1 else "none"
        return [torch.autograd.grad(F.gelu(x, approximate=form).sum(), x)[0]]
    if n == "convert":
        return [args[0].to(r[0].dtype)]
    if n == "compare":
        return [_COMPARE[_attr(op, "direction")](args[0], args[1])]
    if n == "select":
        return [torch.where(args[0], args[1], args[2])]
    if n == "matmul":
        a, b = args
        if "transpose_lhs" in op.attrs:
            a = a.transpose(-1, -2)
        if "transpose_rhs" in op.attrs:
            b = b.transpose(-1, -2)
        return [torch.matmul(a, b)]
    if n == "linear":
        return [F.linear(*args)]
    if n == "embedding":
        return [F.embedding(args[1], args[0])]
    if n == "layer_norm":
        seg = _attr(op, "operandSegmentSizes", [1, 0, 0])
        rest = list(args[1:])
        weight = rest.pop(0) if seg[1] else None
        bias = rest.pop(0) if seg[2] else None
        k = _attr(op, "normalized_rank", 1)
        return [F.layer_norm(args[0], args[0].shape[-k:], weight, bias,
                             _attr(op, "epsilon", 1e-5))]
    if n == "softmax":
        return [torch.softmax(args[0], _attr(op, "dim"))]
    if n == "log_softmax":
        return [torch.log_softmax(args[0], _attr(op, "dim"))]
    if n == "causal_mask":
        return [_causal(args[0], _attr(op, "fill_value", float("-inf")))]
    if n in ("reshape", "broadcast"):
        x = args[0]
        return [x.reshape(r[0].shape) if n == "reshape" else x.expand(r[0].shape)]
    if n == "transpose":
        return [args[0].transpose(_attr(op, "dim0"), _attr(op, "dim1"))]
    if n == "permute":
        return [args[0].permute(*_attr(op, "permutation"))]
    if n == "slice":
        d = _attr(op, "dim")
        idx = [slice(None)] * args[0].dim()
        idx[d] = slice(_attr(op, "start"), _attr(op, "end"), _attr(op, "step"))
        return [args[0][tuple(idx)]]
    if n == "concat":
        return [torch.cat(args, _attr(op, "dim"))]
    if n == "gather":
        return [torch.gather(args[0], _attr(op, "dim"), args[1])]
    if n == "scatter_add":
        return [args[0].scatter_add(_attr(op, "dim"), args[1], args[2])]
    if n == "top_k":
        # Descending, ties by lower index: a stable sort of the negation.
        x, d, k = args[0], _attr(op, "dim"), _attr(op, "k")
        order = torch.sort(-x if x.dtype != torch.bool else ~x, dim=d, stable=True).indices
        idx = order.narrow(d, 0, k)
        return [torch.gather(x, d, idx), idx]
    if n == "cumsum":
        return [torch.cumsum(args[0], _attr(op, "dim")).to(r[0].dtype)]
    if n == "one_hot":
        c = r[0].shape[-1]
        return [(args[0].unsqueeze(-1) == torch.arange(c)).to(r[0].dtype)]
    if n in ("reduce_sum", "reduce_mean", "reduce_max"):
        dims, keep = _attr(op, "dims"), "keep_dims" in op.attrs
        x = args[0]
        if n == "reduce_sum":
            return [x.sum(dim=dims, keepdim=keep).to(r[0].dtype)]
        if n == "reduce_mean":
            return [x.mean(dim=dims, keepdim=keep)]
        return [x.amax(dim=dims, keepdim=keep)]
    if n.startswith("moe_"):
        return _moe(op, args)
    if n == "dropout":
        raise NotImplementedError("dsc.dropout draws its mask from the step's key "
                                  "(dsc.philox), which PyTorch's trace did not use")
    if n == "cross_entropy":
        logits, targets = args
        red = ["mean", "sum", "none"][_attr(op, "reduction", 0)]
        c = logits.shape[-1]
        out = F.cross_entropy(logits.reshape(-1, c), targets.reshape(-1),
                              ignore_index=_attr(op, "ignore_index", -100),
                              reduction=red)
        return [out.reshape(targets.shape) if red == "none" else out]
    raise NotImplementedError(f"no reference semantics for dsc.{n}")


def _moe(op, args):
    """The routing ops, by the kernels of the PyTorch operators that share
    their definition (dsc.moe_ops)."""
    kernel = moe_ops.KERNELS[op.name]
    optional = args[2] if len(args) > 2 else None
    if op.name == "moe_slots":
        priority = args[1] if len(args) > 1 else None
        return list(kernel(args[0], priority, op.results[1].shape[0], _attr(op, "capacity")))
    if op.name == "moe_dispatch":
        e, c, _ = op.results[0].shape
        return [kernel(args[0], args[1], optional, e, c)]
    if op.name == "moe_combine":
        return [kernel(args[0], args[1], optional)]
    return [kernel(*args)]


def evaluate(ops, inputs, state):
    """Values of every recorded op; `inputs` maps input Val names, `state`
    maps state names, to tensors."""
    env = dict(inputs)
    with torch.no_grad():
        for op in ops:
            args = [env[o.name] for o in op.operands]
            outs = evaluate_op(op, args, state)
            for val, out in zip(op.results, outs):
                if tuple(out.shape) != val.shape or out.dtype != val.dtype:
                    raise AssertionError(
                        f"dsc.{op.name} computed {tuple(out.shape)} {out.dtype}, "
                        f"its type says {val.shape} {val.dtype}")
                env[val.name] = out
    return env
