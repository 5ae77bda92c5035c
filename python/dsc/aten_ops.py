"""ATen op -> dsc op mappings, one handler per schema (`aten::name.overload`).

A handler receives the Lowering, the fx node and the node's arguments, and
returns the emitted Val (or a list of Vals for ops with several results).
"""

import math

import torch

from .lower import ExportError, Val, handles, schema_name
from . import mlir
from .capture import SHAPE_ONLY_OPS


def _dim(d, rank):
    d = int(d)
    return d + rank if d < 0 else d


def _dims(ds, rank):
    return sorted({_dim(d, rank) for d in ds})


# -- identities ------------------------------------------------------------

@handles("aten::clone", "aten::detach", "aten::alias", "aten::lift_fresh_copy",
         "aten::contiguous", "aten::lift_fresh")
def _identity(low, node, x, *args, **kwargs):
    return low.emit(x)


# -- elementwise -----------------------------------------------------------

def _binary(name, low, node, a, b, alpha=1):
    shape, dtype = low.out_meta(node)
    lhs = low.operand(a, dtype)
    rhs = low.operand(b, dtype)
    if alpha != 1:
        rhs = _binary_vals(low, "mul", rhs, low.scalar(alpha, dtype))
    return _binary_vals(low, name, lhs, rhs, shape)


def _binary_vals(low, name, lhs, rhs, shape=None):
    if shape is None:
        shape = tuple(torch.broadcast_shapes(lhs.shape, rhs.shape))
    return low.op(name, [lhs, rhs], shape, lhs.dtype)


for _aten, _dsc in (("sub", "sub"), ("mul", "mul"), ("div", "div")):
    handles(f"aten::{_aten}.Tensor", f"aten::{_aten}.Scalar")(
        lambda low, node, a, b, alpha=1, _n=_dsc: _binary(_n, low, node, a, b, alpha))


def _additive_causal_mask(low, node, mask):
    """The fill value when `mask` is a constant that is 0 on causal positions
    and one value (-inf, -1e4, ...) on future ones, else None."""
    if not (isinstance(mask, torch.fx.Node) and low.foldable[mask]):
        return None
    m = low.value(mask)
    if not m.dtype.is_floating_point or m.dim() < 2:
        return None
    keep = m == 0
    if not _causal_fill(low, node, keep):
        return None
    future = m[~torch.broadcast_to(keep, m.shape)]
    if future.numel() == 0 or not bool((future == future[0]).all()):
        return None
    return float(future[0])


@handles("aten::add.Tensor", "aten::add.Scalar")
def _add(low, node, a, b, alpha=1):
    # scores + mask, with mask 0 / -inf in causal / future positions, is a
    # causal mask (Llama builds it with full + triu).
    for x, m in ((a, b), (b, a)):
        fill = _additive_causal_mask(low, node, m) if alpha == 1 else None
        if fill is not None and isinstance(x, torch.fx.Node) and \
                tuple(low.value(x).shape) == low.out_meta(node)[0]:
            return _causal_mask(low, node, x, fill)
    return _binary("add", low, node, a, b, alpha)


@handles("aten::div.Tensor_mode")
def _div_mode(low, node, a, b, rounding_mode=None):
    if rounding_mode is not None:
        raise low.error(node, f"aten::div with rounding_mode='{rounding_mode}' "
                              "has no dsc mapping")
    return _binary("div", low, node, a, b)


@handles("aten::rsub.Scalar", "aten::rsub.Tensor")
def _rsub(low, node, a, b, alpha=1):
    # rsub(a, b, alpha) = b - alpha * a
    shape, dtype = low.out_meta(node)
    x = low.operand(a, dtype)
    if alpha != 1:
        x = _binary_vals(low, "mul", x, low.scalar(alpha, dtype))
    return _binary_vals(low, "sub", low.operand(b, dtype), x, shape)


