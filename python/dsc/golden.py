"""Golden numbers: trains a model in PyTorch exactly as dsc will, and writes
what every dsc result is checked against.

    PYTHONPATH=python /usr/bin/python3 -m dsc.golden MODEL.py \\
        --weights DIR/model.safetensors --data FILE.bin|FILE.safetensors \\
        --steps S --batch B [--seq T] --optim adamw|adam|sgd --lr LR -o GOLD
        [--grad-accum N] [--scheduler warmup-lr|warmup-decay-lr|warmup-cosine-lr ...]

With --precision bf16 (or fp16), DeepSpeed's mixed precision: the module
computes forward and backward in 16 bits (model.to(dtype)); the optimizer
keeps fp32 master copies of the parameters, receives the 16-bit gradients
converted to fp32, and after each step its parameters are copied (rounded to
nearest even) into the module. Losses are the 16-bit loss as a float;
gradients and final weights are the fp32 master ones.

Writes GOLD/losses.json (the loss of every step, as decimals and as exact
float32 bit patterns), GOLD/grads_step1.safetensors (the gradients of the
first step, before the optimizer updates) and GOLD/weights_final.safetensors
(the state after the last step), all under the exported names; losses.json
also holds the learning rate of every step (`lrs`: DeepSpeed's schedules,
written out again in Python). With --grad-accum N a step is N micro-batches
of --batch sequences (the next N batches), each loss divided by N before its
backward, as DeepSpeed's engine does. Batches follow
dsc.data.batch for a token file (--seq T), and dsc.data.sample_batch for a
samples file (.safetensors: one tensor per input of the model's forward,
named after it; float inputs take the module's dtype, as a mixed-precision
run must feed them). Runs are deterministic: one thread, deterministic algorithms,
fixed seeds; two runs write bit-identical files.

With --optim adam or adamw (on the CPU) it also writes what a comparison of
Adam's weights needs to know how far rounding alone can move them
(test/e2e/Inputs/adam_bound.py): GOLD/grad_history.safetensors holds, for
every step t (1-based) and parameter NAME, `step<t>/NAME`, the gradient the
optimizer used; GOLD/grad_history.json the optimizer's settings, each
step's lr and, per step and parameter, nu: the largest |g - g64| over the
tensor, where g64 is the gradient of the same module weights on the same
batch computed in float64 (a float64 copy of the module). In 16-bit runs g
is the 16-bit module's gradient, so nu is the 16-bit rounding noise. The
float64 pass runs after the step's gradients are taken, with the random
state saved and restored, so every other output is what it was without it.

With --device cuda the same loop runs on the GPU (TF32 off: fp32 GEMMs are
fp32) with PyTorch's default CUDA kernels, which are not deterministic;
bench/cuda/gpt2_train_cuda.py uses it as the PyTorch side of dsc's CUDA
training step (`train` also returns each step's wall time).
"""

import argparse
import copy
import inspect
import json
import math
import os
import struct
import sys
import time

import torch

from . import data, safetensors
from .capture import NamedState
from .export import ExportError, build_model, parse_overrides
from .philox import DEFAULT_SEED, DscDropout


def load_weights(model, path):
    """Copies the safetensors state into the model by canonical name; tied
    names share the tensor. Missing or misshapen entries are errors."""
    state = NamedState(model)
    tensors = safetensors.load_torch(path)
    for name, t in state.tensors.items():
        if name not in tensors:
            raise ExportError(f"{path}: error: no tensor named '{name}'")
        src = tensors[name]
        if tuple(src.shape) != tuple(t.shape) or src.dtype != t.dtype:
            raise ExportError(f"{path}: error: '{name}' is {tuple(src.shape)} "
                              f"{src.dtype}, the model expects {tuple(t.shape)} {t.dtype}")
        with torch.no_grad():
            t.copy_(src)
    extra = sorted(set(tensors) - set(state.tensors))
    if extra:
        raise ExportError(f"{path}: error: tensors the model does not have: "
                          + ", ".join(extra[:5]))
    return state


