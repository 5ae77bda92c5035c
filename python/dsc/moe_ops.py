"""The dsc dialect's mixture-of-experts routing ops as PyTorch operators.

    torch.ops.dsc.moe_slots(experts, priority, num_experts, capacity) -> (slots, counts)
    torch.ops.dsc.moe_dispatch(input, slots, weights, num_experts, capacity) -> [E, C, M]
    torch.ops.dsc.moe_combine(input, slots, weights) -> [S, M]
    torch.ops.dsc.moe_route_dot(tokens, slotted, slots) -> [S, k]

Importing this module defines them (torch.library, namespace `dsc`). Each
computes exactly what its dsc op does (include/dsc/Dialect/DSC/IR/DSCOps.td,
"Mixture of experts"): a route (token s, choice j) kept by its expert has
the slot `expert * capacity + location`, a dropped one -1; dispatch copies
tokens into slots, combine sums slots back into tokens, route_dot is the
routing weights' gradient. They are operators rather than Python functions
so that make_fx records one `dsc.moe_*` node each, which the exporter maps
to the dsc op of the same name; dsc.nn.MoE is written with them.

Eager PyTorch differentiates them (an autograd.Function at the Autograd
key; dispatch and combine are each other's adjoints, the weights' gradient
is route_dot); the CPU/CUDA kernels are plain tensor code, deterministic
(sorts and gathers, no atomic scatter), and Meta kernels give the shapes.
num_experts and capacity are arguments where the result's shape needs them.
"""

import torch

_LIB = torch.library.Library("dsc", "DEF")
_LIB.define("moe_slots(Tensor experts, Tensor? priority, int num_experts, int capacity)"
            " -> (Tensor, Tensor)")
_LIB.define("moe_dispatch(Tensor input, Tensor slots, Tensor? weights, int num_experts,"
            " int capacity) -> Tensor")
_LIB.define("moe_combine(Tensor input, Tensor slots, Tensor? weights) -> Tensor")
_LIB.define("moe_route_dot(Tensor tokens, Tensor slotted, Tensor slots) -> Tensor")


