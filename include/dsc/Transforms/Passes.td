//===- Passes.td - dsc passes ----------------------------------*- tablegen -*-===//

#ifndef DSC_TRANSFORMS_PASSES_TD
#define DSC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PrintSummary : Pass<"dsc-print-summary", "::mlir::ModuleOp"> {
  let summary = "prints what a model module contains";
  let description = [{
    Prints a one-screen summary of the module to standard error and leaves the
    IR unchanged: every `dsc.state` by name with its role, shape and dtype;
    the parameter and buffer totals (elements and bytes); each graph's named
    inputs and outputs; and the number of operations of each kind.

    Example:

    ```
    dsc-opt examples/gpt2_tiny.mlir --dsc-print-summary
    ```
  }];
}

def DataParallel : Pass<"dsc-data-parallel", "::mlir::ModuleOp"> {
  let summary = "makes the graph's outputs global over data-parallel ranks";
  let description = [{
    Each of `world-size` ranks runs the graph on its own micro-batch (the
    graph's input shapes). This pass records the world size on the module
    (`dsc.world_size`) and rewrites each graph output so that every rank
    returns the value of the whole global batch, with explicit
    `dsc.all_reduce`s:

    * an output computed by `dsc.cross_entropy` with `reduction = mean`
      becomes the global mean over every non-ignored target token:
      `all_reduce(sum of losses) / all_reduce(count of targets)`, exactly
      PyTorch's loss on the global batch;
    * any other output becomes the mean of the ranks' values,
      `all_reduce(x) / world-size` (a loss with auxiliary terms, e.g. a
      mixture-of-experts balance loss, is averaged as DeepSpeed averages it).

    With `world-size=1` only the attribute is set.
  }];
  let options = [
    Option<"worldSize", "world-size", "int64_t", /*default=*/"1",
           "number of data-parallel ranks">,
  ];
}

def Autodiff : Pass<"dsc-autodiff", "::mlir::ModuleOp"> {
  let summary = "appends the gradient of the loss with respect to every parameter";
  let description = [{
    Reverse-mode differentiation of each graph whose single result is the
    scalar float loss (`dsc.output = "loss"`), with respect to every
    `dsc.state` of role `parameter`. Only values that depend on a parameter
    (through `dsc.load`) get cotangents; the seed is `d loss = 1`; each op on
    the way back builds its operands' cotangents through its
    `GradientOpInterface`, and cotangents of a value used several times (a
    tied parameter loaded twice) are summed. An op on that path without the
    interface, or whose rule cannot apply (a strided slice), is an error
    naming it.

    The graph gets one result per parameter, in `dsc.state` order, after the
    loss: the gradient, of the state's type, with the result attributes
    `dsc.output = "grad.<name>"` and `dsc.gradient_of = @<name>`. A parameter
    that does not reach the loss gets zeros. When the module's
    `dsc.world_size` is N > 1 (set by `--dsc-data-parallel`, which runs
    first), parameters are replicated, so each rank's gradient is partial:
    every gradient is summed over the ranks with `dsc.all_reduce`. The
    data-parallel loss is already the global mean, so the sum is the
    gradient of the global loss. Unused forward and backward values are
    removed at the end.

    `seed` and `seed-state` seed the backward with the loss scale (fp16
    loss scaling, `--dsc-optimizer=loss-scaling=1`): `d loss = seed`, or
    with `seed-state=NAME` the value of that scalar `dsc.state` (declared
    as optimizer state, of the loss's type, when absent), `seed` while it is
    zero (the state starts at zero). The module records them as
    `dsc.backward_seed = {value, state}` for the optimizer to check.

    Example:

    ```
    dsc-opt model.mlir --dsc-data-parallel=world-size=2 --dsc-autodiff
    ```
  }];
  let options = [
    Option<"seed", "seed", "double", /*default=*/"1.0",
           "the backward's seed d loss (the initial loss scale)">,
    Option<"seedState", "seed-state", "std::string", /*default=*/"\"\"",
           "seed with this scalar state's value instead, `seed` while it "
           "is zero">,
  ];
}

def Optimizer : Pass<"dsc-optimizer", "::mlir::ModuleOp"> {
  let summary = "updates the parameters from their gradients in the graph";
  let description = [{
    Consumes the gradient results that `--dsc-autodiff` adds (result
    attribute `dsc.gradient_of = @param`) and replaces them by the optimizer
    step, with PyTorch's semantics, written back with `dsc.store`:

    * `sgd`: `g += weight_decay * p`; with `momentum` μ > 0,
      `buf = μ * buf + g` and `g = buf` (dampening 0, no Nesterov);
      `p -= lr * g`;
    * `adam`: `g += weight_decay * p` (L2); `m = β1 m + (1-β1) g`,
      `v = β2 v + (1-β2) g²`; `p -= lr / (1-β1^t) * m / (sqrt(v) /
      sqrt(1-β2^t) + eps)`;
    * `adamw`: as adam without the L2 term, after the decoupled decay
      `p *= 1 - lr * weight_decay` (PyTorch's default 0.01).

    `grad-clip` > 0 first scales every gradient by
    `min(grad-clip / (‖g‖ + 1e-6), 1)`, ‖g‖ the 2-norm over all parameters
    (`torch.nn.utils.clip_grad_norm_`). Optimizer state is declared as
    `dsc.state optimizer`, named after its parameter so that checkpoints
    carry it: `<param>.exp_avg`, `<param>.exp_avg_sq`,
    `<param>.momentum_buffer`, and the step count `optimizer.step` (f32,
    exact to 2^24 steps). It starts at zero.

    `scheduler` computes the learning rate in the graph from
    `optimizer.step` with DeepSpeed's definitions
    (deepspeed/runtime/lr_schedules.py), W = max(2, warmup-num-steps), T =
    total-num-steps, `it` = steps applied before this one - 1 (DeepSpeed
    sets the lr of iteration -1 when the scheduler is built and steps it
    after each applied optimizer step):
    `warmup(it)` = `log(it+1)/log(W)` (`warmup-type=log`) or `it/W`
    (`linear`);
    * `warmup-lr`: `min + (max-min) * (it < W ? warmup(it) : 1)`;
    * `warmup-decay-lr`: as warmup-lr, then
      `max(0, (T-it) / max(1, T-W))` instead of 1;
    * `warmup-cosine-lr`: `lr * ratio`, ratio `r0 + (1-r0) warmup(it)`
      during warmup, then `max(0, rc + (1-rc) (1 + cos(pi p)) / 2)`,
      `p = min(1, (it-W+1) / max(1, T-W))`; 0 for the first step.
    With a schedule the lr is the schedule's, as in DeepSpeed (`lr` is
    warmup-lr's default peak and warmup-cosine-lr's base). A schedule's
    options without it, or another schedule's, are errors.

    The step returns the learning rate it used as an extra scalar output
    `dsc.output = "lr"`, which `dsc-run` prints.

    `grad-accum` N > 1 accumulates gradients over N calls of the graph, as
    DeepSpeed's `gradient_accumulation_steps`: each call is one
    micro-batch; its gradient divided by N (DeepSpeed scales each
    micro-batch's loss by 1/N) is added to `dsc.state gradient
    @"<param>.grad_acc"`, and `optimizer.micro_step` counts the calls. On
    the N-th call the update runs on the accumulated gradients (clipping
    included) and the accumulators and the count return to zero; on the
    others every parameter and optimizer state is stored back unchanged
    (`dsc.select`, bit for bit) and `optimizer.step`, hence the schedule,
    does not advance. The module gets `dsc.grad_accum = N`, which the
    artifact carries so that `dsc-run` runs N calls per step.

    `loss-scaling` (fp16) follows DeepSpeed's loss scaler: the backward
    must be seeded with the scale (`--dsc-autodiff="seed=2^power
    seed-state=optimizer.loss_scale"`, or `seed=<loss-scale>` for a static
    scale: checked through `dsc.backward_seed`). An overflow is an inf or
    nan in any gradient after the all-reduce (and the accumulation), found
    branch-free as `sum(g * 0) != 0`, so every rank agrees; the step is
    then skipped: every state is stored back bit for bit and
    `optimizer.step` (the schedule) does not advance. Otherwise the
    gradients are multiplied by 1/scale before clipping and the update.
    A dynamic scale lives in `optimizer.loss_scale` (0, as optimizer state
    starts, means 2^initial-scale-power), `optimizer.hysteresis` (read as
    the option while the scale is 0) and `optimizer.good_steps`: on an
    overflow the scale halves (not below min-loss-scale) once hysteresis
    is down to 1, else hysteresis drops by one; after loss-scale-window
    clean steps since the last overflow the scale doubles and hysteresis is
    refilled (DeepSpeed's DynamicLossScaler.update_scale). The step returns
    the scale it used (`loss_scale`) and whether it was skipped (`skipped`,
    1 or 0), which `dsc-run` prints.

    Example: `dsc-opt m.mlir --dsc-autodiff --dsc-optimizer="optimizer=sgd
    lr=0.1 momentum=0.9"`.
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"adamw\"",
           "adamw, adam or sgd">,
    Option<"lr", "lr", "double", /*default=*/"1e-3", "learning rate">,
    ListOption<"betas", "betas", "double",
               "Adam's (beta1, beta2); default 0.9,0.999">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "Adam's epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"-1",
           "weight decay; default 0.01 for adamw (PyTorch's), 0 otherwise">,
    Option<"momentum", "momentum", "double", /*default=*/"0",
           "SGD momentum">,
    Option<"gradClip", "grad-clip", "double", /*default=*/"0",
           "clip gradients to this global 2-norm; 0 turns clipping off">,
    Option<"lossScaling", "loss-scaling", "bool", /*default=*/"false",
           "fp16 loss scaling (DeepSpeed's fp16 section)">,
    Option<"lossScale", "loss-scale", "double", /*default=*/"0",
           "static loss scale; 0 is dynamic">,
    Option<"initialScalePower", "initial-scale-power", "int64_t",
           /*default=*/"16", "dynamic: the first scale is 2^this">,
    Option<"lossScaleWindow", "loss-scale-window", "int64_t",
           /*default=*/"1000", "dynamic: clean steps before the scale doubles">,
    Option<"hysteresis", "hysteresis", "int64_t", /*default=*/"2",
           "dynamic: overflows tolerated before the scale halves">,
    Option<"minLossScale", "min-loss-scale", "double", /*default=*/"1",
           "dynamic: the scale never halves below this">,
    Option<"gradAccum", "grad-accum", "int64_t", /*default=*/"1",
           "micro-batches per optimizer step (gradient accumulation)">,
    Option<"scheduler", "scheduler", "std::string", /*default=*/"\"none\"",
           "learning-rate schedule: none, warmup-lr, warmup-decay-lr or "
           "warmup-cosine-lr (DeepSpeed's)">,
    Option<"warmupMinLr", "warmup-min-lr", "double", /*default=*/"-1",
           "WarmupLR/WarmupDecayLR start lr; default 0">,
    Option<"warmupMaxLr", "warmup-max-lr", "double", /*default=*/"-1",
           "WarmupLR/WarmupDecayLR peak lr; default lr for warmup-lr, "
           "0.001 for warmup-decay-lr (DeepSpeed's)">,
    Option<"warmupNumSteps", "warmup-num-steps", "int64_t", /*default=*/"-1",
           "warmup steps (at least 2 are used); default 1000">,
    Option<"warmupType", "warmup-type", "std::string", /*default=*/"\"\"",
           "warmup shape: log (default) or linear">,
    Option<"totalNumSteps", "total-num-steps", "int64_t", /*default=*/"-1",
           "WarmupDecayLR/WarmupCosineLR: total training steps (required)">,
    Option<"warmupMinRatio", "warmup-min-ratio", "double", /*default=*/"-1",
           "WarmupCosineLR: start ratio of lr; default 0">,
    Option<"cosMinRatio", "cos-min-ratio", "double", /*default=*/"-1",
           "WarmupCosineLR: end ratio of lr; default 0.0001">,
  ];
}

def PlanMemory : Pass<"dsc-plan-memory", "::mlir::func::FuncOp"> {
  let summary = "places every runtime buffer at a static arena offset";
  let description = [{
    Replaces each `dscrt.alloc` by a `dscrt.buffer` at an offset of one
    per-rank arena, reusing memory between buffers whose live ranges do not
    overlap (a buffer lives from its first to its last use in program order;
    uses through `dscrt.view`s count), and sets the function's
    `dscrt.arena_bytes`. That figure is the per-rank activation peak the
    runtime's allocator must reproduce. Offsets are multiples of 256 bytes,
    the runtime allocator's rounding. Placement is best-fit by decreasing
    size (see include/dsc/Analysis/BufferPlan.h); `print` reports the plan.
  }];
  let dependentDialects = ["::mlir::dscrt::DSCRTDialect"];
  let options = [
    Option<"print", "print", "bool", /*default=*/"false",
           "print the arena size and the live-bytes lower bound to stderr">,
  ];
}

#endif // DSC_TRANSFORMS_PASSES_TD