def make_optimizer(args, params):
    if args.optim == "sgd":
        return torch.optim.SGD(params, lr=args.lr, momentum=args.momentum,
                               weight_decay=args.weight_decay or 0.0)
    cls = torch.optim.AdamW if args.optim == "adamw" else torch.optim.Adam
    wd = args.weight_decay if args.weight_decay is not None else (
        0.01 if args.optim == "adamw" else 0.0)
    return cls(params, lr=args.lr, betas=tuple(args.betas), eps=args.eps,
               weight_decay=wd)


class Schedule:
    """DeepSpeed's WarmupLR, WarmupDecayLR and WarmupCosineLR
    (deepspeed/runtime/lr_schedules.py), written out again: `lr(it)` is the
    learning rate at scheduler iteration `it` (last_batch_iteration).
    DeepSpeed applies lr(-1) when it builds the scheduler and steps it once
    after every applied optimizer step, so the step after n applied steps
    uses lr(n - 1)."""

    def __init__(self, args):
        self.kind = args.scheduler
        self.base = args.lr
        self.w = max(2, args.warmup_num_steps)
        self.t = args.total_num_steps
        self.log = args.warmup_type == "log"
        self.min_lr = args.warmup_min_lr
        self.max_lr = args.warmup_max_lr
        if self.max_lr is None:  # WarmupLR: the optimizer's lr; WarmupDecayLR: 0.001
            self.max_lr = args.lr if self.kind == "warmup-lr" else 0.001
        self.warmup_min_ratio = args.warmup_min_ratio
        self.cos_min_ratio = args.cos_min_ratio

    def _warmup(self, it):
        return math.log(it + 1) / math.log(self.w) if self.log else it / self.w

    def lr(self, it):
        if self.kind == "none":
            return self.base
        if self.kind == "warmup-cosine-lr":
            if it < 0:
                return 0.0
            if it < self.w:
                ratio = self.warmup_min_ratio + self._warmup(it) * (1 - self.warmup_min_ratio)
            else:
                progress = min(1.0, (it - self.w + 1) / max(1, self.t - self.w))
                ratio = max(0.0, self.cos_min_ratio + (1 - self.cos_min_ratio)
                            * (1 + math.cos(math.pi * progress)) / 2)
            return self.base * ratio
        if it < 0:
            return self.min_lr
        if it < self.w:
            gamma = self._warmup(it)
        elif self.kind == "warmup-lr":
            gamma = 1.0
        else:
            gamma = max(0.0, (self.t - it) / max(1.0, self.t - self.w))
        return self.min_lr + (self.max_lr - self.min_lr) * gamma


def float_bits(x):
    return "0x%08X" % struct.unpack("<I", struct.pack("<f", x))[0]


PRECISIONS = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


class MasterWeights:
    """DeepSpeed's fp32 master copies of a module that computes in `dtype`:
    `tensors` holds an fp32 copy of every float state; the module's own
    tensors become 16-bit."""

    def __init__(self, model, state, dtype):
        self.state = state
        self.tensors = {n: t.detach().clone() for n, t in state.tensors.items()
                        if t.is_floating_point()}
        for n, t in self.tensors.items():
            t.requires_grad_(state.tensors[n].requires_grad)
        model.to(dtype)  # in place: state.tensors now see the 16-bit data

    def to_module(self):
        """The module's 16-bit parameters from the masters (round to
        nearest even), with no gradient left from the last step."""
        with torch.no_grad():
            for n, t in self.tensors.items():
                self.state.tensors[n].copy_(t)
                self.state.tensors[n].grad = None

    def take_gradients(self):
        """The module's 16-bit gradients, converted to fp32, as the
        masters' gradients."""
        for n, t in self.tensors.items():
            g = self.state.tensors[n].grad
            t.grad = None if g is None else g.float()


