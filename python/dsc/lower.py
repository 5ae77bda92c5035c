"""Maps a captured ATen graph to the dsc dialect.

Emission is driven by demand from the graph's output, so values nobody uses
(layer norm's saved mean and rstd, the unused half of a split) produce no IR.
Values that depend on no model input and no parameter (positions from
`arange`, masks from `tril`, rotary tables) are computed at export time and
become `dsc.constant`s, or are recognized as what they mean (a causal mask
becomes `dsc.causal_mask`).

An ATen op without a mapping is an ExportError naming the op and the model's
source line; there is no silent fallback.
"""

import sys
import torch

from . import mlir
from .capture import module_path, op_name, source_line


class ExportError(Exception):
    pass


# Constants up to this many elements are printed into the IR; larger
# state-derived values are recomputed from `dsc.load`s instead, so weights
# never end up in the IR.
FOLD_LIMIT = 1 << 16

# Ops whose value the trace's is not: they draw from the step's key (or
# read its training flag), so they are never folded into constants.
RANDOM_OPS = ("dsc::random_uniform_like", "dsc::when_training")


class Op:
    """A recorded dsc op: printed as MLIR, evaluated by dsc.reference."""

    def __init__(self, name, operands, results, attrs):
        self.name, self.operands, self.results, self.attrs = (
            name, operands, results, attrs)


class Val:
    """An emitted SSA value."""

    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype

    @property
    def type(self):
        return mlir.tensor_type(self.shape, self.dtype)


HANDLERS = {}


def _is_splat(t):
    flat = t.reshape(-1)
    return flat.numel() > 0 and bool((flat == flat[0]).all())


def handles(*schemas):
    def register(fn):
        for s in schemas:
            HANDLERS[s] = fn
        return fn
    return register


def schema_name(node):
    """'aten::add.Tensor' for a node calling an OpOverload."""
    return op_name(node.target)