def _accumulator(dtype):
    """16-bit values are summed in float32 and rounded once."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _check_routes(op, slots, weights=None, dtype=None):
    if slots.dim() != 2 or slots.dtype != torch.int64:
        raise RuntimeError(f"dsc.{op}: slots must be a [tokens, k] int64 tensor, got "
                           f"{list(slots.shape)} {slots.dtype}")
    if weights is not None and (tuple(weights.shape) != tuple(slots.shape) or
                                weights.dtype != dtype):
        raise RuntimeError(f"dsc.{op}: weights must be {list(slots.shape)} {dtype} like "
                           f"the slots and the tokens, got {list(weights.shape)} "
                           f"{weights.dtype}")


def _check_slot_range(op, slots, num_slots):
    if slots.numel() and int(slots.max()) >= num_slots:
        raise RuntimeError(f"dsc.{op}: slot {int(slots.max())} is outside the "
                           f"{num_slots} expert slots")


def _group_starts(sorted_keys, groups):
    """Where each key 0..groups-1 starts in ascending `sorted_keys`, and
    the end: [groups + 1]."""
    keys = torch.arange(groups + 1, device=sorted_keys.device, dtype=sorted_keys.dtype)
    return torch.searchsorted(sorted_keys, keys)


def _number_within_groups(keys, groups):
    """For each entry of `keys` (values in [0, groups)), how many entries
    before it have the same key: a stable sort groups them in order."""
    sorted_keys, order = torch.sort(keys, stable=True)
    starts = _group_starts(sorted_keys, groups)
    rank = torch.arange(keys.numel(), device=keys.device) - starts[sorted_keys]
    return rank[torch.argsort(order)], starts


# -- kernels -------------------------------------------------------------------

def _moe_slots(experts, priority, num_experts, capacity):
    if experts.dim() != 2 or experts.dtype != torch.int64:
        raise RuntimeError(f"dsc.moe_slots: experts must be a [tokens, k] int64 tensor, "
                           f"got {list(experts.shape)} {experts.dtype}")
    if num_experts < 1 or capacity < 1:
        raise RuntimeError(f"dsc.moe_slots: num_experts ({num_experts}) and capacity "
                           f"({capacity}) must be at least 1")
    if experts.numel() and (int(experts.min()) < 0 or int(experts.max()) >= num_experts):
        bad = experts[(experts < 0) | (experts >= num_experts)][0]
        raise RuntimeError(f"dsc.moe_slots: expert {int(bad)} is out of range "
                           f"[0, {num_experts})")
    tokens, k = experts.shape
    if priority is None:
        # Routes in (choice, token) order: every first choice queues before
        # any second choice of the same expert.
        flat = experts.t().reshape(-1)
        location, starts = _number_within_groups(flat, num_experts)
        slots = torch.where(location < capacity, flat * capacity + location,
                            torch.full_like(flat, -1))
        slots = slots.reshape(k, tokens).t().contiguous()
    else:
        if tuple(priority.shape) != tuple(experts.shape) or not priority.is_floating_point():
            raise RuntimeError(f"dsc.moe_slots: priority must be a floating-point tensor "
                               f"shaped like experts {list(experts.shape)}, got "
                               f"{list(priority.shape)} {priority.dtype}")
        # Routes in (token, choice) order. Rank each expert's routes by
        # priority, highest first, ties to the earlier route (two stable
        # sorts: by priority, then by expert).
        flat = experts.reshape(-1)
        by_priority = torch.sort(-priority.reshape(-1), stable=True).indices
        by_expert = torch.sort(flat[by_priority], stable=True).indices
        order = by_priority[by_expert]
        starts = _group_starts(flat[order], num_experts)
        rank = torch.empty_like(flat)
        rank[order] = torch.arange(flat.numel(), device=flat.device) - starts[flat[order]]
        kept = rank < capacity
        # The kept routes numbered in (token, choice) order; the dropped
        # ones collect in a group of their own.
        group = torch.where(kept, flat, torch.full_like(flat, num_experts))
        location, _ = _number_within_groups(group, num_experts + 1)
        slots = torch.where(kept, flat * capacity + location, torch.full_like(flat, -1))
        slots = slots.reshape(tokens, k)
    counts = starts[1:] - starts[:-1]
    return slots, counts


def _moe_dispatch(x, slots, weights, num_experts, capacity):
    _check_routes("moe_dispatch", slots, weights, x.dtype)
    if x.dim() != 2 or x.shape[0] != slots.shape[0]:
        raise RuntimeError(f"dsc.moe_dispatch: input must be [tokens, width] with the "
                           f"slots' {slots.shape[0]} tokens, got {list(x.shape)}")
    _check_slot_range("moe_dispatch", slots, num_experts * capacity)
    tokens, width = x.shape
    kept = slots >= 0
    rows = x.unsqueeze(1).expand(tokens, slots.shape[1], width)[kept]
    if weights is not None:
        rows = rows * weights[kept].unsqueeze(1)
    out = x.new_zeros(num_experts * capacity, width)
    out.index_copy_(0, slots[kept], rows)
    return out.reshape(num_experts, capacity, width)


def _slot_rows(op, slotted, slots):
    """slotted[slot] for every route ([S, k, M]; rows of dropped routes are
    row 0, to be masked)."""
    if slotted.dim() != 3:
        raise RuntimeError(f"dsc.{op}: the slotted tensor must be [experts, capacity, "
                           f"width], got {list(slotted.shape)}")
    e, c, width = slotted.shape
    _check_slot_range(op, slots, e * c)
    flat = slotted.reshape(e * c, width)
    return flat[slots.clamp(min=0)]


def _moe_combine(slotted, slots, weights):
    _check_routes("moe_combine", slots, weights, slotted.dtype)
    rows = _slot_rows("moe_combine", slotted, slots)
    acc = _accumulator(slotted.dtype)
    tokens, k = slots.shape
    out = torch.zeros(tokens, slotted.shape[2], dtype=acc, device=slotted.device)
    zero = out.new_zeros(())
    for j in range(k):
        term = rows[:, j].to(acc)
        if weights is not None:
            term = term * weights[:, j:j + 1].to(acc)
        out = out + torch.where(slots[:, j:j + 1] >= 0, term, zero)
    return out.to(slotted.dtype)


def _moe_route_dot(tokens, slotted, slots):
    _check_routes("moe_route_dot", slots)
    if tokens.dim() != 2 or tokens.shape[0] != slots.shape[0] or \
            tokens.dtype != slotted.dtype:
        raise RuntimeError(f"dsc.moe_route_dot: tokens must be [tokens, width] "
                           f"{slotted.dtype} with the slots' {slots.shape[0]} tokens, "
                           f"got {list(tokens.shape)} {tokens.dtype}")
    rows = _slot_rows("moe_route_dot", slotted, slots)
    acc = _accumulator(tokens.dtype)
    dots = (tokens.unsqueeze(1).to(acc) * rows.to(acc)).sum(-1)
    return torch.where(slots >= 0, dots, dots.new_zeros(())).to(tokens.dtype)


# -- shapes (Meta) ---------------------------------------------------------------

def _moe_slots_meta(experts, priority, num_experts, capacity):
    return torch.empty_like(experts), experts.new_empty(num_experts)


def _moe_dispatch_meta(x, slots, weights, num_experts, capacity):
    return x.new_empty(num_experts, capacity, x.shape[1])


def _moe_combine_meta(slotted, slots, weights):
    return slotted.new_empty(slots.shape[0], slotted.shape[2])


def _moe_route_dot_meta(tokens, slotted, slots):
    return tokens.new_empty(slots.shape)


# -- gradients -------------------------------------------------------------------

def _below_autograd(op, *args):
    guard = torch._C._AutoDispatchBelowAutograd()
    try:
        return op(*args)
    finally:
        del guard


class _Slots(torch.autograd.Function):
    @staticmethod
    def forward(ctx, experts, priority, num_experts, capacity):
        slots, counts = _below_autograd(torch.ops.dsc.moe_slots.default, experts,
                                        priority, num_experts, capacity)
        ctx.mark_non_differentiable(slots, counts)
        return slots, counts

    @staticmethod
    def backward(ctx, *grads):
        return None, None, None, None


class _Dispatch(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, slots, weights, num_experts, capacity):
        ctx.save_for_backward(x, slots, weights)
        return _below_autograd(torch.ops.dsc.moe_dispatch.default, x, slots, weights,
                               num_experts, capacity)

    @staticmethod
    def backward(ctx, grad):
        x, slots, weights = ctx.saved_tensors
        dx = dweights = None
        if ctx.needs_input_grad[0]:
            dx = torch.ops.dsc.moe_combine(grad, slots, weights)
        if weights is not None and ctx.needs_input_grad[2]:
            dweights = torch.ops.dsc.moe_route_dot(x, grad, slots)
        return dx, None, dweights, None, None


class _Combine(torch.autograd.Function):
    @staticmethod
    def forward(ctx, slotted, slots, weights):
        ctx.save_for_backward(slotted, slots, weights)
        return _below_autograd(torch.ops.dsc.moe_combine.default, slotted, slots, weights)

    @staticmethod
    def backward(ctx, grad):
        slotted, slots, weights = ctx.saved_tensors
        dslotted = dweights = None
        if ctx.needs_input_grad[0]:
            e, c, _ = slotted.shape
            dslotted = torch.ops.dsc.moe_dispatch(grad, slots, weights, e, c)
        if weights is not None and ctx.needs_input_grad[2]:
            dweights = torch.ops.dsc.moe_route_dot(grad, slotted, slots)
        return dslotted, None, dweights


class _RouteDot(torch.autograd.Function):
    """Linear in both operands: d tokens[s] = sum_j g[s, j] * slotted[slot],
    d slotted[slot] = g[s, j] * tokens[s]."""

    @staticmethod
    def forward(ctx, tokens, slotted, slots):
        ctx.save_for_backward(tokens, slotted, slots)
        return _below_autograd(torch.ops.dsc.moe_route_dot.default, tokens, slotted, slots)

    @staticmethod
    def backward(ctx, grad):
        tokens, slotted, slots = ctx.saved_tensors
        dtokens = dslotted = None
        if ctx.needs_input_grad[0]:
            dtokens = torch.ops.dsc.moe_combine(slotted, slots, grad)
        if ctx.needs_input_grad[1]:
            e, c, _ = slotted.shape
            dslotted = torch.ops.dsc.moe_dispatch(tokens, slots, grad, e, c)
        return dtokens, dslotted, None


for _name, _kernel, _meta, _function in (
        ("moe_slots", _moe_slots, _moe_slots_meta, _Slots),
        ("moe_dispatch", _moe_dispatch, _moe_dispatch_meta, _Dispatch),
        ("moe_combine", _moe_combine, _moe_combine_meta, _Combine),
        ("moe_route_dot", _moe_route_dot, _moe_route_dot_meta, _RouteDot)):
    _LIB.impl(_name, _kernel, "CompositeExplicitAutograd")
    _LIB.impl(_name, _meta, "Meta")
    _LIB.impl(_name, _function.apply, "Autograd")

# -- gating noise, as exported ----------------------------------------------------
#
# dsc.nn.MoE's random gating while the exporter traces it (dsc.philox.Exporting):
# one node each, which the exporter maps to what --dsc-moe builds.
# random_uniform_like(like, low, high, site): dsc.random_uniform of like's
# shape at `site` (the step's key and the micro-batch come from the graph);
# when_training(noisy, plain): `noisy` where the step trains, `plain` where it
# evaluates (dsc.select on the step key's training flag). Traced only, never
# differentiated (the exporter traces without autograd); their eager kernels
# give a value of the right shape: torch's U(low, high), and `noisy`.

_LIB.define("random_uniform_like(Tensor like, float low, float high, int site) -> Tensor")
_LIB.define("when_training(Tensor noisy, Tensor plain) -> Tensor")


def _random_uniform_like(like, low, high, site):
    return torch.rand(like.shape, device=like.device) * (high - low) + low


def _random_uniform_like_meta(like, low, high, site):
    return like.new_empty(like.shape, dtype=torch.float32)


def _when_training(noisy, plain):
    return noisy.clone()


def _when_training_meta(noisy, plain):
    return noisy.new_empty(noisy.shape)


for _name, _kernel, _meta in (
        ("random_uniform_like", _random_uniform_like, _random_uniform_like_meta),
        ("when_training", _when_training, _when_training_meta)):
    _LIB.impl(_name, _kernel, "CompositeExplicitAutograd")
    _LIB.impl(_name, _meta, "Meta")

# The kernels by op name, for dsc.reference (the same semantics, evaluated
# without the dispatcher).
KERNELS = {"moe_slots": _moe_slots, "moe_dispatch": _moe_dispatch,
           "moe_combine": _moe_combine, "moe_route_dot": _moe_route_dot}