def check_precision(dtype, device):
    """torch's CPU kernels must have the 16-bit GEMM the model needs."""
    if dtype is None or device != "cpu":
        return
    try:
        x = torch.ones(2, 2, dtype=dtype)
        torch.nn.functional.linear(x, x, x[0])
    except RuntimeError as e:
        raise ExportError(f"error: torch {torch.__version__} cannot compute the {dtype} "
                          f"reference on the CPU ({e})") from None


def use_device(device):
    """Deterministic kernels on the CPU; on CUDA, PyTorch's defaults with
    TF32 off."""
    if device == "cpu":
        torch.use_deterministic_algorithms(True)
        return
    if not torch.cuda.is_available():
        raise ExportError(f"error: --device {device}: torch {torch.__version__} "
                          "sees no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


class _Float32AsFloat64(torch.overrides.TorchFunctionMode):
    """Runs a module's forward in float64 even where it asks for float32
    itself (`.float()` on a mask, `dtype=torch.float32`, `.to(torch.float32)`),
    with factories defaulting to float64."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.float:
            return args[0].to(torch.float64)
        if kwargs.get("dtype") is torch.float32:
            kwargs["dtype"] = torch.float64
        if func is torch.Tensor.to:
            args = tuple(torch.float64 if a is torch.float32 else a for a in args)
        return func(*args, **kwargs)

    def __enter__(self):
        self.default = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        return super().__enter__()

    def __exit__(self, *exc):
        torch.set_default_dtype(self.default)
        return super().__exit__(*exc)


class GradHistory:
    """Every step's optimizer gradients and their rounding noise nu (the
    largest distance over a tensor to the float64 gradient of the same
    weights and batch)."""

    def __init__(self):
        self.grads = {}   # "step<t>/NAME" -> fp32 gradient
        self.nu = []      # per step: {NAME: nu}

    def attach(self, model, state):
        """A float64 copy of `model`, whose weights `state` names."""
        self.model64 = copy.deepcopy(model).to(torch.float64)
        self.state64 = NamedState(self.model64)
        self.state = state

    def record(self, step, grads, backward, grad_clip):
        """`grads`: {NAME: the gradient the optimizer uses}; `backward(model)`
        runs the step's forward and backward on a module."""
        rng = torch.get_rng_state()
        with torch.no_grad():
            for n, t in self.state64.tensors.items():
                if t.is_floating_point():
                    t.copy_(self.state.tensors[n].detach().to(torch.float64))
                t.grad = None
        with _Float32AsFloat64():
            backward(self.model64)
        torch.set_rng_state(rng)
        g64 = {n: self.state64.tensors[n].grad for n in grads}
        if grad_clip:
            total = torch.sqrt(sum((g * g).sum() for g in g64.values() if g is not None))
            scale = min(1.0, grad_clip / (float(total) + 1e-6))
            g64 = {n: None if g is None else g * scale for n, g in g64.items()}
        nu = {}
        for n, g in grads.items():
            self.grads[f"step{step + 1}/{n}"] = g.detach().cpu().float().clone()
            ref = torch.zeros_like(g, dtype=torch.float64) if g64[n] is None else g64[n]
            nu[n] = float((g.detach().to(torch.float64) - ref).abs().max()) if g.numel() else 0.0
        self.nu.append(nu)