@handles("aten::pow.Tensor_Scalar", "aten::pow.Tensor_Tensor", "aten::pow.Scalar")
def _pow(low, node, a, b):
    shape, dtype = low.out_meta(node)
    if not dtype.is_floating_point:
        raise low.error(node, "integer aten::pow has no dsc mapping")
    return _binary_vals(low, "pow", low.operand(a, dtype), low.operand(b, dtype), shape)


for _aten in ("maximum", "minimum"):
    handles(f"aten::{_aten}")(
        lambda low, node, a, b, _n=_aten: _binary(_n, low, node, a, b))


@handles("aten::clamp_min", "aten::clamp_max")
def _clamp_one(low, node, x, bound):
    shape, dtype = low.out_meta(node)
    name = "maximum" if schema_name(node) == "aten::clamp_min" else "minimum"
    return _binary_vals(low, name, low.operand(x, dtype), low.operand(bound, dtype), shape)


@handles("aten::clamp")
def _clamp(low, node, x, lo=None, hi=None):
    shape, dtype = low.out_meta(node)
    v = low.operand(x, dtype)
    if lo is not None:
        v = _binary_vals(low, "maximum", v, low.operand(lo, dtype), shape)
    if hi is not None:
        v = _binary_vals(low, "minimum", v, low.operand(hi, dtype), shape)
    return v


def _unary(name, low, node, x):
    shape, dtype = low.out_meta(node)
    return low.op(name, [low.operand(x, dtype)], shape, dtype)


for _aten in ("neg", "relu", "silu", "sigmoid", "tanh", "exp", "cos", "sin",
              "log", "sqrt", "rsqrt"):
    handles(f"aten::{_aten}")(
        lambda low, node, x, _n=_aten: _unary(_n, low, node, x))


@handles("aten::reciprocal")
def _reciprocal(low, node, x):
    shape, dtype = low.out_meta(node)
    return _binary_vals(low, "div", low.scalar(1.0, dtype), low.operand(x, dtype), shape)


@handles("aten::gelu")
def _gelu(low, node, x, approximate="none"):
    shape, dtype = low.out_meta(node)
    form = {"none": "erf", "tanh": "tanh"}[approximate]
    return low.op("gelu", [low.operand(x, dtype)], shape, dtype,
                  {"approximation": ("enum", mlir.GELU[form])})


@handles("aten::_to_copy")
def _to_copy(low, node, x, dtype=None, **kwargs):
    shape, out_dtype = low.out_meta(node)
    return low.convert(low.emit(x), out_dtype)


@handles("aten::type_as")
def _type_as(low, node, x, other):
    shape, dtype = low.out_meta(node)
    return low.convert(low.emit(x), dtype)


# -- comparisons and selection -----------------------------------------------

_COMPARE = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}


def _compare(direction, low, node, a, b):
    shape, _ = low.out_meta(node)
    va = low.value(a) if isinstance(a, torch.fx.Node) else a
    vb = low.value(b) if isinstance(b, torch.fx.Node) else b
    common = torch.result_type(va, vb)
    return low.op("compare", [low.operand(a, common), low.operand(b, common)],
                  shape, torch.bool,
                  {"direction": ("enum", mlir.COMPARE[direction])})


for _d in _COMPARE:
    handles(f"aten::{_d}.Tensor", f"aten::{_d}.Scalar")(
        lambda low, node, a, b, _d=_d: _compare(_d, low, node, a, b))


def _causal_fill(low, node, keep_mask):
    """True when `keep_mask` (a constant) keeps exactly the causal positions
    of `node`'s result ([..., q, k])."""
    shape, _ = low.out_meta(node)
    if len(shape) < 2:
        return False
    q, k = shape[-2], shape[-1]
    causal = torch.ones(q, k, dtype=torch.bool).tril(diagonal=k - q)
    try:
        if torch.broadcast_shapes(keep_mask.shape, shape) != torch.Size(shape):
            return False
        # The mask's own positions suffice: broadcasting it to all of
        # `shape` ([batch, heads, q, k]) only repeats them.
        keep = torch.broadcast_to(keep_mask,
                                  torch.broadcast_shapes(keep_mask.shape, (q, k)))
    except RuntimeError:
        return False
    return bool((keep == causal).all())


