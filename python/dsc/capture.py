"""Captures a model's forward graph and loss at ATen level.

Two tracers produce the same functional ATen graph, every parameter and
buffer a graph input and nothing baked in as a constant:

- "make_fx" (torch 1.13, Debian and CI): make_fx over a functional call of
  the model with its state passed in as arguments;
- "torch.export" (torch >= 2.1): torch.export.export, then
  run_decompositions({}), which functionalizes and applies the
  CompositeImplicitAutograd decompositions that make_fx applies, and no
  others (the core-ATen table would split ops dsc keeps whole).

"auto" picks torch.export where it exists.

A model whose parameters live on torch's meta device (exported with
--meta: shapes, no memory) is traced with make_fx on meta tensors, and its
values are computed in two domains: what depends only on buffers, inputs
and constants (positions, masks: what the exporter folds or recognizes) on
the CPU for real, everything a parameter reaches on meta, as shapes.
"""

import contextlib
import inspect
import os

import torch
import torch.fx
import torch.fx.proxy
import torch.nn.functional as F
import torch.utils._pytree as pytree
from torch.fx.experimental.proxy_tensor import make_fx

from .philox import Exporting, dropout_arguments


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
                raise CaptureError("dsc.export: F.one_hot needs an explicit "
                                 "num_classes (a static shape)")
            return (t.unsqueeze(-1) == torch.arange(n, device=t.device)).long()
        return func(*args, **kwargs)


