"""Exports a PyTorch model's forward graph and loss to the dsc dialect.

    PYTHONPATH=python /usr/bin/python3 -m dsc.export MODEL.py -o DIR [--set key=value ...]

MODEL.py defines `build(**overrides)` returning `(model, example_inputs)`,
where `model(*example_inputs)` returns the scalar training loss. Writes
DIR/model.mlir (the graph, state by name, no weight data), DIR/model.safetensors
(the initial state under the same names) and DIR/signature.json.

With --meta the model's parameters live on torch's meta device (shapes, no
memory), so a model of any size exports in seconds: DIR/model.mlir is the
same graph, DIR/signature.json has no example loss, and there is no
DIR/model.safetensors and no check against PyTorch (both need values).
Buffers are still computed (the exporter reads masks' values).
"""

import argparse
import contextlib
import importlib.util
import json
import os
import sys

import torch

from . import capture, mlir, reference, safetensors
from .capture import Capture
from . import lower
from .lower import ExportError, Lowering


def load_model_file(path):
    spec = importlib.util.spec_from_file_location(
        "dsc_model_" + os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, "build"):
        raise ExportError(f"{path}: error: defines no build(**overrides)")
    return module


def parse_overrides(items):
    """--set key=value: ints, floats, booleans and strings."""
    out = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ExportError(f"--set {item!r}: expected key=value")
        for conv in (int, float):
            try:
                out[key] = conv(raw)
                break
            except ValueError:
                pass
        else:
            out[key] = {"true": True, "false": False}.get(raw.lower(), raw)
    return out


@contextlib.contextmanager
def parameters_on_meta():
    """Every parameter a module registers meanwhile moves to the meta device
    (module code creates it on the CPU, one at a time, uninitialized until
    the move; its initialization then runs on meta). Buffers stay real.
    A parameter already on meta is kept as it is, so ties stay ties."""
    register = torch.nn.Module.register_parameter

    def register_on_meta(module, name, param):
        if param is not None and not param.is_meta:
            param = torch.nn.Parameter(param.detach().to("meta"),
                                       requires_grad=param.requires_grad)
        register(module, name, param)

    torch.nn.Module.register_parameter = register_on_meta
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = register


def build_model(model_file, overrides, meta=False):
    module = load_model_file(model_file)
    torch.manual_seed(0)
    with parameters_on_meta() if meta else contextlib.nullcontext():
        model, inputs = module.build(**overrides)
    return model, tuple(inputs)


def _stress_state(cap):
    """The model's state with every floating-point parameter replaced by
    N(0, 0.5^2) noise: freshly initialized weights are so small that some
    wrong mappings change the loss by less than the tolerance."""
    g = torch.Generator().manual_seed(0)
    out = {}
    for name, t in cap.state.tensors.items():
        if cap.state.role[name] == "parameter" and t.dtype.is_floating_point:
            out[name] = (torch.randn(t.shape, generator=g) * 0.5).to(t.dtype)
        else:
            out[name] = t
    return out


def _is_topk_indices(node):
    if lower.schema_name(node) != "<built-in function getitem>" and \
            getattr(node.target, "__name__", "") != "getitem":
        return False
    source, index = node.args
    return (isinstance(source, torch.fx.Node) and source.op == "call_function" and
            lower.schema_name(source) == "aten::topk" and index == 1)


def _check_every_value(low, cap, env, rtol, atol):
    """Each ATen node's tensor against the dsc value emitted for it: a wrong
    mapping shows where it is, even when the loss barely moves."""
    for node, val in low.memo.items():
        if not isinstance(val, lower.Val) or val.name not in env:
            continue
        theirs = cap.values.get(node)
        if not isinstance(theirs, torch.Tensor) or tuple(theirs.shape) != val.shape:
            continue
        ours = env[val.name]
        if _is_topk_indices(node):
            # Ties: torch.topk orders them as its kernel happens to, dsc.top_k
            # puts the lower index first. Equivalent if the indices pick
            # equal values.
            source = node.args[0]
            x = cap.values[source.args[0]]
            dim = source.args[2] if len(source.args) > 2 else source.kwargs.get("dim", -1)
            ok = torch.equal(torch.gather(x, dim, ours), torch.gather(x, dim, theirs))
        elif theirs.dtype.is_floating_point:
            ok = torch.allclose(ours.double(), theirs.double(), rtol=rtol, atol=atol,
                                equal_nan=True)
        else:
            ok = torch.equal(ours, theirs.to(ours.dtype))
        if not ok:
            raise ExportError(low.error(node, f"the dsc value emitted for "
                                        f"'{lower.schema_name(node)}' differs from "
                                        "PyTorch's; its mapping is wrong").args[0])