def _causal_mask(low, node, scores, fill):
    """dsc.causal_mask of `scores` with `fill` (-inf, the default, is left
    implicit)."""
    shape, dtype = low.out_meta(node)
    attrs = {} if fill == float("-inf") else {"fill_value": ("f64", fill)}
    return low.op("causal_mask", [low.operand(scores, dtype)], shape, dtype, attrs)


@handles("aten::masked_fill.Scalar", "aten::masked_fill.Tensor")
def _masked_fill(low, node, x, mask, value):
    shape, dtype = low.out_meta(node)
    if isinstance(value, torch.fx.Node) and low.foldable[value]:
        value = low.value(value).item()
    if (isinstance(mask, torch.fx.Node) and low.foldable[mask] and
            isinstance(value, (int, float)) and
            _causal_fill(low, node, ~low.value(mask))):
        return _causal_mask(low, node, x, value)
    return low.op("select", [low.operand(mask, torch.bool),
                             low.operand(value, dtype), low.operand(x, dtype)],
                  shape, dtype)


@handles("aten::where.self", "aten::where.ScalarOther", "aten::where.ScalarSelf",
         "aten::where.Scalar")
def _where(low, node, cond, a, b):
    shape, dtype = low.out_meta(node)
    if (isinstance(cond, torch.fx.Node) and low.foldable[cond] and
            isinstance(b, (int, float)) and isinstance(a, torch.fx.Node) and
            _causal_fill(low, node, low.value(cond))):
        return _causal_mask(low, node, a, b)
    return low.op("select", [low.operand(cond, torch.bool), low.operand(a, dtype),
                             low.operand(b, dtype)], shape, dtype)


# -- linear algebra ----------------------------------------------------------

def _transposed_weight(low, node):
    """W when `node` is aten::t(W) (how F.linear reaches mm/addmm)."""
    if (isinstance(node, torch.fx.Node) and node.op == "call_function" and
            schema_name(node) in ("aten::t", "aten::permute") and
            not low.foldable[node]):
        if schema_name(node) == "aten::permute" and list(node.args[1]) != [1, 0]:
            return None
        return node.args[0]
    return None


_SAME_SHAPE_VIEWS = ("aten::expand", "aten::_reshape_alias", "aten::view",
                     "aten::_unsafe_view", "aten::reshape")


def _batch_transposed(low, node):
    """W when `node` swaps the last two dimensions of a 3-D W (how stacked
    expert weights [E, out, in] reach bmm): dsc.matmul's transpose_rhs."""
    # matmul reaches bmm through an expand and a reshape that keep the shape.
    while (isinstance(node, torch.fx.Node) and node.op == "call_function" and
           schema_name(node) in _SAME_SHAPE_VIEWS and
           tuple(low.value(node).shape) == tuple(low.value(node.args[0]).shape)):
        node = node.args[0]
    if not (isinstance(node, torch.fx.Node) and node.op == "call_function" and
            schema_name(node) == "aten::transpose.int" and not low.foldable[node]):
        return None
    rank = low.value(node).dim()
    if rank != 3 or sorted(_dim(d, rank) for d in node.args[1:3]) != [1, 2]:
        return None
    return node.args[0]


@handles("aten::t")
def _t(low, node, x):
    v = low.emit(x)
    if len(v.shape) < 2:
        return v
    return low.op("transpose", [v], tuple(reversed(v.shape)), v.dtype,
                  {"dim0": ("i64", 0), "dim1": ("i64", 1)})