class Lowering:
    def __init__(self, capture, model_file=None):
        self.cap = capture
        self.model_file = model_file
        self.ops = []
        self.memo = {}
        self.counter = 0
        self.used_state = set()
        self._step_key = None       # dsc.step_key, once a random op needs it
        self._dropout_sites = None  # {dropout node: its site number}
        self._classify()

    # -- classification --------------------------------------------------

    def _classify(self):
        """foldable[n]: n depends only on constants and buffers."""
        self.foldable = {}
        for n in self.cap.graph_module.graph.nodes:
            if n.op == "placeholder":
                kind, name = self.cap.placeholder_role[n]
                self.foldable[n] = kind == "constant" or (
                    kind == "state" and self.cap.state.role[name] == "buffer")
            elif n.op == "call_function":
                self.foldable[n] = op_name(n.target) not in RANDOM_OPS and all(
                    self.foldable.get(a, True) for a in n.all_input_nodes)
            else:
                self.foldable[n] = False

    # -- helpers ---------------------------------------------------------

    def error(self, node, message):
        module = module_path(node)
        where = f", in {module}" if module else ""
        return ExportError(f"{source_line(node, self.model_file)}: error: {message}{where}")

    def fresh(self, hint="v"):
        self.counter += 1
        return f"%{hint}{self.counter}"

    def op(self, name, operands, result_shape, result_dtype, attrs=None,
           hint="v", results=None):
        """Records `%r = "dsc.name"(operands) {attrs}`; returns its Val (a
        list of Vals for several results). Attribute values are typed
        (kind, value) pairs, see mlir.format_attr."""
        if results is None:
            results = [(result_shape, result_dtype)]
        vals = [Val(self.fresh(hint), s, d) for s, d in results]
        self.ops.append(Op(name, list(operands), vals, dict(attrs or {})))
        return vals if len(vals) > 1 else vals[0]

    def step_key(self):
        """dsc.step_key, emitted once, before its first use."""
        if self._step_key is None:
            self._step_key = self.op("step_key", [], (4,), torch.int64, hint="key")
        return self._step_key

    def dropout_site(self, node):
        """The number of the dropout `node` calls: the model's dropouts in
        the order its forward calls them (the trace's order), as
        dsc.philox.DscDropout counts them in PyTorch."""
        if self._dropout_sites is None:
            names = ("aten::native_dropout", "aten::dropout")
            calls = [n for n in self.cap.graph_module.graph.nodes
                     if n.op == "call_function" and op_name(n.target).split(".")[0]
                     in names]
            self._dropout_sites = {n: i for i, n in enumerate(calls)}
        return self._dropout_sites[node]

    def micro_batch(self):
        """Samples per call: the graph inputs' leading dimension (1 without
        inputs)."""
        inputs = self.cap.example_inputs
        return int(inputs[0].shape[0]) if inputs and len(inputs[0].shape) else 1

    def constant(self, t):
        t = t.detach()
        if t.dtype not in (torch.float64, torch.float32, torch.float16,
                           torch.bfloat16, torch.int64, torch.int32, torch.bool):
            t = t.to(torch.int64 if not t.dtype.is_floating_point else torch.float32)
        return self.op("constant", [], tuple(t.shape), t.dtype,
                       {"value": ("dense", t.clone())}, hint="cst")

    def scalar(self, value, dtype):
        return self.constant(torch.tensor(value, dtype=dtype))

    def convert(self, v, dtype):
        if v.dtype == dtype:
            return v
        return self.op("convert", [v], v.shape, dtype)

    def reshape(self, v, shape):
        shape = tuple(shape)
        if v.shape == shape:
            return v
        return self.op("reshape", [v], shape, v.dtype)

    def value(self, node):
        return self.cap.values[node]

    def out_meta(self, node):
        t = self.value(node)
        if not isinstance(t, torch.Tensor):
            raise self.error(node, f"{schema_name(node)} does not produce a tensor")
        return tuple(t.shape), t.dtype

    def operand(self, arg, dtype=None, like=None):
        """An fx argument as a Val: nodes are emitted, Python numbers become
        rank-0 constants of `dtype` (or `like`'s dtype)."""
        if isinstance(arg, torch.fx.Node):
            v = self.emit(arg)
            return self.convert(v, dtype) if dtype is not None else v
        if isinstance(arg, (bool, int, float)):
            if dtype is None:
                dtype = like.dtype if like is not None else torch.float32
            return self.scalar(arg, dtype)
        raise ExportError(f"unsupported operand {arg!r}")

    # -- emission --------------------------------------------------------

    def emit(self, node):
        if node in self.memo:
            return self.memo[node]
        result = self._emit(node)
        self.memo[node] = result
        return result

    def _emit(self, node):
        if node.op == "placeholder":
            kind, name = self.cap.placeholder_role[node]
            if kind == "input":
                return self.inputs[name]
            if kind == "constant":
                return self.constant(name)
            self.used_state.add(name)
            t = self.cap.state.tensors[name]
            return self.op("load", [], tuple(t.shape), t.dtype,
                           {"state": ("symbol", name)}, hint="w")
        if node.op != "call_function":
            raise self.error(node, f"unexpected fx node {node.op}")
        value = self.value(node)
        if (self.foldable[node] and isinstance(value, torch.Tensor)
                and (value.numel() <= FOLD_LIMIT or _is_splat(value))):
            return self.constant(value)
        if schema_name(node) == "<built-in function getitem>" or \
                getattr(node.target, "__name__", "") == "getitem":
            source, index = node.args
            return self.emit_tuple(source)[index]
        handler = HANDLERS.get(schema_name(node))
        if handler is None:
            raise self.error(node, f"ATen op '{schema_name(node)}' has no dsc mapping")
        return handler(self, node, *node.args, **node.kwargs)

    def emit_tuple(self, node):
        """Multi-result ATen ops return a list of Vals (None where unused
        results have no dsc counterpart)."""
        result = self.emit(node)
        if not isinstance(result, (list, tuple)):
            raise self.error(node, f"{schema_name(node)} is not a tuple")
        return result

    def check_coverage(self, output):
        """Every ATen op the output needs that has no mapping, each once with
        its first source line, as one ExportError: a user sees them all."""
        missing, seen, stack = {}, set(), [output]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if node.op != "call_function":
                continue
            value = self.cap.values.get(node)
            if (self.foldable[node] and isinstance(value, torch.Tensor)
                    and (value.numel() <= FOLD_LIMIT or _is_splat(value))):
                continue  # computed at export time
            name = schema_name(node)
            if name not in HANDLERS and getattr(node.target, "__name__", "") != "getitem":
                missing.setdefault(name, node)
            stack.extend(node.all_input_nodes)
        if missing:
            raise ExportError("\n".join(
                self.error(n, f"ATen op '{name}' has no dsc mapping").args[0]
                for name, n in sorted(missing.items())))

    def run(self):
        gm = self.cap.graph_module
        output = next(n for n in gm.graph.nodes if n.op == "output")
        result = output.args[0]
        if isinstance(result, (list, tuple)) and len(result) == 1:
            result = result[0]  # make_fx returns a flat list of outputs
        if not isinstance(result, torch.fx.Node):
            raise ExportError("the model must return a single tensor (the loss)")
        self.check_coverage(result)
        shape, dtype = self.out_meta(result)
        args = []
        self.inputs = {}
        for name, t in zip(self.cap.input_names, self.cap.example_inputs):
            v = Val(f"%{name}", t.shape, t.dtype)
            self.inputs[name] = v
            args.append(f'{v.name}: {v.type} {{dsc.input = "{name}"}}')
        # emit() recurses along data dependences: a deep model's residual
        # stream makes the recursion as deep as the graph (96 GPT blocks
        # exceed Python's default limit of 1000). Since 3.11 CPython keeps
        # Python-to-Python calls off the C stack, so a limit that grows with
        # the graph is safe.
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20 * len(gm.graph.nodes) + 1000))
        try:
            out = self.emit(result)
        finally:
            sys.setrecursionlimit(limit)
        self.output = out
        body = [mlir.format_op(o) for o in self.ops]
        header = []
        for name, t in self.cap.state.tensors.items():
            role = self.cap.state.role[name]
            header.append(f'  "dsc.state"() {{role = {mlir.STATE_ROLE[role]} : i32, '
                          f'sym_name = "{name}", type = '
                          f"{mlir.tensor_type(tuple(t.shape), t.dtype)}}} : () -> ()")
        text = ["module {"] + header
        text.append(f"  func.func @forward({', '.join(args)}) -> "
                    f'({out.type} {{dsc.output = "loss"}}) {{')
        text += body
        text.append(f"    func.return {out.name} : {out.type}")
        text.append("  }")
        text.append("}")
        return "\n".join(text) + "\n", out


# Handlers live in aten_ops.py; importing it registers them.
from . import aten_ops  # noqa: E402,F401