def check_against_pytorch(low, cap, rtol=1e-5, atol=1e-6):
    """Evaluates the exported ops with dsc's reference semantics and compares
    the loss with PyTorch's on the same inputs (fp32 tolerance), with the
    model's own state and with a stress state. Returns the first loss."""
    inputs = {low.inputs[n].name: t for n, t in zip(cap.input_names, cap.example_inputs)}
    losses = []
    for label, state in (("", cap.state.tensors), (" (stress weights)", _stress_state(cap))):
        env = reference.evaluate(low.ops, inputs, state)
        if not label:
            _check_every_value(low, cap, env, rtol, atol)
        ours = env[low.output.name].double()
        theirs = cap.run(state).double()
        if not torch.allclose(ours, theirs, rtol=rtol, atol=atol):
            raise ExportError(f"error: the exported graph computes {ours.tolist()} where "
                              f"PyTorch computes {theirs.tolist()}{label}; a mapping "
                              "is wrong")
        losses.append(float(ours))
    return losses[0]


def export(model, example_inputs, model_file=None, check=True, method="auto"):
    """Returns (mlir text, {name: tensor} state, signature dict)."""
    model.train()
    cap = Capture(model, example_inputs, method=method)
    low = Lowering(cap, model_file)
    text, out = low.run()
    # dsc.reference has no step key to draw from (PyTorch's trace drew
    # other numbers): a graph with random ops is not checked.
    draws = any(o.name in ("dropout", "random_uniform") for o in low.ops)
    checked = None
    if check and not draws and not cap.meta:
        checked = check_against_pytorch(low, cap)
    state = cap.state
    signature = {
        "format": "dsc-signature-1",
        "torch_version": torch.__version__,
        "capture": cap.method,
        "example_loss": checked,
        "inputs": [{"name": n, "shape": list(t.shape), "dtype": mlir.element_type(t.dtype)}
                   for n, t in zip(cap.input_names, cap.example_inputs)],
        "parameters": [], "buffers": [],
        "outputs": [{"name": "loss", "shape": list(out.shape),
                     "dtype": mlir.element_type(out.dtype)}],
    }
    for name, t in state.tensors.items():
        aliases = sorted(a for a, c in state.aliases.items() if c == name and a != name)
        entry = {"name": name, "shape": list(t.shape), "dtype": mlir.element_type(t.dtype),
                 "numel": t.numel(), "used": name in low.used_state}
        if aliases:
            entry["aliases"] = aliases
        signature[state.role[name] + "s"].append(entry)
    return text, dict(state.tensors), signature


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m dsc.export", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", nargs="?", help="MODEL.py defining build(**overrides)")
    p.add_argument("-o", "--output", help="output directory")
    p.add_argument("--list-ops", action="store_true",
                   help="print the ATen ops that map to dsc ops and exit")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override passed to build()")
    p.add_argument("--capture", choices=capture.METHODS, default="auto",
                   help="tracer: make_fx (torch 1.13), torch.export (torch >= 2.1) "
                        "or auto, torch.export where it exists (default)")
    p.add_argument("--no-check", action="store_true",
                   help="skip evaluating the exported graph against PyTorch")
    p.add_argument("--meta", action="store_true",
                   help="build the parameters on the meta device: the graph from "
                        "shapes only, no model.safetensors, no check")
    args = p.parse_args(argv)
    if args.list_ops:
        print("\n".join(sorted(lower.HANDLERS)))
        return 0
    if not args.model or not args.output:
        p.error("MODEL.py and -o DIR are required")
    try:
        if not os.path.isfile(args.model):
            raise ExportError(f"{args.model}: error: no such file")
        model, inputs = build_model(args.model, parse_overrides(args.set), meta=args.meta)
        if not args.meta and any(p.is_meta for p in model.parameters()):
            raise ExportError(f"{args.model}: error: build() puts parameters on the meta "
                              "device; they have no values to save: export with --meta")
        text, state, signature = export(model, inputs, args.model,
                                        check=not args.no_check, method=args.capture)
    except capture.CaptureError as e:
        print(f"{args.model}: error: {e}", file=sys.stderr)
        return 1
    except (ExportError, mlir.UnsupportedDtype) as e:
        print(e, file=sys.stderr)
        return 1
    os.makedirs(args.output, exist_ok=True)
    weights = os.path.join(args.output, "model.safetensors")
    if args.meta:
        if os.path.exists(weights):
            os.remove(weights)  # it would not match this model.mlir
    else:
        safetensors.save(state, weights, metadata={"format": "pt", "producer": "dsc.export"})
    with open(os.path.join(args.output, "signature.json"), "w") as f:
        json.dump(signature, f, indent=1)
        f.write("\n")
    tmp = os.path.join(args.output, "model.mlir.tmp")
    with open(tmp, "w") as f:
        f.write(f"// Exported by dsc.export from {os.path.basename(args.model)} "
                f"(torch {torch.__version__}).\n")
        f.write(text)
    os.replace(tmp, os.path.join(args.output, "model.mlir"))
    n = sum(e["numel"] for e in signature["parameters"])
    print(f"exported {args.model}: {len(signature['parameters'])} parameters "
          f"({n} elements), {len(signature['buffers'])} buffers -> {args.output}")
    if args.meta:
        print("meta: no model.safetensors written (the parameters have no values); "
              "not checked against PyTorch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