def _matmul(low, node, a, b, bias=None):
    shape, dtype = low.out_meta(node)
    weight = _transposed_weight(low, b)
    if weight is not None:
        operands = [low.operand(a, dtype), low.operand(weight, dtype)]
        if bias is not None:
            b_val = low.operand(bias, dtype)
            if b_val.shape != (shape[-1],):
                b_val = None
            if b_val is not None:
                return low.op("linear", operands + [b_val], shape, dtype)
            y = low.op("linear", operands, shape, dtype)
            return _binary_vals(low, "add", y, low.operand(bias, dtype), shape)
        return low.op("linear", operands, shape, dtype)
    rhs = _batch_transposed(low, b)
    if rhs is not None:
        y = low.op("matmul", [low.operand(a, dtype), low.operand(rhs, dtype)], shape, dtype,
                   {"transpose_rhs": ("unit", None)})
    else:
        y = low.op("matmul", [low.operand(a, dtype), low.operand(b, dtype)], shape, dtype)
    if bias is not None:
        y = _binary_vals(low, "add", y, low.operand(bias, dtype), shape)
    return y


@handles("aten::mm", "aten::bmm")
def _mm(low, node, a, b):
    return _matmul(low, node, a, b)


@handles("aten::addmm")
def _addmm(low, node, bias, a, b, beta=1, alpha=1):
    if beta != 1 or alpha != 1:
        raise low.error(node, "aten::addmm with beta or alpha != 1 has no dsc mapping")
    return _matmul(low, node, a, b, bias)


@handles("aten::embedding")
def _embedding(low, node, weight, indices, padding_idx=-1, scale_grad=False,
               sparse=False):
    shape, dtype = low.out_meta(node)
    attrs = {}
    if padding_idx is not None and padding_idx >= 0:
        attrs["padding_idx"] = ("i64", padding_idx)
    return low.op("embedding", [low.emit(weight), low.emit(indices)], shape, dtype, attrs)


# -- normalization, attention, losses ---------------------------------------

@handles("aten::native_layer_norm")
def _layer_norm(low, node, x, normalized_shape, weight, bias, eps):
    out = low.value(node)[0]
    operands = [low.emit(x)]
    segments = [1, 0, 0]
    if weight is not None:
        operands.append(low.emit(weight))
        segments[1] = 1
    if bias is not None:
        operands.append(low.emit(bias))
        segments[2] = 1
    attrs = {"epsilon": ("f64", eps),
             "normalized_rank": ("i64", len(normalized_shape)),
             "operandSegmentSizes": ("i32array", segments)}
    y = low.op("layer_norm", operands, tuple(out.shape), out.dtype, attrs)
    # mean and rstd are saved for PyTorch's backward; dsc differentiates itself.
    return [y, None, None]


def _softmax_like(name, low, node, x, dim, half_to_float=False):
    shape, dtype = low.out_meta(node)
    v = low.operand(x, dtype)
    return low.op(name, [v], shape, dtype, {"dim": ("i64", _dim(dim, len(shape)))})


handles("aten::_softmax")(lambda low, node, x, dim, h=False: _softmax_like("softmax", low, node, x, dim))
handles("aten::_log_softmax")(lambda low, node, x, dim, h=False: _softmax_like("log_softmax", low, node, x, dim))


@handles("aten::nll_loss_forward")
def _nll_loss(low, node, logp, target, weight, reduction, ignore_index):
    # F.cross_entropy = nll_loss(log_softmax(logits)): one dsc.cross_entropy.
    if weight is not None:
        raise low.error(node, "class weights in nll_loss have no dsc mapping")
    if not (isinstance(logp, torch.fx.Node) and logp.op == "call_function" and
            schema_name(logp) == "aten::_log_softmax" and
            _dim(logp.args[1], low.value(logp).dim()) == low.value(logp).dim() - 1):
        raise low.error(node, "aten::nll_loss_forward is mapped only on a "
                              "log_softmax over the class (last) dimension")
    logits = low.emit(logp.args[0])
    if logits.dtype != low.value(logp).dtype:
        logits = low.convert(logits, low.value(logp).dtype)
    red = {0: "none", 1: "mean", 2: "sum"}[int(reduction)]
    out = low.value(node)[0]
    y = low.op("cross_entropy", [logits, low.emit(target)], tuple(out.shape), out.dtype,
               {"ignore_index": ("i64", ignore_index),
                "reduction": ("enum", mlir.REDUCTION[red])})
    return [y, None]


