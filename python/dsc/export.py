"""Exports a PyTorch model's forward graph and loss to the dsc dialect.

    PYTHONPATH=python /usr/bin/python3 -m dsc.export MODEL.py -o DIR [--set key=value ...]

MODEL.py defines `build(**overrides)` returning `(model, example_inputs)`,
where `model(*example_inputs)` returns the scalar training loss. Writes
DIR/model.mlir (the graph, state by name, no weight data), DIR/model.safetensors
(the initial state under the same names) and DIR/signature.json.
"""

import argparse
import importlib.util
import json
import os
import sys

import torch

from . import mlir, safetensors
from .capture import Capture
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


def build_model(model_file, overrides):
    module = load_model_file(model_file)
    torch.manual_seed(0)
    model, inputs = module.build(**overrides)
    return model, tuple(inputs)


def export(model, example_inputs, model_file=None):
    """Returns (mlir text, {name: tensor} state, signature dict)."""
    model.train()
    cap = Capture(model, example_inputs)
    low = Lowering(cap, model_file)
    text, out = low.run()
    state = cap.state
    signature = {
        "format": "dsc-signature-1",
        "torch_version": torch.__version__,
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
    p.add_argument("model", help="MODEL.py defining build(**overrides)")
    p.add_argument("-o", "--output", required=True, help="output directory")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override passed to build()")
    args = p.parse_args(argv)
    try:
        if not os.path.isfile(args.model):
            raise ExportError(f"{args.model}: error: no such file")
        model, inputs = build_model(args.model, parse_overrides(args.set))
        text, state, signature = export(model, inputs, args.model)
    except (ExportError, mlir.UnsupportedDtype) as e:
        print(e, file=sys.stderr)
        return 1
    os.makedirs(args.output, exist_ok=True)
    safetensors.save(state, os.path.join(args.output, "model.safetensors"),
                     metadata={"format": "pt", "producer": "dsc.export"})
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