class _DropoutAsOneOp(torch.overrides.TorchFunctionMode):
    """On torch 1.13's CPU, F.dropout decomposes into bernoulli_, div_ and
    mul before make_fx sees it; torch.native_dropout is recorded as one op
    (aten::native_dropout), which dsc maps to dsc.dropout. The same values
    in distribution; dsc draws its own masks anyway."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.dropout:
            x, p, training = dropout_arguments(args, kwargs)
            if not training or p == 0:
                return x
            return torch.native_dropout(x, p, True)[0]
        return func(*args, **kwargs)


class _FactoriesOnMeta(torch.overrides.TorchFunctionMode):
    """Tensors that forward creates with no device (Llama's rotary positions,
    a mask from torch.full) are created on meta while tracing on meta, as
    they would be with device=x.device: one device for every operand. The
    trace records device=meta, which _TwoDomainInterpreter maps back."""

    FACTORIES = (torch.arange, torch.empty, torch.eye, torch.full, torch.linspace,
                 torch.logspace, torch.ones, torch.rand, torch.randint, torch.randn,
                 torch.randperm, torch.scalar_tensor, torch.tril_indices,
                 torch.triu_indices, torch.zeros)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.FACTORIES and kwargs.get("device") is None:
            kwargs = dict(kwargs, device="meta")
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


@contextlib.contextmanager
def _record_module_paths(model):
    """Tags each node traced while a submodule of `model` runs with that
    module's qualified name and class (node.meta["dsc_module"]), so that an
    error names the module as well as the source line. make_fx in torch 1.13
    traces through functional_call and keeps no module hierarchy of its own."""
    from torch.nn.modules import module as nn_module
    names = {id(m): name for name, m in model.named_modules()}
    running = []

    def enter(module, args):
        running.append((names.get(id(module)), type(module).__name__))

    def leave(module, args, result):
        running.pop()

    create_node = torch.fx.proxy.TracerBase.create_node

    def create_tagged_node(self, *args, **kwargs):
        node = create_node(self, *args, **kwargs)
        inner = next((m for m in reversed(running) if m[0] is not None), None)
        if inner is not None:
            node.meta["dsc_module"] = inner
        return node

    handles = [nn_module.register_module_forward_pre_hook(enter),
               nn_module.register_module_forward_hook(leave)]
    torch.fx.proxy.TracerBase.create_node = create_tagged_node
    try:
        yield
    finally:
        torch.fx.proxy.TracerBase.create_node = create_node
        for handle in handles:
            handle.remove()


def module_path(node):
    """'module 'h.0.mlp' (MLP)' for a node traced inside that submodule, 'the
    top-level module (GPT2)' for one of the model's own forward, or None."""
    tagged = node.meta.get("dsc_module")
    if tagged is None:
        # torch.export records its own: {key: (qualified name, class)}.
        stack = node.meta.get("nn_module_stack") or {}
        if not stack:
            return None
        name, cls = list(stack.values())[-1]
        name = name.replace("L['self'].", "").replace("L['self']", "")
        tagged = (name, getattr(cls, "__name__", str(cls).rsplit(".", 1)[-1]))
    name, cls = tagged
    return f"module '{name}' ({cls})" if name else f"the top-level module ({cls})"


METHODS = ("auto", "make_fx", "torch.export")

# Ops whose result depends on their tensor arguments' shapes only: on meta
# arguments they are still computed for real, since the exporter folds their
# values into constants.
SHAPE_ONLY_OPS = ("aten::full_like", "aten::zeros_like", "aten::ones_like",
                  "aten::empty_like", "aten::new_zeros", "aten::new_ones",
                  "aten::new_full")


def op_name(target):
    """'aten::add.Tensor' for an OpOverload target."""
    schema = getattr(target, "_schema", None)
    if schema is None:
        return getattr(target, "__name__", str(target))
    return schema.name + ("." + schema.overload_name if schema.overload_name else "")


class CaptureError(Exception):
    """The model cannot be traced as asked."""


def has_torch_export():
    """torch.export with run_decompositions, i.e. torch >= 2.1."""
    export = getattr(torch, "export", None)
    return export is not None and hasattr(export, "ExportedProgram") and \
        hasattr(export.ExportedProgram, "run_decompositions")


class Capture:
    """The traced graph plus what the exporter needs to name its parts.

    graph_module: the fx GraphModule; its placeholders take, in order, the
      values of `placeholder_role`.
    placeholder_role: placeholder node -> ("state", canonical name),
      ("input", input name) or ("constant", tensor) (a tensor the model
      creates that torch.export lifts to an input).
    values: node -> the concrete value computed on the example inputs
      (tensors, tuples of tensors, or Python scalars).
    method: the tracer used, "make_fx" or "torch.export".
    """

    def __init__(self, model, example_inputs, input_names=None, method="auto"):
        if method not in METHODS:
            raise CaptureError(f"unknown capture method {method!r}; expected one of "
                             f"{', '.join(METHODS)}")
        if method == "auto":
            method = "torch.export" if has_torch_export() else "make_fx"
        if method == "torch.export" and not has_torch_export():
            raise CaptureError(f"capture with torch.export needs torch >= 2.1; "
                             f"this is torch {torch.__version__}")
        self.model = model
        self.state = NamedState(model)
        self.meta = any(t.is_meta for t in self.state.tensors.values())
        for name, t in self.state.tensors.items():
            if t.is_meta and self.state.role[name] == "buffer":
                raise CaptureError(f"buffer {name!r} is on the meta device; the exporter "
                                   "reads buffers' values (masks), keep them real")
        if self.meta and method == "torch.export":
            raise CaptureError("a model on the meta device is captured with make_fx")
        if self.meta:
            method = "make_fx"
        self.method = method
        self.example_inputs = tuple(example_inputs)
        if input_names is None:
            params = list(inspect.signature(model.forward).parameters)
            input_names = params[:len(self.example_inputs)]
        self.input_names = list(input_names)
        if method == "make_fx":
            self._trace_make_fx()
        else:
            self._trace_torch_export()
        self.values = _evaluate(self.graph_module, self._flat_args(self.state.tensors),
                                _TwoDomainInterpreter if self.meta else torch.fx.Interpreter)

    def _trace_make_fx(self):
        names = self.state.all_names()
        canonical = [self.state.aliases[n] for n in names]
        flat_state = [self.state.tensors[c] for c in canonical]
        inputs = self.example_inputs
        if self.meta:
            # One device for every operand; values come from _evaluate.
            flat_state = [_to_meta(t) for t in flat_state]
            inputs = tuple(_to_meta(t) for t in inputs)
        model = self.model

        factories = _FactoriesOnMeta() if self.meta else contextlib.nullcontext()

        def forward(state_list, *inputs):
            with _OneHotAsCompare(), _DropoutAsOneOp(), factories, Exporting():
                return _functional_call(model, dict(zip(names, state_list)), inputs)

        with _record_stack_traces(), _record_module_paths(self.model), torch.no_grad():
            try:
                self.graph_module = make_fx(forward)(flat_state, *inputs)
            except (NotImplementedError, RuntimeError) as e:
                where = " on the meta device" if self.meta else ""
                raise CaptureError(f"tracing{where} failed: {e}") from e
        placeholders = self._placeholders(len(names) + len(self.example_inputs))
        self.placeholder_role = {}
        for node, c in zip(placeholders, canonical):
            self.placeholder_role[node] = ("state", c)
        for node, name in zip(placeholders[len(names):], self.input_names):
            self.placeholder_role[node] = ("input", name)

    def _trace_torch_export(self):
        from torch.export.graph_signature import InputKind, OutputKind
        with _OneHotAsCompare():
            program = torch.export.export(self.model, self.example_inputs, strict=False)
        program = program.run_decompositions(_implicit_decompositions())
        self.graph_module = program.graph_module
        signature = program.graph_signature
        specs = signature.input_specs
        placeholders = self._placeholders(len(specs))
        user_inputs = iter(self.input_names)
        self.placeholder_role = {}
        for node, spec in zip(placeholders, specs):
            if spec.kind == InputKind.USER_INPUT:
                self.placeholder_role[node] = ("input", next(user_inputs))
            elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
                if spec.target not in self.state.aliases:
                    raise CaptureError(f"torch.export names state {spec.target!r} "
                                       "that the model does not have")
                self.placeholder_role[node] = ("state", self.state.aliases[spec.target])
            elif spec.kind == InputKind.CONSTANT_TENSOR:
                self.placeholder_role[node] = ("constant", program.constants[spec.target])
            else:
                raise CaptureError(f"torch.export input {spec.arg.name} of kind "
                                   f"{spec.kind.name} is not supported")
        mutated = [s.target for s in signature.output_specs
                   if s.kind != OutputKind.USER_OUTPUT]
        if mutated:
            raise CaptureError(f"the model mutates {', '.join(mutated)} in forward; "
                               "dsc graphs are functional")

    def _placeholders(self, expected):
        nodes = [n for n in self.graph_module.graph.nodes if n.op == "placeholder"]
        if len(nodes) != expected:
            raise CaptureError(f"traced graph has {len(nodes)} inputs, expected "
                               f"{expected}")
        return nodes

    def _flat_args(self, tensors):
        inputs = dict(zip(self.input_names, self.example_inputs))
        flat = []
        for kind, what in self.placeholder_role.values():
            flat.append(tensors[what] if kind == "state" else
                        inputs[what] if kind == "input" else what)
        return flat

    def run(self, tensors):
        """The traced graph's output with the canonical state `tensors`."""
        if self.meta:
            raise CaptureError("a model on the meta device has no values to run")
        flat = self._flat_args(tensors)
        with torch.no_grad():
            if self.method == "make_fx":
                n = sum(1 for k, _ in self.placeholder_role.values() if k == "state")
                out = self.graph_module(flat[:n], *flat[n:])
            else:
                out = self.graph_module(*flat)
        return out[0] if isinstance(out, (list, tuple)) else out