@handles("aten::native_dropout")
def _native_dropout(low, node, x, p, train):
    v = low.emit(x)
    if not train or p == 0:
        return [v, None]
    # dsc.dropout draws its mask from the step's key, its site (the model's
    # dropouts numbered in the order the forward calls them) and each
    # element's place in the global batch: the input's leading `samples`
    # blocks are the micro-batch's samples.
    samples = low.micro_batch()
    numel = math.prod(v.shape)
    if numel % samples:
        raise low.error(node, f"dropout of a {list(v.shape)} tensor: its {numel} "
                              f"elements are not {samples} samples (the inputs' "
                              "leading dimension) of equal size")
    y = low.op("dropout", [v, low.step_key()], v.shape, v.dtype,
               {"p": ("f64", p), "seed": ("i64", low.dropout_site(node)),
                "samples": ("i64", samples)})
    return [y, None]


@handles("aten::dropout")
def _dropout(low, node, x, p, train):
    return _native_dropout(low, node, x, p, train)[0]


# -- shapes ------------------------------------------------------------------

@handles("aten::view", "aten::_unsafe_view", "aten::_reshape_alias", "aten::reshape",
         "aten::unsqueeze", "aten::squeeze", "aten::squeeze.dim", "aten::flatten.using_ints",
         "aten::view.default", "aten::unflatten.int")
def _reshape(low, node, x, *args, **kwargs):
    shape, dtype = low.out_meta(node)
    return low.reshape(low.emit(x), shape)


@handles("aten::expand")
def _expand(low, node, x, sizes, implicit=False):
    shape, dtype = low.out_meta(node)
    v = low.emit(x)
    if v.shape == shape:
        return v
    return low.op("broadcast", [v], shape, v.dtype)


@handles("aten::transpose.int")
def _transpose(low, node, x, d0, d1):
    shape, dtype = low.out_meta(node)
    v = low.emit(x)
    d0, d1 = _dim(d0, len(shape)), _dim(d1, len(shape))
    if d0 == d1:
        return v
    return low.op("transpose", [v], shape, dtype,
                  {"dim0": ("i64", d0), "dim1": ("i64", d1)})


@handles("aten::permute")
def _permute(low, node, x, dims):
    shape, dtype = low.out_meta(node)
    perm = [_dim(d, len(shape)) for d in dims]
    v = low.emit(x)
    if perm == list(range(len(perm))):
        return v
    return low.op("permute", [v], shape, dtype, {"permutation": ("i64array", perm)})


