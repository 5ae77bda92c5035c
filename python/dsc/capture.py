"""Captures a model's forward graph and loss at ATen level.

One path serves torch 1.13 (Debian, CI) and torch 2.x: make_fx over a
functional call of the model with its state passed in as arguments, so every
parameter and buffer is a graph input and nothing is baked in as a constant.
"""

import contextlib
import inspect
import os

import torch
import torch.fx
import torch.fx.proxy
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx


class NamedState:
    """A model's parameters and buffers by fully-qualified name.

    Tied tensors (GPT-2's lm_head.weight is transformer.wte.weight) are one
    entry under the canonical name, the first that named_parameters() /
    named_buffers() yields; every other name is an alias of it. On torch 1.13
    named_parameters() cannot list duplicates, so aliases are found by
    walking named_modules() and grouping by tensor identity.
    """

    def __init__(self, model):
        self.tensors = {}   # canonical name -> tensor
        self.role = {}      # canonical name -> "parameter" | "buffer"
        self.aliases = {}   # any name -> canonical name
        canonical_by_id = {}
        for role, items in (("parameter", model.named_parameters()),
                            ("buffer", model.named_buffers())):
            for name, t in items:
                if id(t) not in canonical_by_id:
                    canonical_by_id[id(t)] = name
                    self.tensors[name] = t
                    self.role[name] = role
        for prefix, module in model.named_modules():
            for kind in ("_parameters", "_buffers"):
                for local, t in getattr(module, kind).items():
                    if t is None:
                        continue
                    name = f"{prefix}.{local}" if prefix else local
                    if id(t) in canonical_by_id:
                        self.aliases[name] = canonical_by_id[id(t)]

    def all_names(self):
        """Every name functional_call must bind, canonical and alias."""
        return list(self.aliases)


class _OneHotAsCompare(torch.overrides.TorchFunctionMode):
    """F.one_hot reads a tensor's values in C++ and cannot be traced by
    make_fx on torch 1.13; the same result as a comparison traces."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.one_hot:
            t = args[0]
            n = args[1] if len(args) > 1 else kwargs.get("num_classes", -1)
            if n < 0:
                raise ValueError("dsc.export: F.one_hot needs an explicit "
                                 "num_classes (a static shape)")
            return (t.unsqueeze(-1) == torch.arange(n, device=t.device)).long()
        return func(*args, **kwargs)


def _functional_call(model, state, inputs):
    if hasattr(torch, "func") and hasattr(torch.func, "functional_call"):
        return torch.func.functional_call(model, state, inputs)
    from torch.nn.utils import stateless
    return stateless.functional_call(model, state, inputs)


@contextlib.contextmanager
def _record_stack_traces():
    old = torch.fx.proxy.TracerBase.record_stack_traces
    torch.fx.proxy.TracerBase.record_stack_traces = True
    try:
        yield
    finally:
        torch.fx.proxy.TracerBase.record_stack_traces = old


class Capture:
    """The traced graph plus what the exporter needs to name its parts.

    graph_module: the fx GraphModule; placeholders are, in order, one per
      name of `state.all_names()`, then one per model input.
    placeholder_role: placeholder node -> ("state", canonical name) or
      ("input", input name).
    values: node -> the concrete value computed on the example inputs
      (tensors, tuples of tensors, or Python scalars).
    """

    def __init__(self, model, example_inputs, input_names=None):
        self.model = model
        self.state = NamedState(model)
        self.example_inputs = tuple(example_inputs)
        if input_names is None:
            params = list(inspect.signature(model.forward).parameters)
            input_names = params[:len(self.example_inputs)]
        self.input_names = list(input_names)
        names = self.state.all_names()
        canonical = [self.state.aliases[n] for n in names]
        flat_state = [self.state.tensors[c] for c in canonical]

        def forward(state_list, *inputs):
            with _OneHotAsCompare():
                return _functional_call(model, dict(zip(names, state_list)), inputs)

        with _record_stack_traces(), torch.no_grad():
            self.graph_module = make_fx(forward)(flat_state, *self.example_inputs)

        placeholders = [n for n in self.graph_module.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(names) + len(self.example_inputs):
            raise RuntimeError(f"traced graph has {len(placeholders)} inputs, "
                               f"expected {len(names)} state + "
                               f"{len(self.example_inputs)} model inputs")
        self.placeholder_role = {}
        for node, c in zip(placeholders, canonical):
            self.placeholder_role[node] = ("state", c)
        for node, name in zip(placeholders[len(names):], self.input_names):
            self.placeholder_role[node] = ("input", name)
        self._canonical = canonical
        self.values = _evaluate(self.graph_module, flat_state, self.example_inputs)

    def run(self, tensors):
        """The traced graph's output with the canonical state `tensors`."""
        flat = [tensors[c] for c in self._canonical]
        with torch.no_grad():
            out = self.graph_module(flat, *self.example_inputs)
        return out[0] if isinstance(out, (list, tuple)) else out


def _evaluate(gm, flat_state, inputs):
    values = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            result = super().run_node(n)
            values[n] = result
            return result

    with torch.no_grad():
        Recorder(gm).run(*flat_state, *inputs)
    return values


def source_line(node, model_file=None):
    """'file:line' of the model code that produced `node`: the innermost
    frame of its stack trace outside torch and dsc, preferring `model_file`."""
    trace = getattr(node, "stack_trace", None) or ""
    frames = []
    for line in trace.splitlines():
        line = line.strip()
        if line.startswith('File "'):
            path, _, rest = line[len('File "'):].partition('", line ')
            frames.append((path, rest.split(",")[0]))
    torch_dir = os.path.dirname(torch.__file__)
    dsc_dir = os.path.dirname(os.path.abspath(__file__))
    if model_file:
        model_file = os.path.abspath(model_file)
        for path, lineno in frames:
            if os.path.abspath(path) == model_file:
                return f"{path}:{lineno}"
    for path, lineno in frames:
        p = os.path.abspath(path)
        if not p.startswith(torch_dir) and not p.startswith(dsc_dir):
            return f"{path}:{lineno}"
    return "<unknown>:0"