def _implicit_decompositions():
    """The CompositeImplicitAutograd decompositions, the ones make_fx applies
    (cross_entropy -> log_softmax + nll_loss, linear -> t + addmm, ...).
    From torch 2.6, run_decompositions keeps every op the table leaves out,
    CIA ops included, so the table names them; before, an empty table
    applied them already."""
    try:
        from torch._export.utils import (_collect_all_valid_cia_ops_for_aten_namespace,
                                         _get_decomp_for_cia)
    except ImportError:
        return {}
    return {op: _get_decomp_for_cia(op) for op in _collect_all_valid_cia_ops_for_aten_namespace()}


def _to_meta(x):
    return x.to("meta") if isinstance(x, torch.Tensor) else x


def _to_device(x, device):
    return device if isinstance(x, torch.device) else x


class _TwoDomainInterpreter(torch.fx.Interpreter):
    """Runs a graph traced on meta tensors with meta parameters and real
    buffers and inputs: a node whose operands are all real runs on the CPU
    (its value may be folded into the IR), any other on meta (only its shape
    and dtype are read). Device arguments, recorded as meta by the trace,
    follow the domain."""

    def call_function(self, target, args, kwargs):
        flat, _ = pytree.tree_flatten((args, kwargs))
        if op_name(target) in SHAPE_ONLY_OPS:
            args, kwargs = pytree.tree_map(
                lambda x: torch.empty_like(x, device="cpu") if
                isinstance(x, torch.Tensor) and x.is_meta else x, (args, kwargs))
            on_meta = False
        else:
            on_meta = any(isinstance(x, torch.Tensor) and x.is_meta for x in flat)
        if on_meta:
            args, kwargs = pytree.tree_map(_to_meta, (args, kwargs))
        device = torch.device("meta" if on_meta else "cpu")
        args, kwargs = pytree.tree_map(lambda x: _to_device(x, device), (args, kwargs))
        return super().call_function(target, args, kwargs)


def _evaluate(gm, flat_args, interpreter=torch.fx.Interpreter):
    values = {}

    class Recorder(interpreter):
        def run_node(self, n):
            result = super().run_node(n)
            values[n] = result
            return result

    with torch.no_grad():
        Recorder(gm).run(*flat_args)
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