def _slice(low, v, dim, start, end, step=1):
    size = v.shape[dim]
    start = max(0, min(size, start + size if start < 0 else start))
    end = max(start, min(size, end + size if end < 0 else end))
    if start == 0 and end == size and step == 1:
        return v
    shape = list(v.shape)
    shape[dim] = -(-(end - start) // step)
    return low.op("slice", [v], tuple(shape), v.dtype,
                  {"dim": ("i64", dim), "start": ("i64", start),
                   "end": ("i64", end), "step": ("i64", step)})


@handles("aten::slice.Tensor")
def _slice_tensor(low, node, x, dim=0, start=None, end=None, step=1):
    v = low.emit(x)
    dim = _dim(dim, len(v.shape))
    size = v.shape[dim]
    start = 0 if start is None else min(int(start), size) if start >= 0 else int(start)
    end = size if end is None or end > size else int(end)
    return _slice(low, v, dim, start, end, int(step))


@handles("aten::select.int")
def _select(low, node, x, dim, index):
    shape, dtype = low.out_meta(node)
    v = low.emit(x)
    dim = _dim(dim, len(v.shape))
    index = _dim(index, v.shape[dim])
    return low.reshape(_slice(low, v, dim, index, index + 1), shape)


@handles("aten::split.Tensor", "aten::split_with_sizes")
def _split(low, node, x, sizes, dim=0):
    v = low.emit(x)
    dim = _dim(dim, len(v.shape))
    outs = low.value(node)
    parts, start = [], 0
    for t in outs:
        n = t.shape[dim]
        parts.append(_slice(low, v, dim, start, start + n))
        start += n
    return parts


@handles("aten::cat")
def _cat(low, node, tensors, dim=0):
    shape, dtype = low.out_meta(node)
    vals = [low.operand(t, dtype) for t in tensors if low.value(t).numel() > 0 or len(tensors) == 1]
    if len(vals) == 1:
        return vals[0]
    return low.op("concat", vals, shape, dtype, {"dim": ("i64", _dim(dim, len(shape)))})


# -- reductions and routing --------------------------------------------------

def _reduce(name, low, node, x, dims, keepdim, dtype=None):
    shape, out_dtype = low.out_meta(node)
    v = low.operand(x, out_dtype)
    rank = len(v.shape)
    dims = list(range(rank)) if dims is None or len(dims) == 0 else _dims(dims, rank)
    if rank == 0:
        return v
    attrs = {"dims": ("i64array", dims)}
    if keepdim:
        attrs["keep_dims"] = ("unit", None)
    return low.op(name, [v], shape, out_dtype, attrs)


handles("aten::sum.dim_IntList")(lambda low, node, x, dims, keepdim=False, dtype=None: _reduce("reduce_sum", low, node, x, dims, keepdim))
handles("aten::sum")(lambda low, node, x, dtype=None: _reduce("reduce_sum", low, node, x, None, False))
handles("aten::mean.dim")(lambda low, node, x, dims, keepdim=False, dtype=None: _reduce("reduce_mean", low, node, x, dims, keepdim))
handles("aten::mean")(lambda low, node, x, dtype=None: _reduce("reduce_mean", low, node, x, None, False))
handles("aten::amax")(lambda low, node, x, dims=(), keepdim=False: _reduce("reduce_max", low, node, x, dims, keepdim))


@handles("aten::topk")
def _topk(low, node, x, k, dim=-1, largest=True, is_sorted=True):
    if not largest:
        raise low.error(node, "aten::topk with largest=False has no dsc mapping")
    values, indices = low.value(node)
    v = low.emit(x)
    dim = _dim(dim, len(v.shape))
    return low.op("top_k", [v], None, None,
                  {"k": ("i64", k), "dim": ("i64", dim)},
                  results=[(tuple(values.shape), values.dtype),
                           (tuple(indices.shape), indices.dtype)])


def _max_along(low, node, x, dim, keepdim):
    v = low.emit(x)
    dim = _dim(dim, len(v.shape))
    kshape = list(v.shape)
    kshape[dim] = 1
    vals, idx = low.op("top_k", [v], None, None,
                       {"k": ("i64", 1), "dim": ("i64", dim)},
                       results=[(tuple(kshape), v.dtype), (tuple(kshape), torch.int64)])
    if not keepdim:
        kshape.pop(dim)
        vals, idx = low.reshape(vals, kshape), low.reshape(idx, kshape)
    return vals, idx


@handles("aten::max.dim")
def _max_dim(low, node, x, dim, keepdim=False):
    return list(_max_along(low, node, x, dim, keepdim))


@handles("aten::argmax")
def _argmax(low, node, x, dim=None, keepdim=False):
    if dim is None:
        raise low.error(node, "aten::argmax over all dimensions has no dsc mapping")
    return _max_along(low, node, x, dim, keepdim)[1]


@handles("aten::cumsum")
def _cumsum(low, node, x, dim, dtype=None):
    shape, out_dtype = low.out_meta(node)
    v = low.operand(x, out_dtype)
    return low.op("cumsum", [v], shape, out_dtype, {"dim": ("i64", _dim(dim, len(shape)))})


@handles("aten::gather")
def _gather(low, node, x, dim, index, sparse_grad=False):
    shape, dtype = low.out_meta(node)
    return low.op("gather", [low.emit(x), low.emit(index)], shape, dtype,
                  {"dim": ("i64", _dim(dim, len(shape)))})


@handles("aten::scatter_add")
def _scatter_add(low, node, x, dim, index, src):
    shape, dtype = low.out_meta(node)
    return low.op("scatter_add", [low.operand(x, dtype), low.emit(index),
                                  low.operand(src, dtype)], shape, dtype,
                  {"dim": ("i64", _dim(dim, len(shape)))})


@handles("aten::one_hot")
def _one_hot(low, node, x, num_classes=-1):
    shape, dtype = low.out_meta(node)
    return low.op("one_hot", [low.emit(x)], shape, dtype)


# -- values that depend only on an input's shape ------------------------------

@handles(*SHAPE_ONLY_OPS)
def _shape_only(low, node, *args, **kwargs):
    value = low.value(node)
    if schema_name(node) == "aten::empty_like":
        raise low.error(node, "aten::empty_like has undefined contents")
    return low.constant(value)


@handles("aten::stack")
def _stack(low, node, tensors, dim=0):
    shape, dtype = low.out_meta(node)
    dim = _dim(dim, len(shape))
    parts = []
    for t in tensors:
        v = low.operand(t, dtype)
        s = list(v.shape)
        s.insert(dim, 1)
        parts.append(low.reshape(v, s))
    if len(parts) == 1:
        return parts[0]
    return low.op("concat", parts, shape, dtype, {"dim": ("i64", dim)})


# -- attention ---------------------------------------------------------------

def _attention(low, node, q, k, v, mask, dropout_p, is_causal, scale,
               enable_gqa=False):
    """dsc.attention for torch 2.x's scaled dot-product attention; returns
    [result, logsumexp]. dsc.attention's causal mask is bottom-right aligned
    (key s is hidden from query t when s > t + S - T), PyTorch's is_causal
    top-left: the two agree when T == S, the only case mapped."""
    qv, kv, vv = low.emit(q), low.emit(k), low.emit(v)
    name = schema_name(node)
    if len(qv.shape) != 4 or len(kv.shape) != 4 or len(vv.shape) != 4:
        raise low.error(node, f"{name} needs [batch, heads, tokens, head_dim] "
                              f"operands, got {list(qv.shape)}, {list(kv.shape)} "
                              f"and {list(vv.shape)}")
    if enable_gqa or kv.shape[1] != qv.shape[1]:
        raise low.error(node, f"{name} with grouped-query heads has no dsc mapping")
    if dropout_p:
        raise low.error(node, f"{name} with dropout_p={dropout_p} has no dsc "
                              "mapping (dsc.attention has no dropout)")
    if is_causal and qv.shape[2] != kv.shape[2]:
        raise low.error(node, f"{name} with is_causal and {qv.shape[2]} queries "
                              f"over {kv.shape[2]} keys has no dsc mapping "
                              "(PyTorch aligns that mask top-left)")
    if scale is None:
        scale = 1.0 / math.sqrt(qv.shape[3])
    operands = [qv, kv, vv]
    if mask is not None:
        m = low.emit(mask) if isinstance(mask, torch.fx.Node) else None
        if m is None:
            raise low.error(node, f"{name} needs its mask as a tensor")
        if m.dtype != torch.bool:
            m = low.convert(m, qv.dtype)
        operands.append(m)
    attrs = {"scale": ("f64", float(scale))}
    if is_causal:
        attrs["causal"] = ("unit", None)
    b, h, t, _ = qv.shape
    return low.op("attention", operands, None, None, attrs,
                  results=[((b, h, t, vv.shape[3]), qv.dtype),
                           ((b, h, t), torch.float32)])


@handles("aten::scaled_dot_product_attention")
def _sdpa(low, node, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False,
          scale=None, enable_gqa=False):
    return _attention(low, node, q, k, v, attn_mask, dropout_p, is_causal,
                      scale, enable_gqa)[0]


# What torch.export leaves of it: (output, logsumexp, ...) tuples.
@handles("aten::_scaled_dot_product_flash_attention_for_cpu")
def _sdpa_flash_cpu(low, node, q, k, v, dropout_p=0.0, is_causal=False,
                    attn_mask=None, scale=None):
    return _attention(low, node, q, k, v, attn_mask, dropout_p, is_causal, scale)


@handles("aten::_scaled_dot_product_flash_attention")
def _sdpa_flash(low, node, q, k, v, dropout_p=0.0, is_causal=False,
                return_debug_mask=False, scale=None):
    return _attention(low, node, q, k, v, None, dropout_p, is_causal, scale) + \
        [None] * 7


@handles("aten::_scaled_dot_product_efficient_attention")
def _sdpa_efficient(low, node, q, k, v, attn_bias, compute_log_sumexp,
                    dropout_p=0.0, is_causal=False, scale=None):
    return _attention(low, node, q, k, v, attn_bias, dropout_p, is_causal,
                      scale) + [None] * 2


# -- mixture of experts: dsc.nn.MoE's operators (dsc.moe_ops) -----------------

@handles("dsc::moe_slots")
def _moe_slots(low, node, experts, priority, num_experts, capacity):
    slots, counts = low.value(node)
    operands = [low.emit(experts)]
    if priority is not None:
        operands.append(low.operand(priority, torch.float32))
    return low.op("moe_slots", operands, None, None, {"capacity": ("i64", capacity)},
                  results=[(tuple(slots.shape), torch.int64),
                           (tuple(counts.shape), torch.int64)])


def _routed(name, low, node, x, slots, weights):
    shape, dtype = low.out_meta(node)
    operands = [low.operand(x, dtype), low.emit(slots)]
    if weights is not None:
        operands.append(low.operand(weights, dtype))
    return low.op(name, operands, shape, dtype)


@handles("dsc::moe_dispatch")
def _moe_dispatch(low, node, x, slots, weights, num_experts, capacity):
    return _routed("moe_dispatch", low, node, x, slots, weights)


@handles("dsc::moe_combine")
def _moe_combine(low, node, slotted, slots, weights):
    return _routed("moe_combine", low, node, slotted, slots, weights)


@handles("dsc::moe_route_dot")
def _moe_route_dot(low, node, tokens, slotted, slots):
    shape, dtype = low.out_meta(node)
    return low.op("moe_route_dot", [low.operand(tokens, dtype), low.operand(slotted, dtype),
                                    low.emit(slots)], shape, dtype)


# dsc.nn.MoE's gating noise (dsc.moe_ops): what --dsc-moe builds for it.

@handles("dsc::random_uniform_like")
def _random_uniform_like(low, node, like, lo, hi, site):
    shape = tuple(low.out_meta(node)[0])
    samples = low.micro_batch()
    if math.prod(shape) % samples:
        raise low.error(node, f"random gating draws a {list(shape)} tensor whose "
                              f"elements are not {samples} samples (the inputs' "
                              "leading dimension) of equal size")
    return low.op("random_uniform", [low.step_key()], shape, torch.float32,
                  {"low": ("f64", lo), "high": ("f64", hi), "seed": ("i64", site),
                   "samples": ("i64", samples)})


@handles("dsc::when_training")
def _when_training(low, node, noisy, plain):
    shape, dtype = low.out_meta(node)
    # key[3] != 0: the step trains (dsc-run --eval runs it with 0).
    flag = low.reshape(low.op("slice", [low.step_key()], (1,), torch.int64,
                              {"dim": ("i64", 0), "start": ("i64", 3),
                               "end": ("i64", 4), "step": ("i64", 1)}), ())
    training = low.op("compare", [flag, low.scalar(0, torch.int64)], (), torch.bool,
                      {"direction": ("enum", mlir.COMPARE["ne"])})
    return low.op("select", [training, low.operand(noisy, dtype), low.operand(plain, dtype)],
                  shape, dtype)