class Trainer:
    """PyTorch's side of a dsc training run: the model on the given weights,
    its optimizer and schedule, stepped one optimizer step at a time.
    `step(i)` takes step i (0-based) on the batches dsc-run takes it on, so
    a trainer whose state was set from a dsc checkpoint (`resume`) takes the
    same step dsc took next. With `history` (a GradHistory) every step's
    gradients and their rounding noise go to it."""

    def __init__(self, args, history=None):
        torch.manual_seed(0)
        torch.set_num_threads(args.threads)
        use_device(args.device)
        dtype = PRECISIONS[args.precision]
        check_precision(dtype, args.device)
        self.args, self.history = args, history
        self.model, example = build_model(args.model, parse_overrides(args.set))
        # Before load_weights: moving a module replaces its buffers, which the
        # state must see.
        self.model.to(args.device)
        self.state = load_weights(self.model, args.weights)
        self.tokens = self.samples = None
        if data.is_samples_file(args.data):
            self.samples = data.load_samples(args.data)
            # The names the exporter gives the graph's inputs.
            self.input_names = list(inspect.signature(
                self.model.forward).parameters)[:len(example)]
            check_sample_names(args.data, self.samples, self.input_names)
        else:
            self.tokens = data.load(args.data)
        if history:
            history.attach(self.model, self.state)
        self.master = MasterWeights(self.model, self.state, dtype) if dtype else None
        # The fp32 tensors the optimizer updates: masters in mixed precision.
        self.fp32 = self.master.tensors if self.master else self.state.tensors
        self.names = [n for n, t in self.fp32.items()
                      if self.state.role[n] == "parameter" and t.requires_grad]
        self.params = [self.fp32[n] for n in self.names]
        self.opt = make_optimizer(args, self.params)
        self.schedule = Schedule(args)
        self.model.train()

    def backward(self, module, step):
        """The forward and backward of optimizer step `step` on `module`;
        returns the step's loss. With --grad-accum N, DeepSpeed's gradient
        accumulation: N micro-batches (the next N batches of the data), each
        loss scaled by 1/N before its backward; the step's loss is their
        mean."""
        args, total = self.args, 0.0
        for micro in range(args.grad_accum):
            index = step * args.grad_accum + micro
            # With --ranks N, DeepSpeed's data parallelism: each rank's loss
            # on its own micro-batch, averaged (an MoE routes per micro-batch).
            loss = sum(self.forward(module, step, micro, r) for r in range(args.ranks)) \
                / args.ranks
            (loss / args.grad_accum if args.grad_accum > 1 else loss).backward()
            total += float(loss.detach())
        return total / args.grad_accum

    def forward(self, module, step, micro, rank):
        """The loss of `rank`'s share of micro-batch `micro` of step `step`
        (0-based), its dropouts drawing dsc's masks (dsc.philox): the
        share's first sample is sample (micro * ranks + rank) * per_rank of
        the step, as dsc-run deals them."""
        args = self.args
        index = step * args.grad_accum + micro
        per_rank = args.batch // args.ranks
        inputs = self.inputs(module, index, rank)
        with DscDropout(step + 1, micro * args.batch + rank * per_rank, per_rank, args.seed):
            return module(*inputs)

    def inputs(self, module, index, rank):
        """The model's inputs for rank `rank`'s share of micro-batch
        `index`, as dsc-run feeds them."""
        args = self.args
        if self.samples is None:
            return [torch.from_numpy(a).to(args.device)
                    for a in data.batch(self.tokens, index, args.batch, args.seq,
                                        rank, args.ranks)]
        rows = data.sample_batch(self.samples, index, args.batch, rank, args.ranks)
        dtype = next(t.dtype for t in module.parameters() if t.is_floating_point())
        tensors = [torch.from_numpy(rows[n]).to(args.device) for n in self.input_names]
        return [t.to(dtype) if t.is_floating_point() else t for t in tensors]

    def gradients(self):
        """{NAME: the gradient the optimizer uses}."""
        return {n: self.fp32[n].grad for n in self.names if self.fp32[n].grad is not None}

    def step(self, step, keep_grads=False):
        """Takes optimizer step `step` (0-based); returns (loss, lr, with
        `keep_grads` a copy of the gradients before clipping, else None)."""
        lr = self.schedule.lr(step - 1)
        for group in self.opt.param_groups:
            group["lr"] = lr
        self.opt.zero_grad(set_to_none=True)
        if self.master:
            self.master.to_module()
        loss = self.backward(self.model, step)
        if self.master:
            self.master.take_gradients()
        grads = {n: g.detach().clone() for n, g in self.gradients().items()} \
            if keep_grads else None
        if self.args.grad_clip:
            torch.nn.utils.clip_grad_norm_(self.params, self.args.grad_clip)
        if self.history:
            self.history.record(step, self.gradients(),
                                lambda module: self.backward(module, step),
                                self.args.grad_clip)
        self.opt.step()
        return loss, lr, grads

    def resume(self, tensors, steps_taken):
        """Sets the state dsc-run saved after `steps_taken` steps: `tensors`
        maps checkpoint names to arrays (NAME or, in mixed precision, the
        master NAME.master; Adam's NAME.exp_avg and NAME.exp_avg_sq, SGD's
        NAME.momentum_buffer). A tensor the checkpoint lacks keeps its
        value."""
        with torch.no_grad():
            for n, t in self.fp32.items():
                src = tensors.get(n + ".master", tensors.get(n))
                if src is not None:
                    t.copy_(torch.from_numpy(src.copy()).reshape(t.shape))
            self.opt.state.clear()
            if steps_taken == 0:
                return
            for n, p in zip(self.names, self.params):
                moments = {k: tensors.get(f"{n}.{k}")
                           for k in ("exp_avg", "exp_avg_sq", "momentum_buffer")}
                state = {k: torch.from_numpy(v.copy()).reshape(p.shape).to(p.device)
                         for k, v in moments.items() if v is not None}
                if self.args.optim != "sgd":
                    state["step"] = torch.tensor(float(steps_taken))
                self.opt.state[p] = state

    def final(self):
        """{NAME: tensor} of the state now: the fp32 masters in mixed
        precision."""
        return {n: self.fp32.get(n, t).detach().cpu() for n, t in self.state.tensors.items()}


