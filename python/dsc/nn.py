"""PyTorch modules that export to dsc as what they mean.

    from dsc.nn import MoE
    moe = MoE(hidden_size, expert, num_experts=8, k=2, use_rts=False,
              top2_2nd_expert_sampling=False)
    output, l_aux, exp_counts = moe(hidden_states)

MoE is DeepSpeed's `deepspeed.moe.layer.MoE` (same constructor arguments,
same forward results, DeepSpeed's gating rules) written with the dsc
routing operators (dsc.moe_ops), so that its export is index-based expert
routing (dsc.moe_slots / moe_dispatch / moe_combine) rather than GShard's
[tokens, experts, capacity] one-hot einsums.
"""

import copy
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import moe_ops  # noqa: F401  (defines torch.ops.dsc.moe_*)
from . import philox


class StackedLinear(nn.Module):
    """`num_experts` copies of an nn.Linear, applied to [E, C, in] at once
    (one batched matmul): weight [E, out, in], bias [E, out]."""

    def __init__(self, linear, num_experts):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.num_experts = num_experts

        def stack(p):
            return nn.Parameter(p.detach().unsqueeze(0).repeat(
                num_experts, *([1] * p.dim())).clone(), requires_grad=p.requires_grad)

        self.weight = stack(linear.weight)
        if linear.bias is not None:
            self.bias = stack(linear.bias)
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        if x.dim() != 3 or x.shape[0] != self.num_experts or x.shape[2] != self.in_features:
            raise RuntimeError(
                f"dsc.nn.MoE: a stacked Linear expects [experts={self.num_experts}, "
                f"tokens, {self.in_features}], got {list(x.shape)}: the expert's forward "
                "must keep the leading dimensions")
        y = torch.matmul(x, self.weight.transpose(1, 2))
        if self.bias is not None:
            y = y + self.bias.unsqueeze(1)
        return y

    def extra_repr(self):
        return (f"experts={self.num_experts}, in_features={self.in_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


def stack_experts(expert, num_experts):
    """A copy of `expert` whose every nn.Linear (at relative path L) is a
    StackedLinear of `num_experts` copies (parameters L.weight [E, out, in]
    and L.bias [E, out]), so that one forward over [E, C, M] runs every
    expert. An expert with parameters or buffers outside nn.Linear modules is
    refused: dsc stacks only Linear layers."""
    if isinstance(expert, nn.Linear):
        return StackedLinear(expert, num_experts)
    linear_params = set()
    for module in expert.modules():
        if isinstance(module, nn.Linear):
            linear_params.update(id(p) for p in module.parameters(recurse=False))
    other = [name for name, p in expert.named_parameters() if id(p) not in linear_params]
    buffers = [name for name, _ in expert.named_buffers()]
    if other or buffers:
        what = ", ".join(other + buffers)
        raise ValueError(
            f"dsc.nn.MoE: the expert ({type(expert).__name__}) has parameters or buffers "
            f"outside nn.Linear modules ({what}); dsc stacks the experts' nn.Linear "
            "layers only (an MLP: Linear, activation, Linear; or a gated MLP such as "
            "SwiGLU)")
    if not linear_params:
        raise ValueError(f"dsc.nn.MoE: the expert ({type(expert).__name__}) has no "
                         "nn.Linear layer to stack")
    stacked = copy.deepcopy(expert)
    replaced = {}
    for name, module in list(stacked.named_modules()):
        for child_name, child in list(module.named_children()):
            if isinstance(child, nn.Linear):
                if id(child) not in replaced:
                    replaced[id(child)] = StackedLinear(child, num_experts)
                setattr(module, child_name, replaced[id(child)])
    return stacked


def capacity(tokens, num_experts, k, capacity_factor, min_capacity):
    """DeepSpeed's expert capacity: ceil(tokens / experts * factor) in
    float32 arithmetic (the factor doubled for top-2, times k for k >= 3),
    at least min_capacity. float32 matters: 100 tokens, 4 experts, factor
    1.1, top-2 gives 55 (float64 would give 56)."""
    factor = capacity_factor * 2 if k == 2 else capacity_factor * k if k >= 3 \
        else capacity_factor
    c = math.ceil(float(np.float32(tokens / num_experts) * np.float32(factor)))
    return max(c, int(min_capacity))


# The sites of an MoE layer's draws, 4 * layer + these (as --dsc-moe).
_JITTER, _RSAMPLE, _RTS, _SECOND_EXPERT = range(4)


class MoE(nn.Module):
    """DeepSpeed's mixture-of-experts layer, numerically.

    Arguments are `deepspeed.moe.layer.MoE`'s, with its defaults:

    hidden_size: the input and output width M.
    expert: an nn.Module; the layer holds `num_experts` copies of it, all
        starting from its weights (upcycling a dense MLP is the default).
        They are stored stacked: for each nn.Linear of the expert at relative
        path L, `experts.L.weight` [E, out, in] and `experts.L.bias` [E, out];
        the expert's forward runs once on [E, C, M] with its Linear layers
        batched over the experts. Supported: experts whose parameters all
        belong to nn.Linear modules that forward calls as modules and whose
        other operations keep the leading dimensions (activations, products
        of branches as in SwiGLU, dropout) -- the contract DeepSpeed's
        experts already meet, since they receive [ep, experts, C, M].
        Anything else is a ValueError here or an error naming the expert at
        its first forward.
    num_experts, k: E experts, k choices per token (1 <= k <= E).
    ep_size: expert-parallel ranks; recorded (num_experts must be a
        multiple). DeepSpeed's numbers do not depend on it, nor do these.
    capacity_factor, eval_capacity_factor, min_capacity: the capacity
        (`capacity()` above), the eval factor in eval mode.
    use_residual: Residual MoE (PR-MoE): `mlp` is the given expert module
        itself (dense, not a copy) and `coefficient` an nn.Linear(M, 2);
        output = moe * softmax(coef)[..., 0:1] + mlp * softmax(coef)[..., 1:].
    drop_tokens: False keeps every route. DeepSpeed then sizes the capacity
        as the largest expert load, a value dsc's static shapes cannot
        follow; dsc uses the worst case, S (a token's choices are distinct
        experts, so no expert gets more than S routes, for any k). The
        numbers are DeepSpeed's; only the padding differs.
    use_tutel: accepted; it changes DeepSpeed's kernels, not its numbers
        (dsc's routing is index-based already).
    enable_expert_tensor_parallelism: recorded; parallelism is dsc-compile's.

    Randomness: DeepSpeed's options that draw random numbers, use_rts
    (top-1: an expert keeps its `capacity` routes of highest priority
    mask * U(0, 1)), noisy_gate_policy 'Jitter' (the gate's fp32 input times
    U(0.99, 1.01), any k) and 'RSample' (top-1: the expert is the argmax of
    logits plus Gumbel noise -log(-log(u)); the gate value stays the
    probability), both in training only, and top2_2nd_expert_sampling (top-2:
    the second expert is the argmax of logits plus Gumbel noise, in training
    and eval). Inside a dsc.philox.DscDropout context (dsc.golden) the
    numbers are dsc's, those dsc.random_uniform draws in the --dsc-moe
    rewrite (the n-th MoE layer called is replaced block n; sites 4n + 0..3
    for jitter, rsample, use_rts and the second expert, over [tokens, M] and
    [tokens, E]), so a compiled step and this layer route alike. Exported,
    they are those dsc.random_uniform draws (the training-only ones selected
    by the step's training flag). Outside either they come from torch's
    global generator, as DeepSpeed draws them.
    As in DeepSpeed, use_rts and 'RSample' do nothing for k >= 2 and
    top2_2nd_expert_sampling nothing for k != 2.

    Gating, as DeepSpeed's: logits = x_f32 @ gate.weight^T (fp32, no bias),
    probabilities = softmax. Top-1 takes the argmax, weight p (not
    renormalised). Top-2: first = argmax of the probabilities, second =
    argmax of the logits with the first set to -inf (ties to the lowest
    index); second choices queue behind every first choice of their expert;
    weights renormalised over the kept choices (divided by their sum,
    clamped to float32's eps). k >= 3: the k most probable experts, in
    order; each expert keeps its `capacity` most probable routes (ties to
    the earlier token), slots in token order; weights renormalised likewise.
    Aux loss: E * sum_e me_e * ce_e (me: mean probability, ce: fraction of
    first choices) for k <= 2, computed as DeepSpeed does (sum for top-1,
    mean * E * E for top-2); (E / k) * sum_e me_e * ce_e with ce over all
    choices (mean * E * E / k) for k >= 3. exp_counts: routes per expert
    before dropping, over all choices (int64 [E]).

    forward(hidden_states [..., M]) -> (output [..., M], l_aux, exp_counts).
    """

    def __init__(self, hidden_size, expert, num_experts=1, ep_size=1, k=1,
                 capacity_factor=1.0, eval_capacity_factor=1.0, min_capacity=4,
                 use_residual=False, noisy_gate_policy=None, drop_tokens=True,
                 use_rts=True, use_tutel=False, enable_expert_tensor_parallelism=False,
                 top2_2nd_expert_sampling=True):
        super().__init__()
        if num_experts < 1 or ep_size < 1 or num_experts % ep_size:
            raise ValueError(f"dsc.nn.MoE: num_experts ({num_experts}) must be a positive "
                             f"multiple of ep_size ({ep_size})")
        if not 1 <= k <= num_experts:
            raise ValueError(f"dsc.nn.MoE: k ({k}) must be in [1, num_experts = "
                             f"{num_experts}]")
        if noisy_gate_policy not in (None, "None", "Jitter", "RSample"):
            raise ValueError(f"dsc.nn.MoE: unsupported noisy_gate_policy "
                             f"{noisy_gate_policy!r} (None, 'Jitter' or 'RSample')")
        # DeepSpeed copies the experts before it creates the gate (whose
        # initialization draws from the global generator), and the residual
        # coefficient after: the same order draws the same numbers.
        experts = stack_experts(expert, num_experts)
        self.gate = nn.Linear(hidden_size, num_experts, bias=False).float()
        self.experts = experts
        if use_residual:
            self.mlp = expert
            self.coefficient = nn.Linear(hidden_size, 2)
        self.hidden_size, self.num_experts, self.k = hidden_size, num_experts, k
        self.ep_size, self.num_local_experts = ep_size, num_experts // ep_size
        self.capacity_factor, self.eval_capacity_factor = capacity_factor, eval_capacity_factor
        self.min_capacity, self.use_residual = min_capacity, use_residual
        self.noisy_gate_policy = None if noisy_gate_policy == "None" else noisy_gate_policy
        self.drop_tokens, self.use_rts, self.use_tutel = drop_tokens, use_rts, use_tutel
        self.enable_expert_tensor_parallelism = enable_expert_tensor_parallelism
        self.top2_2nd_expert_sampling = top2_2nd_expert_sampling

    def capacity(self, tokens):
        """Slots per expert for `tokens` tokens in the current mode."""
        if not self.drop_tokens:
            return tokens
        factor = self.capacity_factor if self.training else self.eval_capacity_factor
        return capacity(tokens, self.num_experts, self.k, factor, self.min_capacity)

    def _noise(self, like, low, high, site):
        """U(low, high) of like's shape: dsc's draw at this layer's `site`
        inside a DscDropout context, torch's global generator outside one;
        while exporting, dsc.random_uniform of the step (the exported node
        draws what a DscDropout context draws)."""
        context = philox.active()
        if isinstance(context, philox.Exporting):
            return torch.ops.dsc.random_uniform_like(like, low, high, 4 * self._layer + site)
        if context is None:
            return torch.rand(like.shape) * (high - low) + low
        return context.uniform(tuple(like.shape), low, high, 4 * self._layer + site)

    def _gumbel(self, like, site):
        return -torch.log(-torch.log(self._noise(like, 0.0, 1.0, site)))

    @staticmethod
    def _in_training(noisy, plain):
        """`noisy`, which a training forward computes; exported, the step
        selects it when it trains and `plain` when it evaluates (dsc-run
        --eval), as --dsc-moe's training-only noise does."""
        if isinstance(philox.active(), philox.Exporting):
            return torch.ops.dsc.when_training(noisy, plain)
        return noisy

    def _choose(self, logits, probs):
        """[S, k] experts, as DeepSpeed picks them: first the argmax of the
        probabilities (with RSample in training, of logits plus Gumbel
        noise); top-2's second the argmax of the logits (plus Gumbel noise
        with second-expert sampling) with the first masked, k >= 3's next
        ones the argmax of the probabilities with the earlier ones masked
        (its top-k, in order). argmax takes the lowest index on ties."""
        first = probs
        if self.k == 1 and self.training and self.noisy_gate_policy == "RSample":
            first = self._in_training(
                logits + self._gumbel(logits, _RSAMPLE).to(logits.device), probs)
        choices = [torch.argmax(first, dim=1, keepdim=True)]
        masked = logits if self.k == 2 else probs
        if self.k == 2 and self.top2_2nd_expert_sampling:
            masked = logits + self._gumbel(logits, _SECOND_EXPERT).to(logits.device)
        expert_ids = torch.arange(self.num_experts, device=logits.device)
        for _ in range(1, self.k):
            masked = masked.masked_fill(choices[-1] == expert_ids, float("-inf"))
            choices.append(torch.argmax(masked, dim=1, keepdim=True))
        return torch.cat(choices, dim=1) if self.k > 1 else choices[0]

    def _aux_loss(self, probs, experts):
        E, k = self.num_experts, self.k
        me = torch.mean(probs, dim=0)
        counted = experts[:, :1] if k <= 2 else experts
        one_hot = counted.unsqueeze(2) == torch.arange(E, device=experts.device)
        ce = torch.mean(one_hot.sum(dim=1).float(), dim=0)
        if k == 1:
            return torch.sum(me * ce) * E
        if k == 2:
            return torch.mean(me * ce) * E * E
        return torch.mean(me * ce) * E * E / k

    def forward(self, hidden_states, used_token=None):
        if used_token is not None:
            raise NotImplementedError("dsc.nn.MoE: used_token is not supported")
        shape = hidden_states.shape
        x = hidden_states.reshape(-1, shape[-1])
        tokens, E = x.shape[0], self.num_experts
        cap = self.capacity(tokens)
        context = philox.active()
        self._layer = (context.next_moe_layer()
                       if isinstance(context, (philox.DscDropout, philox.Exporting)) else 0)

        gate_input = x.float()
        if self.training and self.noisy_gate_policy == "Jitter":
            factor = self._noise(gate_input, 0.99, 1.01, _JITTER).to(x.device)
            one = torch.ones((), dtype=torch.float32, device=x.device)
            gate_input = gate_input * self._in_training(factor, one)
        logits = F.linear(gate_input, self.gate.weight.float())
        probs = F.softmax(logits, dim=1)
        experts = self._choose(logits, probs)
        chosen = torch.gather(probs, 1, experts)
        priority = chosen if self.k >= 3 and self.drop_tokens else None
        if self.k == 1 and self.use_rts and self.drop_tokens:
            # DeepSpeed's mask1 * uniform: the route's priority.
            uniform = self._noise(logits, 0.0, 1.0, _RTS).to(x.device)
            priority = torch.gather(uniform, 1, experts)
        slots, counts = torch.ops.dsc.moe_slots(experts, priority, E, cap)
        weights = chosen * (slots >= 0).float()
        if self.k >= 2:
            total = torch.sum(weights, dim=1, keepdim=True)
            weights = weights / torch.clamp(total, min=torch.finfo(weights.dtype).eps)

        dispatched = torch.ops.dsc.moe_dispatch(x, slots, None, E, cap)
        try:
            expert_out = self.experts(dispatched)
        except RuntimeError as e:
            raise RuntimeError(
                f"dsc.nn.MoE: the expert ({type(self.experts).__name__}) failed on the "
                f"stacked input {list(dispatched.shape)} [experts, capacity, width]; dsc "
                "runs it once with every nn.Linear batched over the experts, so its "
                f"forward must call its Linear modules and keep leading dimensions: {e}"
            ) from e
        if isinstance(expert_out, tuple):
            expert_out = expert_out[0]
        output = torch.ops.dsc.moe_combine(expert_out, slots, weights.to(x.dtype))
        output = output.reshape(shape)

        if self.use_residual:
            output_mlp = self.mlp(hidden_states)
            if isinstance(output_mlp, tuple):
                output_mlp = output_mlp[0]
            coef = F.softmax(self.coefficient(hidden_states), dim=-1)
            output = output * coef[..., 0:1] + output_mlp * coef[..., 1:]
        return output, self._aux_loss(probs, experts), counts