def train(args, history=None):
    """Returns the losses, the first step's gradients, the final state, the
    learning rates and the wall time of every step. With `history` (a
    GradHistory) every step's gradients and their rounding noise go to
    it."""
    trainer = Trainer(args, history)
    losses, grads, lrs, times = [], None, [], []
    for step in range(args.steps):
        sync(args.device)
        start = time.perf_counter()
        loss, lr, step_grads = trainer.step(step, keep_grads=step == 0)
        sync(args.device)
        times.append(time.perf_counter() - start)
        losses.append(loss)
        lrs.append(lr)
        if step == 0:
            grads = {n: g.cpu() for n, g in step_grads.items()}
    return losses, grads, trainer.final(), lrs, times


def check_sample_names(path, samples, names):
    """A samples file must hold exactly the forward's inputs."""
    for name in names:
        if name not in samples:
            raise ExportError(f"{path}: error: no tensor '{name}' (the model's "
                              f"inputs: {', '.join(names)})")
    for name in sorted(samples):
        if name not in names:
            raise ExportError(f"{path}: error: tensor '{name}' is not an input of "
                              f"the model (its inputs: {', '.join(names)})")


def write_history(history, args, lrs):
    """GOLD/grad_history.safetensors and GOLD/grad_history.json."""
    safetensors.save(history.grads, os.path.join(args.output, "grad_history.safetensors"))
    opt = make_optimizer(args, [torch.zeros(1, requires_grad=True)]).defaults
    doc = {"optim": args.optim, "betas": list(opt["betas"]), "eps": opt["eps"],
           "weight_decay": opt["weight_decay"], "precision": args.precision,
           "steps": args.steps, "lrs": lrs, "nu": history.nu}
    path = os.path.join(args.output, "grad_history.json")
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def parser():
    p = argparse.ArgumentParser(prog="python3 -m dsc.golden", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--weights", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--batch", type=int, required=True, help="global batch (sequences)")
    p.add_argument("--seq", type=int, help="sequence length (token data only)")
    p.add_argument("--optim", choices=["adamw", "adam", "sgd"], default="adamw")
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--betas", type=float, nargs=2, default=[0.9, 0.999])
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--weight-decay", type=float, default=None,
                   help="default: 0.01 for adamw (PyTorch's), 0 otherwise")
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--ranks", type=int, default=1,
                   help="average the losses of this many data-parallel micro-batches "
                        "(DeepSpeed's semantics; the default 1 is the global batch)")
    p.add_argument("--grad-accum", type=int, default=1,
                   help="micro-batches per optimizer step (DeepSpeed's "
                        "gradient_accumulation_steps); --batch is one micro-batch")
    p.add_argument("--grad-clip", type=float, default=0.0,
                   help="clip_grad_norm_ to this global 2-norm before each step (0: off)")
    sched = p.add_argument_group("learning-rate schedule (DeepSpeed's; --lr is "
                                 "warmup-lr's default peak and warmup-cosine-lr's base)")
    sched.add_argument("--scheduler", default="none",
                       choices=["none", "warmup-lr", "warmup-decay-lr", "warmup-cosine-lr"])
    sched.add_argument("--warmup-min-lr", type=float, default=0.0)
    sched.add_argument("--warmup-max-lr", type=float, default=None)
    sched.add_argument("--warmup-num-steps", type=int, default=1000)
    sched.add_argument("--warmup-type", choices=["log", "linear"], default="log")
    sched.add_argument("--total-num-steps", type=int, default=None)
    sched.add_argument("--warmup-min-ratio", type=float, default=0.0)
    sched.add_argument("--cos-min-ratio", type=float, default=0.0001)
    p.add_argument("--precision", choices=list(PRECISIONS), default="fp32",
                   help="compute in bf16 or fp16 with fp32 master weights (DeepSpeed's "
                        "mixed precision; fp16 needs 16-bit GEMMs in torch's CPU kernels)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED,
                   help="dsc-run's --seed: the run's dropout masks (dsc.philox)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="where PyTorch trains (cuda: TF32 off, PyTorch's default, "
                        "non-deterministic kernels)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="the same build() overrides as the export")
    p.add_argument("-o", "--output", required=True)
    return p


def parse_args(argv=None):
    """The command line's arguments, checked."""
    p = parser()
    args = p.parse_args(argv)
    if args.ranks < 1 or args.batch % args.ranks:
        p.error(f"--ranks {args.ranks} must be positive and divide --batch {args.batch}")
    if args.seq is None and not data.is_samples_file(args.data):
        p.error(f"--seq is required with token data ({args.data})")
    if args.grad_accum < 1:
        p.error(f"--grad-accum must be at least 1, got {args.grad_accum}")
    if args.warmup_num_steps <= 0:
        p.error(f"--warmup-num-steps must be positive, got {args.warmup_num_steps}")
    if args.scheduler in ("warmup-decay-lr", "warmup-cosine-lr") and not args.total_num_steps:
        p.error(f"--scheduler {args.scheduler} needs --total-num-steps")
    return args


def main(argv=None):
    args = parse_args(argv)
    try:
        for path in (args.model, args.weights, args.data):
            if not os.path.isfile(path):
                raise ExportError(f"{path}: error: no such file")
        history = GradHistory() if args.optim in ("adam", "adamw") \
            and args.device == "cpu" else None
        losses, grads, final, lrs, _ = train(args, history)
    except (ExportError, safetensors.SafetensorsError, ValueError) as e:
        print(e, file=sys.stderr)
        return 1
    os.makedirs(args.output, exist_ok=True)
    config = {k: v for k, v in vars(args).items() if k not in ("output",)}
    with open(os.path.join(args.output, "losses.json.tmp"), "w") as f:
        json.dump({"losses": losses, "loss_bits": [float_bits(x) for x in losses],
                   "lrs": lrs,
                   "torch_version": torch.__version__, "config": config}, f, indent=1)
        f.write("\n")
    os.replace(os.path.join(args.output, "losses.json.tmp"),
               os.path.join(args.output, "losses.json"))
    safetensors.save(grads, os.path.join(args.output, "grads_step1.safetensors"))
    safetensors.save(final, os.path.join(args.output, "weights_final.safetensors"))
    if history:
        write_history(history, args, lrs)
    print("\n".join(f"step={i} loss={x:.6f} lr={lr:.9g}"
                    for i, (x, lr) in enumerate(zip(losses, lrs))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
