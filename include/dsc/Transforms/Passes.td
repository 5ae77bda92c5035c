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

def RunLogging : Pass<"dsc-run-logging", "::mlir::ModuleOp"> {
  let summary = "records how dsc-run logs the steps (steps_per_print, csv_monitor)";
  let description = [{
    Sets the module attributes `dsc.steps_per_print` and `dsc.csv_monitor`,
    which the C++ and CUDA emitters compile into the artifact
    (`dsc_artifact_run_settings`) and dsc-run takes as the defaults of
    `--steps-per-print` and `--csv-monitor`. A DeepSpeed config's
    `steps_per_print` and `csv_monitor` set these options.
  }];
  let options = [
    Option<"stepsPerPrint", "steps-per-print", "int64_t", /*default=*/"0",
           "print a step line every N steps (0: dsc-run's default)">,
    Option<"csvMonitor", "csv-monitor", "std::string", /*default=*/"\"\"",
           "directory of DeepSpeed csv_monitor files (empty: none)">,
  ];
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

    With `grad-accum=N` > 1 (gradient accumulation) the cross-entropy is
    averaged like any other output: each rank's micro-batch loss is its own
    token mean, as in DeepSpeed, and the step's loss is the mean over the
    ranks (and `--dsc-optimizer` averages it over the micro-batches). The
    gradient then needs no global token count, so no micro-batch
    communicates: `--dsc-optimizer` reduces the loss with the gradients,
    once per optimizer step. Both definitions agree whenever every rank's
    micro-batch counts the same number of targets (always, unless targets
    hold the ignore index).

    With `world-size=1` only the attribute is set.

    The device mesh: `tensor-parallel=T` and `pipeline-parallel=P` divide
    the world into T * P * D ranks, D = world-size / (T * P) the
    data-parallel degree, laid out as Megatron lays them: tensor innermost
    (the T consecutive ranks of r / T share each layer's weights), then
    data, then pipeline. With T > 1 the pass records T on the module
    (`dsc.tensor_parallel_size`, which `--dsc-tensor-parallel` splits the
    blocks by) and the outputs above are averaged over the data group (the
    D ranks with the same r % T) instead of the world: the ranks of a
    tensor group compute the same loss from the same micro-batch. With
    P > 1 it records P (`dsc.pipeline_parallel_size`, which
    `--dsc-pipeline-parallel` cuts the graph by) and the data group is the
    D ranks of the same tensor index and stage. A world size T * P does not
    divide is an error.

    `micro-batch=B` > 0 checks that every graph input (`dsc.input`) has
    the leading dimension B, the per-rank micro-batch a DeepSpeed config
    asks for (`train_micro_batch_size_per_gpu`): the exported shapes fix
    it, so a config that disagrees is an error naming the input.
  }];
  let options = [
    Option<"worldSize", "world-size", "int64_t", /*default=*/"1",
           "number of data-parallel ranks">,
    Option<"microBatch", "micro-batch", "int64_t", /*default=*/"0",
           "per-rank micro-batch the inputs must have (0: not checked)">,
    Option<"gradAccum", "grad-accum", "int64_t", /*default=*/"1",
           "micro-batches per optimizer step (> 1: each rank's loss is its "
           "own mean)">,
    Option<"tensorParallel", "tensor-parallel", "int64_t", /*default=*/"1",
           "ranks that split each layer's weights (Megatron's tensor "
           "parallelism; innermost in the mesh)">,
    Option<"pipelineParallel", "pipeline-parallel", "int64_t",
           /*default=*/"1",
           "pipeline stages (outermost in the mesh)">,
  ];
}

def PipelineParallel : Pass<"dsc-pipeline-parallel", "::mlir::ModuleOp"> {
  let summary = "cuts the forward graph into pipeline stages and keeps one stage's";
  let description = [{
    Pipeline parallelism as a rewrite of the forward graph, after
    `--dsc-data-parallel` (which records the mesh's P stages as
    `dsc.pipeline_parallel_size`) and before `--dsc-autodiff` (which then
    derives each stage's backward, the transfers of the gradients
    included, from the ops' own rules).

    The model's repeated blocks (found by their states' names, as
    `--dsc-checkpoint-activations` finds them) are cut into P contiguous
    stages that minimise the largest stage's matrix-product FLOPs
    (PipelineStages.h); the ops before the first block (the embeddings) join
    the first stage and those after the last (final norm, head, loss) the
    last. More stages than blocks is an error.

    The module keeps stage `stage`'s program only: its states (a weight
    that two stages read, GPT-2's tied embedding and head, is declared by
    both), and its ops, repeated for each of the `micro-batches` micro-batches
    of an optimizer step, which the step now reads at once (each graph
    input's leading dimension is multiplied by their number; micro-batch m
    is rows [m * b, (m + 1) * b)). Values that a later stage reads are sent
    with `dsc.pipeline_send` (to `next`) and received with
    `dsc.pipeline_recv` (from `previous`), relayed through the stages in
    between; loads and constants are repeated instead. Each forward op of a
    micro-batch carries `dsc.micro_batch` for `--dsc-pipeline-schedule`;
    what depends on no micro-batch (a weight's transpose, the position
    embeddings) is computed once.

    The stage's loss is the mean of its micro-batches' losses on the last
    stage and zero on the others (the sum of its sends' zeros, through
    which autodiff reaches what they send); the graph returns their sum over
    the pipeline group, the step's loss on every stage. The loss must be the
    graph's first output. Each output after it (the experts' `aux_loss`,
    `moe.exp_counts.<layer>` and `moe.dropped`) is returned by the stage
    that computes it, not sent across the cuts: its value for the last
    micro-batch (what a single rank's gradient accumulation returns from
    the step's last call), summed over the pipeline group with the other
    stages' zeros, so that every rank returns it. A value such an output
    reads from an earlier stage (stage 0's l_aux in the last stage's loss)
    crosses the cuts as any other value does.

    `chunks` (V, Megatron's virtual pipeline size) cuts the blocks into
    V·P chunks instead, balanced alike, for the interleaved schedule: rank
    r holds chunks r, r + P, ..., r + (V - 1)P, and each chunk sends to the
    next rank's, the last rank's chunk c to rank 0's chunk c + 1 (the
    pipeline group is a ring). Each forward op and transfer of a chunk
    other than the first also carries `dsc.pipeline_chunk`; the module
    records V as `dsc.pipeline_chunks`. V·P above the blocks, or M not a
    multiple of P (Megatron's rule), is an error.

    `print` reports each block's FLOPs, parameter and activation bytes, and
    each stage's blocks, costs and bytes sent per micro-batch.
  }];
  let options = [
    Option<"stage", "stage", "int64_t", /*default=*/"0",
           "the pipeline stage whose program the module keeps">,
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"1",
           "micro-batches per optimizer step (the gradient accumulation "
           "count), all run by one call of the step">,
    Option<"chunks", "chunks", "int64_t", /*default=*/"1",
           "model chunks per rank (V > 1: the interleaved schedule's cut "
           "into V·P chunks)">,
    Option<"print", "print", "bool", /*default=*/"false",
           "print the cost of each block and stage">,
  ];
}

def PipelineSchedule : Pass<"dsc-pipeline-schedule", "::mlir::ModuleOp"> {
  let summary = "orders a pipeline stage's micro-batches as its schedule runs them";
  let description = [{
    After `--dsc-pipeline-parallel`, `--dsc-autodiff` and `--dsc-optimizer`:
    reorders the stage's program into the action list that the schedule
    (PipelineSchedule.h) gives its stage. The forward of micro-batch m is
    the ops marked `dsc.micro_batch = m`; its backward is every other op
    that depends on them and on no other micro-batch (a transfer counts as
    depending on its micro-batch). Each action's ops keep their order;
    what depends on no micro-batch runs first, and what depends on several
    (the sums of the micro-batches' weight gradients, the loss, the
    optimizer) after the last action, in program order, as does every
    sum over the pipeline group (an output of one micro-batch, or the
    zeros of a stage that does not compute it, among them): the stages
    meet in it only after their schedules. What depends on
    no micro-batch but follows an op with effects that runs after the last
    action (ZeRO-3's gathers of the parameters for the backward follow the
    loss's collectives) runs just before the first action that reads it;
    every rank of a stage's data group runs the stage's program, so their
    collectives keep one order.

    `schedule`: `gpipe` (every forward, then every backward), `1f1b`
    (DeepSpeed's: P - 1 - s warm-up forwards on stage s, then one forward
    and one backward in turn, which bounds the micro-batches whose
    activations a stage holds by P - s) or `zb-h1` (zero-bubble H1: 1F1B
    with each backward split into its input-gradient part B, what the
    previous stage waits for, and its weight-gradient part W, which stage
    s runs s micro-batches later, filling the cool-down bubble) or
    `interleaved` (Megatron's interleaved 1F1B over the V model chunks per
    rank that `--dsc-pipeline-parallel=chunks=V` cut: the forwards walk the
    micro-batches in groups of P through chunk 0, then chunk 1, ..., the
    backwards the same groups through the chunks in reverse; an action is
    then a micro-batch on one chunk). The interleaved schedule with one
    chunk per rank, and another schedule with several, are errors.

    `print` shows the stage's action list and what PipelineSchedule's
    simulation measures of the schedule, with a backward twice as long as
    the forward (for ZB-H1, B and W as long as the forward each): its
    bubble as a fraction of the ideal time ((P - 1) / M for GPipe and 1F1B,
    (P - 1) / (V M) interleaved, (P - 1)(F + B - W) / (M (F + B + W)) for
    ZB-H1) and the most
    micro-batches whose activations each stage holds at once (M for GPipe,
    P - s for 1F1B and ZB-H1).
  }];
  let options = [
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "gpipe, 1f1b, zb-h1 or interleaved">,
    Option<"print", "print", "bool", /*default=*/"false",
           "print the stage's actions, the bubble and the micro-batches in "
           "flight per stage">,
  ];
}

def MixedPrecision : Pass<"dsc-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "computes the forward graph in bf16 or fp16, with fp32 master weights";
  let description = [{
    DeepSpeed's `bf16` / `fp16` training with fp32 master weights, as a
    rewrite of the forward graph that runs after the forward rewrites
    (and `--dsc-data-parallel`) and before `--dsc-autodiff`. The model
    states are laid out as DeepSpeed holds them (ZeRO's 2 + 2 + 12 bytes
    per parameter):

    * every float parameter `@p` becomes a 16-bit state, loaded as such by
      the forward and backward pass (the "16-bit parameters" that ZeRO
      stage 3 shards and gathers), and a new fp32 state `@p.master` (role
      `master`) holds its master weight, which `--dsc-optimizer` updates
      and rounds (to nearest even) into `@p`;
    * float buffers stay fp32 states; where one is loaded a `dsc.convert`
      makes its 16-bit copy, one per state;
    * every float value of the graph is computed in the chosen type:
      results are retyped, float constants rebuilt (rounded to nearest
      even), float graph inputs converted on entry (DeepSpeed casts floating
      inputs);
    * the signature is unchanged: float outputs, the loss, are converted
      back to their declared type (fp32).

    `--dsc-autodiff` then differentiates the 16-bit graph: cotangents and
    the parameters' gradients are 16-bit; on more than one rank the
    gradient is all-reduced in 16 bits (DeepSpeed's default
    `communication_data_type`). The optimizer widens it to fp32 for the
    update. The kernels widen 16-bit elements to float and accumulate
    softmax, layer-norm, reduction and cross-entropy sums in double, rounding
    once per op result, as PyTorch's 16-bit CPU kernels compute in float.

    `master-weights=0` (the pipeline's evaluation and gradient steps,
    which update nothing) narrows the parameters without declaring their
    masters. `precision=fp32` leaves the module unchanged. The pass refuses a graph
    that already has gradients, updates or master weights.

    Example:

    ```
    dsc-opt model.mlir --dsc-data-parallel=world-size=2 \
        --dsc-mixed-precision=precision=bf16 --dsc-autodiff
    ```
  }];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"bf16\"",
           "fp32 (no change), bf16 or fp16">,
    Option<"masterWeights", "master-weights", "bool", /*default=*/"true",
           "declare each parameter's fp32 master weight (off for a graph "
           "that is not trained: evaluation, gradients)">,
  ];
}

def EvalMode : Pass<"dsc-eval-mode", "::mlir::ModuleOp"> {
  let summary = "what model.eval() changes: every dropout becomes the identity";
  let description = [{
    Replaces each `dsc.dropout` by its input, as PyTorch's `model.eval()`
    turns `nn.Dropout` off, and erases a `dsc.step_key` nothing reads then.
    The pipeline runs it for evaluation artifacts (`dsc-compile --eval`), so
    they are the model's eval graph (and attention without dropout fuses).
    A training artifact evaluated with `dsc-run --eval` needs no rewrite:
    its dropouts read `key[3] = 0` and pass their input through.

    ```mlir
    %key = dsc.step_key : tensor<4xi64>
    %d = dsc.dropout %x, %key, p = 1.000000e-01, seed = 0, samples = 2
        : tensor<2x8xf32>
    %y = dsc.tanh %d : tensor<2x8xf32>
    // becomes
    %y = dsc.tanh %x : tensor<2x8xf32>
    ```
  }];
}

def TensorParallel : Pass<"dsc-tensor-parallel", "::mlir::ModuleOp"> {
  let summary = "splits attention and feed-forward blocks over a tensor group (Megatron)";
  let description = [{
    Megatron-LM's tensor parallelism as a rewrite of the forward graph, over
    the module's `dsc.tensor_parallel_size` T ranks of each tensor group
    (set by `--dsc-data-parallel tensor-parallel=T`; the pass does nothing
    without it). It finds the blocks by their structure, not by names:

    * a feed-forward block, as `--dsc-moe` finds it: a linear map of an
      elementwise chain of one or two linear maps of one value `x`;
    * an attention block: a linear map of a graph of reshapes, slices,
      transposes, batched matrix products, a softmax, dropouts and
      elementwise ops whose only other inputs are constants, buffers and
      the step's key, fed by one to three linear maps of one value `x` (a
      fused query/key/value projection, or three), the output as wide as
      `x` (a dropout runs on the rank's heads, drawing their part of the
      single-device mask: `dsc.dropout ... part %r of T`);

    every weight and bias a parameter no other block reads. Each block is
    split Megatron's way: its first linear maps become column-parallel (each
    rank computes its slice of their output features: for attention, its
    heads of each of query, key and value), the graph between them runs on
    the slices, and the last linear map becomes row-parallel (each rank
    multiplies its slice of the input features; the partial products are
    summed with `dsc.all_reduce ... over tensor`, then the bias is added
    once). The block's input enters through `dsc.replicate ... over tensor`
    (Megatron's f: identity forward, all-reduce backward); the all-reduce
    is Megatron's g (identity backward): autodiff, which runs later, derives
    both from the ops' own gradients. Per block that is one all-reduce of
    the block's output forward and one of its input's gradient backward.

    The split weights become the rank's slices (`partition_group` tensor,
    `partition_of` the whole shape, `partition_blocks` the interleaving of
    a fused weight), which the runtime reads from the whole weights file
    and checkpoints store whole.

    The slicing is found by following the split through the block: the
    projected features are [B, T, C] for the fewest blocks B that every op
    keeps whole (3 for a fused query/key/value weight); a block that no
    slicing fits (T does not divide the heads or the hidden width) is an
    error at the block's last linear map, and so is a forward graph with no
    block to split.

    With `vocab-parallel`, the token embedding and the head that produces
    the logits of a cross-entropy are split by vocabulary rows too
    (Megatron's VocabParallelEmbedding and vocab_parallel_cross_entropy):
    each rank holds V / T rows of the table (and of an untied head), its
    lookup masks the ids outside its rows and the lookups are summed with
    `dsc.all_reduce over tensor`; the head computes the rank's V / T logits
    and the loss is computed from them with three all-reduces over the
    tensor group (the largest logit, `maximum`; the sum of the shifted
    exponentials; the target's shifted logit), never gathering the logits.
    A vocabulary that T does not divide is an error at the cross-entropy.

    With `sequence-parallel` (Megatron-LM's `--sequence-parallel`), the
    activations between the split blocks are held split along the sequence
    over the tensor group: rank r holds tokens [r * s/T, (r + 1) * s/T) of
    every sample (the sequence is the second dimension of the graph's
    inputs, [b, s]; an activation is [b, s, ...] or [b * s, ...]). Each
    block's `dsc.all_reduce` becomes a `dsc.reduce_scatter` of the sequence
    and its `dsc.replicate` a `dsc.all_gather` of it (whose gradient,
    derived by autodiff, is a reduce-scatter): the same bytes as the two
    all-reduces. The token-wise ops between the blocks (layer norms,
    residual adds, biases, reshapes, reductions over the features) run on
    the rank's s/T tokens. The region begins at the first value the first
    block's input is computed from token by token (the embeddings' sum),
    where each rank takes its shard (`dsc.local_shard`), and ends where a
    shard meets an op that is not token-wise (the head): an all-gather
    `alike` restores the whole. A parameter that the shards' work reads
    whole (a norm's weight, a bias) enters through a `dsc.replicate` over
    the tensor group, so that its gradient, computed from s/T tokens, is
    summed over the group. A dropout between the blocks runs on the rank's
    tokens too, drawing their part of the single-device masks
    (`dsc.dropout ... part %r of T`). A sequence that T does not divide is an error; without a
    tensor group (T = 1) the option does nothing and says so, as
    Megatron-LM turns it off at a tensor-parallel size of 1.
  }];
  let options = [
    Option<"vocabParallel", "vocab-parallel", "bool", /*default=*/"false",
           "split the token embedding, the head and the cross-entropy by "
           "vocabulary rows">,
    Option<"sequenceParallel", "sequence-parallel", "bool", /*default=*/"false",
           "hold the activations between the split blocks split along the "
           "sequence (Megatron's sequence parallelism)">,
  ];
}

def FormAttention : Pass<"dsc-form-attention", "::mlir::ModuleOp"> {
  let summary = "replaces the matmul-scale-mask-softmax-matmul chain by dsc.attention";
  let description = [{
    Finds scaled dot-product attention as exporters write it,

    ```
    s = matmul(q, k^T)          [B*H, T, S] or [B, H, T, S] (k^T a transpose
                                 of k, or transpose_rhs)
    s = s * c  |  s / c          c a constant with one value (optional)
    s = causal_mask(s)  |  s + m (optional; causal_mask filling -inf or a
                                 value below -1e30, with T <= S)
    p = softmax(s, dim = last)   [B, H, T, S]
    o = matmul(p, v)             (a dropout with p = 0 between is skipped)
    ```

    looking through the reshapes between the head layout [B, H, ...] and
    the batched one [B*H, ...], and replaces it with one `dsc.attention`
    (`causal` for the causal mask, `mask` for the additive one, `scale` =
    c or 1/c), so that the kernels never hold the [B, H, T, S] scores and
    probabilities, forward or backward. Every intermediate value must have
    no other use (the scores or probabilities read elsewhere leave the chain
    as it is), the softmax must be over the keys, and q, k, v must split
    into B*H heads as the scores do.

    Run it before `--dsc-autodiff`, so that the backward is
    `dsc.attention_grad`. Before or after `--dsc-mixed-precision` (which
    keeps the log-sum-exp f32); the training pipeline runs it after.

    With `drop-unread-buffers`, when it formed an attention op, buffer states
    that no graph reads any more are removed: GPT-2's per-layer causal-mask
    buffers (which the exporter turns into `dsc.causal_mask`) are then not
    states, not in the state memory and not in checkpoints. The training
    pipeline keeps them (the option's default): a checkpoint, and what
    `dsc-ckpt export` makes of it, is the model's whole `state_dict`, which
    PyTorch loads strictly; the buffers cost state memory only (1.6 GB per
    rank for GPT-3 175B's 96 masks), never activations.

    Chains with a mask operand (`scores + mask`, `select(keep, scores,
    -inf)`: BERT's padding mask) are formed only with `masked=true`; the
    default forms the causal and unmasked ones. The masked op computes the
    same gradients as PyTorch within its own rounding noise, but after five
    AdamW steps BERT's weights leave the bound the e2e suite derives for
    that noise (1.8% over it, in one element): until that bound is
    understood, the training pipeline keeps masked attention as exported.

    Example:

    ```
    dsc-opt model.mlir --dsc-form-attention --dsc-autodiff
    dsc-opt model.mlir --dsc-form-attention=masked=true
    dsc-opt model.mlir --dsc-form-attention=drop-unread-buffers=true
    ```
  }];
  let options = [
    Option<"dropUnreadBuffers", "drop-unread-buffers", "bool",
           /*default=*/"false",
           "remove the buffer states no graph reads once attention is formed">,
    Option<"masked", "masked", "bool", /*default=*/"false",
           "also form chains with an additive or boolean mask operand">,
  ];
}

def DataVariants : Pass<"dsc-data-variants", "::mlir::ModuleOp"> {
  let summary = "chooses the length buckets of curriculum and random-LTD";
  let description = [{
    Curriculum learning (`curriculum-*`, DeepSpeed's `curriculum_learning`
    with `seqlen` difficulty) and random-LTD (`ltd-*`, DeepSpeed's
    `random_ltd_schedule` with `fixed_linear`) change the length a step
    runs on. dsc compiles a bounded family of static-shape variants instead
    of one graph per length. This pass runs both schedules over their ramp
    (DeepSpeed's arithmetic, the runtime's implementation), measures the
    forward's matrix-product FLOPs on rewritten clones of the module at three
    lengths of each schedule (a quadratic of the length, fitted exactly),
    and keeps the fewest lengths such that rounding every step up to the
    next one costs at most `budget` (0.02: 2%) more FLOPs than the exact
    schedule. The variants are the (sequence length, kept length) pairs the
    ramp's steps round to, after the full-length step.

    It sets the module attribute `dsc.data_schedule` (the schedules and the
    buckets, which the emitters compile into the artifact's run settings,
    for dsc-run to pick each step's variant) and, with `output`, writes the
    variants with their FLOPs as JSON (dsc-compile builds one step per
    variant into one artifact). The graph is unchanged. With neither
    schedule set the pass does nothing.

    Staged knowledge distillation (`kd-stop-step` S > 0) is a schedule too:
    steps up to S run with the teacher, later ones without it
    (`--dsc-distill`'s `teacher-forward=false`). Each variant says whether
    it runs the teacher (`teacher` in the JSON), the lengths of the steps
    after S come in a second copy without the teacher, and S joins
    `dsc.data_schedule` (`kd_stop_step`). Its FLOPs are the student's; the
    teacher is inlined later.

    Example:

    ```
    dsc-opt model.mlir --dsc-data-variants="ltd-min=64 ltd-max=128 ltd-require-steps=1000 output=variants.json"
    ```
  }];
  let options = [
    Option<"curriculumSchedule", "curriculum-schedule", "std::string",
           /*default=*/"\"none\"",
           "none, fixed_linear, fixed_root or fixed_discrete">,
    Option<"curriculumMin", "curriculum-min", "int64_t", /*default=*/"1",
           "min_difficulty (the first sequence length)">,
    Option<"curriculumMax", "curriculum-max", "int64_t", /*default=*/"1",
           "max_difficulty">,
    Option<"curriculumTotalSteps", "curriculum-total-steps", "int64_t",
           /*default=*/"1", "total_curriculum_step">,
    Option<"curriculumDifficultyStep", "curriculum-difficulty-step", "int64_t",
           /*default=*/"1", "difficulty_step">,
    Option<"curriculumRootDegree", "curriculum-root-degree", "double",
           /*default=*/"1", "root_degree (fixed_root)">,
    ListOption<"curriculumDifficulty", "curriculum-difficulty", "int64_t",
               "fixed_discrete's difficulty list">,
    ListOption<"curriculumMaxStep", "curriculum-max-step", "int64_t",
               "fixed_discrete's max_step list">,
    Option<"ltdMin", "ltd-min", "int64_t", /*default=*/"0",
           "random-LTD min_value (kept tokens at first)">,
    Option<"ltdMax", "ltd-max", "int64_t", /*default=*/"0",
           "random-LTD max_value (0: random-LTD off)">,
    Option<"ltdRequireSteps", "ltd-require-steps", "int64_t", /*default=*/"1",
           "random-LTD require_steps">,
    Option<"ltdSeqPerStep", "ltd-seq-per-step", "int64_t", /*default=*/"1",
           "random-LTD seq_per_step">,
    Option<"ltdSeed", "ltd-seed", "int64_t", /*default=*/"0",
           "site seed of random-LTD's index draw (recorded for dsc-run)">,
    ListOption<"ltdLayers", "ltd-layers", "int64_t",
               "random-LTD blocks (default: all but the first and last)">,
    Option<"budget", "budget", "double", /*default=*/"0.02",
           "FLOPs the buckets may add to the exact schedules', as a share">,
    Option<"output", "output", "std::string", /*default=*/"\"\"",
           "write the variants as JSON to this file">,
    Option<"kdStopStep", "kd-stop-step", "int64_t", /*default=*/"0",
           "staged KD: the last step with the teacher (0: no staged KD)">,
  ];
}

def SequenceLength : Pass<"dsc-sequence-length", "::mlir::ModuleOp"> {
  let summary = "runs the forward graph on the first tokens of each sequence";
  let description = [{
    Curriculum learning's sequence-length warmup (DeepSpeed's
    `curriculum_learning` with `curriculum_type: seqlen`) as a rewrite: the
    graph inputs keep their shape `[batch, seq, ...]` (every input whose
    second dimension is the first input's), and the graph cuts each to its
    first `length` positions before anything reads it, as DeepSpeed
    truncates the batch. Every op the inputs flow into is rebuilt at the
    shorter length, its result types derived from the new operands (inferred,
    or through reshapes by the sequence dimension they carry); a value the
    inputs do not flow into that meets them elementwise (the position
    embedding table, a causal mask buffer) is cut to its first `length`
    positions too. The loss is the mean over the kept tokens. `length`
    equal to the inputs' sequence length changes nothing.

    dsc-compile builds one variant of the step per length bucket of the
    schedule (docs/training.md, "Curriculum learning and random-LTD").

    Example:

    ```
    dsc-opt model.mlir --dsc-sequence-length=length=64
    ```
  }];
  let options = [
    Option<"length", "length", "int64_t", /*default=*/"1",
           "the sequence length the graph runs on">,
  ];
}

def RandomLtd : Pass<"dsc-random-ltd", "::mlir::ModuleOp"> {
  let summary = "random layerwise token dropping: chosen blocks see K tokens";
  let description = [{
    DeepSpeed's random-LTD (`data_efficiency.data_routing.random_ltd`) as a
    forward rewrite. One `dsc.random_ltd_indices` draws, per step and
    sample, a sorted random subset of `kept` of the sequence's tokens from
    the step key (reproducible, resumable, independent of the world size).
    Every chosen block (`layers`: block indices in forward order; default
    every block but the first and the last) then runs on those tokens only:

    ```
    x_kept = gather(x, indices)            [B, K, D]
    y_kept = block(x_kept)                 the block's ops at length K
    y      = select(kept, scatter(y_kept), x)   dropped tokens pass through
    ```

    A causal mask over the sorted kept tokens is the full causal mask
    restricted to them. Blocks are found from their state names
    (`<prefix>.<i>.*`): a block's ops run from its first load to the next
    load of another state, must read one hidden state `[B, T, D]` and
    return one of the same type. A mask the block reads besides (batch
    first, or 1) has its kept rows and columns gathered by the same
    indices (an encoder's attention mask); another full-length value is an
    error.
    With `kept` at least the sequence length nothing changes (the graph is
    bit for bit the one without the pass). Run it before `--dsc-autodiff`:
    the backward of the gather, the block and the scatter is derived.

    Example:

    ```
    dsc-opt model.mlir --dsc-random-ltd="kept=64 layers=1,2"
    ```
  }];
  let options = [
    Option<"kept", "kept", "int64_t", /*default=*/"1",
           "tokens each chosen block runs on">,
    ListOption<"layers", "layers", "int64_t",
               "blocks that drop tokens, in forward order (default: all "
               "but the first and the last)">,
    Option<"seed", "seed", "int64_t", /*default=*/"0",
           "site seed of the index draw (data_efficiency.seed)">,
  ];
}

def MixtureOfExperts : Pass<"dsc-moe", "::mlir::ModuleOp"> {
  let summary = "replaces dense feed-forward blocks by gated mixtures of experts";
  let description = [{
    Finds each feed-forward block of the forward graph by its structure, not
    by names: a `dsc.linear` whose input is an elementwise chain (reshapes
    and unary activations such as GELU, ReLU or SiLU, or the product of two
    such chains: SwiGLU) of one or two `dsc.linear` maps of one input `x`,
    every weight and bias a parameter. It replaces the block's result by

    ```
    logits = linear(x, gate.weight)           [S, E], fp32, no bias
    probs  = softmax(logits)
    experts = top-1 | top-2 | top-k choices   [S, k]
    slots, counts = moe_slots(experts)        capacity C
    gates  = probs at the choices, 0 where dropped (renormalised for k >= 2)
    y      = moe_combine(expert_mlp(moe_dispatch(x, slots)), slots, gates)
    ```

    where the expert MLP is the block's own chain computed once over
    `[E, C, ·]` with stacked weights: for the block's linear `P.L` (P the
    linears' common module path), `P.experts.L.weight` `[E, out, in]` and
    `P.experts.L.bias` `[E, out]`, and the gate `P.gate.weight` `[E, M]`.
    The loss becomes `loss + aux-loss-coef * sum of the layers' l_aux`.
    Gating follows DeepSpeed's top1gating, top2gating and topkgating:
    capacity `ceil(S / E * f)` rounded in float32, f the capacity factor
    (doubled for top-2, times k for k >= 3), at least `min-capacity`; top-2's
    second choice is the largest logit but the first; second choices queue
    behind every first choice of their expert; top-k (k >= 3) keeps each
    expert's C most probable routes; l_aux = E * sum_e mean(probs_e) *
    fraction of first choices routed to e (k >= 3: E/k times the sum over
    all choices). Routing is not differentiable; autodiff, run after this
    pass, derives the rest of the backward.

    New states start from rules the weights file need not satisfy:
    `--moe-init=upcycle` (default) gives every expert a copy of the dense
    block's weights (`init_from`), `random` draws them like the gate (PyTorch
    nn.Linear's U(-1/sqrt(in), 1/sqrt(in)), from dsc's counter-based
    generator keyed by the state's name and `seed`). The dense block's
    states are no longer read and leave the module.

    `every` = N replaces the blocks 0, N, 2N, ... in the order of the
    forward; `experts-per-layer` gives each replaced block its own expert
    count (PR-MoE's pyramid). With `drop-tokens=false` nothing is dropped:
    the capacity is the worst case, S tokens per expert (the shapes never
    depend on the data). Invalid combinations are errors located at the
    module or at the block.

    Expert parallelism, `ep-size` = P > 1: each layer's experts are split
    over the P consecutive ranks of an expert group, E / P each (P must
    divide every block's E and the module's `dsc.world_size`, which the pass
    records as `dsc.expert_parallel_size`). The expert states are declared
    with `partition_of` the whole `[E, ...]` and `partition_group = expert`.
    Every rank routes its own tokens into `[E, C, M]`; a `dsc.all_to_all
    over expert` sends each expert's block to its owner, which computes its
    E / P experts on `[E / P, P * C, M]` (the tokens of every rank of the
    group), and a second one returns the outputs; their gradients are the
    same exchanges backwards. Two all-to-alls per layer forward, two
    backward, shapes fixed at compile time.

    Under tensor parallelism (the module's `dsc.tensor_parallel_size` T > 1,
    DeepSpeed-TED) the expert groups run along the data dimension (P * T
    must divide the world; rank r is at index (r / T) % P of its expert
    group, whose ranks share r % T), and each local expert's block is split
    Megatron's way over the tensor group: first maps column-parallel, the
    last one row-parallel, its partial products summed over `tensor` before
    its bias. Such an expert state is `partition_group = expert` with
    `partition_blocks` B: of the whole viewed as [B, T, C], the tensor
    slice [:, r % T, :], of which the rank's experts' blocks. T must divide
    the blocks' hidden width. `duplicate-token-dropping` (default true,
    with P > 1): the dispatched tokens are alike on a tensor group, so each
    rank sends its 1/T of every expert's capacity slots (`dsc.local_shard
    over tensor`), the group gathers what the exchange delivered
    (`dsc.all_gather over tensor`), the row-parallel sums become a
    `dsc.reduce_scatter over tensor`, and after the return exchange an
    `dsc.all_gather over tensor alike` restores `[E, C, M]`: the
    all-to-alls move T times fewer bytes. T must then divide C.

    Randomness, as DeepSpeed's gating draws it but from
    `dsc.random_uniform` (seeded, counter-based: the same numbers on any
    world size): `use-rts` (top-1 only) gives each route the priority of a
    uniform draw and each expert keeps its C routes of highest priority;
    `noisy-gate-policy=jitter` multiplies the gate's fp32 input by
    U(0.99, 1.01), `rsample` (top-1 only) chooses the expert by the argmax
    of logits plus Gumbel noise `-log(-log(u))` (the gate value stays the
    noiseless probability), both only while the step trains (`key[3]`, so
    `dsc-run --eval` is noiseless); `top2-2nd-expert-sampling` (k = 2, on
    by default as in DeepSpeed's MoE layer, in training and evaluation)
    chooses the second expert by the argmax of logits plus Gumbel noise.
    Replaced block i (in forward order) draws at sites 4i (jitter), 4i + 1
    (rsample), 4i + 2 (random token selection) and 4i + 3 (second expert),
    over `[S, M]` for jitter and `[S, E]` otherwise, the micro-batch (the
    leading dimension of the graph's inputs) outermost.

    Run it after `--dsc-data-parallel` (the capacity counts the tokens of a
    rank's micro-batch, as DeepSpeed's does) and before `--dsc-autodiff`.

    Example:

    ```
    dsc-opt model.mlir --dsc-moe="experts=8 top-k=2 capacity-factor=1.25"
    ```
  }];
  let options = [
    Option<"experts", "experts", "int64_t", /*default=*/"0",
           "experts per replaced block (0: none)">,
    Option<"topK", "top-k", "int64_t", /*default=*/"1",
           "experts each token is routed to">,
    Option<"capacityFactor", "capacity-factor", "double", /*default=*/"1.0",
           "expert capacity relative to an even split of the tokens">,
    Option<"minCapacity", "min-capacity", "int64_t", /*default=*/"4",
           "the least capacity of an expert">,
    Option<"dropTokens", "drop-tokens", "bool", /*default=*/"true",
           "drop routes beyond the capacity (false: worst-case capacity)">,
    Option<"auxLossCoef", "aux-loss-coef", "double", /*default=*/"0.01",
           "weight of the load-balancing loss added to the loss">,
    Option<"every", "every", "int64_t", /*default=*/"1",
           "replace every N-th feed-forward block, from the first">,
    ListOption<"expertsPerLayer", "experts-per-layer", "int64_t",
               "experts of each replaced block, in order (PR-MoE)">,
    Option<"init", "init", "std::string", /*default=*/"\"upcycle\"",
           "initial expert weights: upcycle (copies of the dense block) or "
           "random">,
    Option<"seed", "seed", "int64_t", /*default=*/"0",
           "key of the generator that draws the gate (and random experts)">,
    Option<"epSize", "ep-size", "int64_t", /*default=*/"1",
           "ranks each layer's experts are split over (expert parallelism)">,
    Option<"residual", "residual", "bool", /*default=*/"false",
           "residual MoE (PR-MoE): the dense block kept beside the experts, "
           "their outputs mixed by a learned coefficient">,
    Option<"useRts", "use-rts", "bool", /*default=*/"false",
           "top-1: random token selection (an expert keeps its routes of "
           "highest random priority)">,
    Option<"noisyGatePolicy", "noisy-gate-policy", "std::string",
           /*default=*/"\"none\"",
           "none, jitter (the gate input times U(0.99, 1.01), any k) or "
           "rsample (Gumbel noise on the top-1 choice); training only">,
    Option<"top2SecondExpertSampling", "top2-2nd-expert-sampling", "bool",
           /*default=*/"true",
           "top-2: Gumbel noise on the logits that choose the second expert">,
    Option<"duplicateTokenDropping", "duplicate-token-dropping", "bool",
           /*default=*/"true",
           "with tensor and expert parallelism: each rank of a tensor group "
           "sends its 1/T of the dispatched tokens through the all-to-all "
           "and an all-gather over the tensor group restores them">,
  ];
}

def Distill : Pass<"dsc-distill", "::mlir::ModuleOp"> {
  let summary = "adds a frozen teacher's knowledge-distillation loss (Mixture-of-Students)";
  let description = [{
    Inlines the forward graph of a teacher model (its own export, the file
    `teacher` names) into each graph whose first result is the loss, on the
    same inputs (matched by their `dsc.input` names), and adds
    Megatron-DeepSpeed's knowledge-distillation term to the loss:

    ```
    kd = beta * tau^2 * sum(p_t * (log p_t - log p_s)) / (numel(z_s) / V)
         p_t = softmax(z_t / tau), log p_s = log_softmax(z_s / tau)
    ```

    `KLDivLoss(reduction='batchmean')` over `[b, s, V]` divided by `s`: the
    sum over vocabulary, batch and sequence divided by the `b * s` positions.
    The logits of both models are found by structure, not by name: the
    logits operand of each graph's one `dsc.cross_entropy`; a graph without
    one, or with several, and a teacher whose logits differ in shape (its
    vocabulary, batch or sequence) are located errors.

    The teacher runs in eval mode (its dropouts are identities), and only
    what its logits need is inlined. Its states become `dsc.state teacher
    @"teacher.<name>"`: frozen (the verifier refuses a store), with no
    gradient (autodiff differentiates parameters only) and no optimizer
    state or master copy; dsc-run reads them from the teacher's weights file
    (`--teacher-weights`) under their own names. `teacher-precision=bf16`
    keeps them in bf16 (the forward reads them converted to the teacher's
    own type).

    On data-parallel ranks (`dsc.world_size` W > 1, after
    `--dsc-data-parallel`) the loss is already global; each rank's KD term
    is its own micro-batch's mean, and their mean over the ranks joins it
    (all_reduce / W), as the MoE balance loss does, so the loss remains a
    sum of data-parallel means. The terms are appended after the loss as
    metric outputs: `lm_loss` (the loss before the KD term) and `kd_loss`.

    Run it after `--dsc-data-parallel` and before `--dsc-moe` (a teacher's
    feed-forward blocks are not parameters, so the experts pass leaves them
    dense) and `--dsc-autodiff`.

    Staged KD (distillation stopped after a step S) builds the step a second
    time with `teacher-forward=false`: the student's step after S. The
    teacher's states are declared exactly as for the step with the teacher
    (the same names, types and order, so that both steps share one state
    table in one artifact), but nothing reads them; the teacher's forward
    and the KD term are left out, the loss is the student's own (LM + aux),
    and `kd_loss` is the constant 0.

    Example:

    ```
    dsc-opt student.mlir --dsc-distill="teacher=teacher.mlir beta=1 temperature=2"
    ```
  }];
  let options = [
    Option<"teacher", "teacher", "std::string", /*default=*/"\"\"",
           "the teacher's exported model (.mlir)">,
    Option<"beta", "beta", "double", /*default=*/"1.0",
           "weight of the distillation term (Megatron-DeepSpeed's --kd-beta-ce)">,
    Option<"temperature", "temperature", "double", /*default=*/"1.0",
           "softmax temperature tau (--kd-temp)">,
    Option<"teacherPrecision", "teacher-precision", "std::string",
           /*default=*/"\"fp32\"",
           "storage of the teacher's float weights: fp32 (as exported) or bf16">,
    Option<"teacherForward", "teacher-forward", "bool", /*default=*/"true",
           "run the teacher and add the KD term (false: the step after "
           "staged KD stops, the teacher's states declared but unread)">,
  ];
}

def Autodiff : Pass<"dsc-autodiff", "::mlir::ModuleOp"> {
  let summary = "appends the gradient of the loss with respect to every parameter";
  let description = [{
    Reverse-mode differentiation of each graph whose first result is the
    scalar float loss (`dsc.output = "loss"`; results after it, such as the
    experts' token counts, are metrics and are not differentiated), with
    respect to every
    `dsc.state` of role `parameter`. Only values that depend on a parameter
    (through `dsc.load`) get cotangents; the seed is `d loss = 1`; each op on
    the way back builds its operands' cotangents through its
    `GradientOpInterface`, and cotangents of a value used several times (a
    tied parameter loaded twice) are summed. An op on that path without the
    interface, or whose rule cannot apply (a strided slice), is an error
    naming it.

    The graph gets one result per parameter, in `dsc.state` order, after the
    loss and its metrics: the gradient, of the state's type, with the result attributes
    `dsc.output = "grad.<name>"` and `dsc.gradient_of = @<name>`. A parameter
    that does not reach the loss gets zeros. When the module's
    `dsc.world_size` is N > 1 (set by `--dsc-data-parallel`, which runs
    first), parameters are replicated, so each rank's gradient is partial:
    every gradient is summed over the ranks with `dsc.all_reduce`. The
    data-parallel loss is already the global mean, so the sum is the
    gradient of the global loss. An expert split over an expert group
    (`partition_group` expert, `--dsc-moe` with ep-size > 1) is replicated
    only over its expert-data group, and its gradient already holds its
    expert group's tokens (the all-to-all's adjoint): it is summed over the
    expert-data group (`dsc.all_reduce over expert_data`), if that group
    has more than one rank. A gradient that arrives converted up from
    a 16-bit copy of its parameter (`--dsc-mixed-precision`) is summed in
    16 bits, before that convert (DeepSpeed's default
    `communication_data_type` for bf16 and fp16). Unused forward and
    backward values are removed at the end.

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
    (`torch.nn.utils.clip_grad_norm_`, from one `dsc.sum_squares`). The
    update of every parameter is one `dsc.adam_update` or `dsc.sgd_update`
    (one op per gradient element type: one multi-tensor kernel per step
    whatever the number of tensors, docs/kernels.md). Optimizer state is declared as
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
    micro-batch; its rank-local gradient divided by N (DeepSpeed scales
    each micro-batch's loss by 1/N) is added to `dsc.state gradient
    @"<param>.grad_acc"` (fp32, whole on every rank), and
    `optimizer.micro_step` counts the calls. The reduction over the ranks
    that --dsc-autodiff put on each gradient moves behind a
    `dsc.optimizer_boundary` of the accumulated sums, together with
    clipping and the update: those run on the N-th call only, so a step
    reduces each gradient once (in the element type autodiff reduced it
    in), and the accumulators and the count return to zero. The other
    calls store the sums and the count and end; `optimizer.step`, hence
    the schedule, advances once per optimizer step. The module gets
    `dsc.grad_accum = N`, which the artifact carries so that `dsc-run`
    runs N calls per step.

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

def CheckpointActivations : Pass<"dsc-checkpoint-activations", "::mlir::ModuleOp"> {
  let summary = "recomputes the model's blocks in the backward instead of keeping their activations";
  let description = [{
    Activation checkpointing on a graph that `--dsc-autodiff` differentiated
    (run it after `--dsc-optimizer` and `--cse`, before the lowering). The
    forward region is every op up to the last one the loss depends on; the
    backward region is everything after it. The forward is cut into
    segments, one per repeated block of the model: a state named
    `<prefix>.<i>.<rest>` where `<prefix>` occurs with two or more indices
    (a `torch.nn.ModuleList`: `transformer.h.3.…`, `layers.3.…`; the shortest
    such prefix, so experts stay inside their block) belongs to block
    `<prefix>.<i>`. Each boundary is placed, between the last op reading one
    block's parameters and the first load of the next block's, where the
    fewest bytes cross it (after the residual add, not inside the next
    block's normalization).

    For each recomputed segment, the values it computes that no forward op
    outside it reads, but the backward does, are replaced in the backward by
    clones of the segment's ops (marked `dsc.recomputed`), inserted right
    before the first backward op that reads one of them; unused clones are
    removed. The forward copies then die inside the forward, and only the
    values crossing segment boundaries stay live until the backward. The
    clones compute the same values with the same kernels: losses and weights
    are bit-identical with and without the pass; the memory plan
    (`--dsc-plan-memory`) shrinks.

    Not recomputed, but kept from the forward: `dsc.load` (the state's own
    memory), collectives and other ops with effects, and `dsc.dropout` with
    `p > 0`, whose mask the backward must see as the forward drew it.

    In a pipeline stage (`--dsc-pipeline-parallel`, which marks each forward
    op with its `dsc.micro_batch`) every micro-batch's copy of the blocks is
    checkpointed on its own: its segments are found among that micro-batch's
    ops (with the loads and other ops every micro-batch shares, which are
    kept), and its clones, which keep the micro-batch's mark beside
    `dsc.recomputed`, run in that micro-batch's backward
    (`--dsc-pipeline-schedule` puts them there). A stage then keeps, for each
    micro-batch in flight, only its blocks' inputs (and, communication-aware,
    its collectives' outputs). `budget` and `print` are per micro-batch.

    Communication-aware checkpointing (`comm-aware`, on by default; the
    DeepSpeed-TED optimisation): the outputs of a segment's collectives
    (tensor-parallel all-reduces, expert all-to-alls, all-gathers) are kept
    from the forward and read by the recomputation, so a checkpointed step
    issues exactly the collectives of an uncheckpointed one: per transformer
    layer 4 tensor all-reduces, per MoE layer 4 all-to-alls.
    `comm-aware=false` clones those the recomputation or the backward reads
    with the segment (each is communicated a second time in the backward,
    in the same order on every rank: 5 all-reduces per transformer layer,
    whose last sum feeds the next layer and is kept anyway; 6 all-to-alls
    per MoE layer) and keeps those bytes no longer. `print` reports the bytes communication-awareness
    keeps.

    `budget` (bytes, per rank) recomputes only as many blocks as needed,
    earliest first, for the estimated peak of what the backward keeps to
    fit: the forward values the backward reads that are not recomputed, or,
    while block j is recomputed, what no block keeps plus block j's values.
    A budget that recomputing every block cannot meet is a warning. 0
    recomputes every block. `print` reports the blocks chosen and
    the estimate. A graph without repeated blocks is an error.

    Example:

    ```
    dsc-opt m.mlir --dsc-autodiff --dsc-optimizer --cse \
        --dsc-checkpoint-activations="print=true" --dsc-lower-to-runtime
    ```
  }];
  let options = [
    Option<"segments", "segments", "std::string", /*default=*/"\"blocks\"",
           "what a segment is: blocks (one per repeated module of the model)">,
    Option<"budget", "budget", "int64_t", /*default=*/"0",
           "activation bytes per rank to fit by recomputing the fewest blocks; "
           "0 recomputes every block">,
    Option<"print", "print", "bool", /*default=*/"false",
           "print the recomputed blocks and the kept-bytes estimate to stderr">,
    Option<"commAware", "comm-aware", "bool", /*default=*/"true",
           "keep the forward outputs of a recomputed segment's collectives "
           "rather than communicating them again">,
  ];
}

def ZeroPartition : Pass<"dsc-zero", "::mlir::ModuleOp"> {
  let summary = "partitions optimizer state, gradients and parameters over the ranks (ZeRO)";
  let description = [{
    Runs after `--dsc-optimizer` on a data-parallel step (the module's
    `dsc.world_size` W, set by `--dsc-data-parallel`). Every partitioned
    tensor of n elements is flattened, padded with zeros to W * S elements
    (S = ceil(n / W), the padding on the last rank) and split in W shards of
    S, rank r owning elements [r * S, (r + 1) * S) (docs/zero.md).

    * stage 0: nothing changes.
    * stage 1: every optimizer state of a parameter (`exp_avg`, `exp_avg_sq`,
      `momentum_buffer`) becomes its shard (`dsc.state ... {partition_of =
      whole shape} : tensor<S>`). The update (`dsc.adam_update`,
      `dsc.sgd_update`, and the elementwise ops between the gradients, the
      loads and each `dsc.store`) is re-created at shard shape:
      each rank updates its partition of the parameter, from its
      `dsc.local_shard` of the (all-reduced) gradient and of the parameter;
      scalars (the step, the bias corrections, the clipping coefficient)
      are used as they are. The updated parameter is `dsc.all_gather`ed and
      stored whole.
    * stage 2: also the gradients: the `dsc.all_reduce` of each gradient
      becomes a `dsc.reduce_scatter` into its owner, so each rank only ever
      holds its gradient shard. Gradient clipping then sums the squares of
      each rank's shards and adds those partial sums over the ranks with one
      `dsc.all_reduce`.
    * stage 3: also the parameters: each becomes its shard, updated and
      stored as a shard (no all-gather after the update). Every whole read
      of a parameter is re-created from a `dsc.all_gather` of the shard,
      placed just before its first use in the forward pass and again just
      before its first use in the backward pass (the ops after the graph's
      outputs are computed); the gathered buffer lives until its last use,
      where the memory plan reuses it.

    Collectives keep the order of the program (reduce-scatters where the
    all-reduces were, all-gathers at the parameters' stores), which is the
    same on every rank: the graph is one block without control flow.
    With W = 1 the shards are the flattened tensors and no collective is
    added, so every stage computes the same numbers bit for bit.

    Experts split over an expert group (`--dsc-moe` with ep-size > 1) are
    left as they are, with their moments, masters and accumulators: their
    stores, their multi-tensor update (the optimizer gives them one of
    their own) and their gradients' sums over the expert-data group stay
    whole.

    Under tensor parallelism (`dsc.tensor_parallel_size` T > 1) every state
    is partitioned over its data group of W / T ranks instead of the world
    (`partition_group` data): a tensor-parallel slice's partition is of the
    rank's slice, which keeps its whole shape and states `partition_blocks`
    (docs/tensor-parallel.md). With W = T nothing is partitioned.

    Example: `dsc-opt m.mlir --dsc-data-parallel=world-size=2 --dsc-autodiff
    --dsc-optimizer --dsc-zero=stage=2`.
  }];
  let options = [
    Option<"stage", "stage", "int64_t", /*default=*/"0",
           "ZeRO stage: 0 (off), 1 (optimizer state), 2 (+ gradients), "
           "3 (+ parameters)">,
    Option<"persistenceThreshold", "persistence-threshold", "int64_t",
           /*default=*/"0",
           "stage 3: parameters of at most this many elements stay whole "
           "(stage3_param_persistence_threshold; dsc-opt's "
           "--zero-persistence-threshold defaults to DeepSpeed's 1e5)">,
    Option<"unshardBudget", "unshard-budget", "int64_t", /*default=*/"0",
           "stage 3: bytes per rank of parameters kept whole beyond the "
           "threshold, smallest (costliest per byte to gather) first "
           "(selective unsharding)">,
  ];
}

def OffloadOptimizer : Pass<"dsc-offload", "::mlir::ModuleOp"> {
  let summary = "moves the optimizer state and update to the host (ZeRO-Offload)";
  let description = [{
    Runs after `--dsc-zero` (stage 1, 2 or 3, as DeepSpeed requires) and
    the collective scheduling. With `optimizer=cpu`:

    * the optimizer's update (`dsc.adam_update`, `dsc.sgd_update`) is cut
      into sub-groups of consecutive tensors of at most `sub-group-size`
      elements (DeepSpeed's `sub_group_size`; a larger tensor is a group of
      its own), so that the host updates one while the copies of another
      run;
    * the states each update reads and writes in place (the fp32 master
      weights and the optimizer's moments; role `master` or `optimizer`)
      live on the host (`dsc.state ... on host`);
    * every other tensor the update reads (this rank's gradient partition,
      an fp32 parameter shard, the shared scalars) is copied to the host by
      a `dsc.transfer ... to host` placed right after the op that computes
      it: a gradient partition leaves as soon as it is reduced, during the
      backward pass;
    * every result read on the device (the 16-bit parameter shard that is
      gathered or stored) is copied back by a `dsc.transfer ... to device`
      right after its sub-group's update.

    The order is the program's, the same on every rank. `optimizer=none`
    changes nothing. `optimizer=nvme` (ZeRO-Infinity, ZeRO stage 3 as in
    DeepSpeed) does the same but puts those states on NVMe
    (`dsc.state ... on nvme`): each rank's in a file under `nvme-path`; a
    load of one yields a host tensor (the lowering reads it into a host
    buffer `buffer-count` sub-groups ahead of its update) and its store
    writes it back after the update. `param=cpu` (ZeRO-Infinity's
    offload_param, stage 3) also puts the parameters' partitions on the
    host: each load of one is copied to the device right after it (where
    the prefetch schedule put the load, ahead of its gather), and the host
    update writes the new partition into the host state directly (a device
    update, with `optimizer=none`, copies it there). `param=nvme` puts them
    in the per-rank files: the lowering reads each load `param-buffer-count`
    loads ahead and writes the new partition back after the update. In an
    evaluation step (no update; ZeRO-Inference) `param` puts every
    parameter on the host or NVMe and streams it to the device block by
    block, one block ahead of its use.

    ```mlir
    %g  = dsc.reduce_scatter %flat : tensor<16xbf16> -> tensor<8xbf16>
    %gh = dsc.transfer %g to host : tensor<8xbf16>
    ...
    %m  = dsc.load @"w.master" : tensor<8xf32>       // on host
    %p, %e, %v, %c = dsc.adam_update params(%m : tensor<8xf32>) grads(%gh : tensor<8xbf16>) ...
    %cd = dsc.transfer %c to device : tensor<8xbf16>
    %all = dsc.all_gather %cd : tensor<8xbf16> -> tensor<16xbf16>
    ```
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"none\"",
           "where the optimizer state lives and the update runs: none (the "
           "device), cpu (host memory, the host CPU) or nvme (per-rank "
           "files, read into host memory for the host CPU's update)">,
    Option<"subGroupSize", "sub-group-size", "int64_t",
           /*default=*/"1000000000",
           "elements of parameters per host update (sub_group_size)">,
    Option<"param", "param", "std::string", /*default=*/"\"none\"",
           "where stage 3's parameter partitions (an evaluation step's "
           "parameters) live: none (the device), cpu (host memory) or nvme "
           "(per-rank files), copied to the device ahead of their use">,
    Option<"paramBufferCount", "param-buffer-count", "int64_t",
           /*default=*/"5",
           "param=nvme: parameter reads in flight ahead of their use "
           "(offload_param.buffer_count)">,
    Option<"paramBufferSize", "param-buffer-size", "int64_t",
           /*default=*/"100000000",
           "param=nvme: elements of a parameter swap buffer; a larger "
           "parameter is an error (offload_param.buffer_size)">,
    Option<"bufferCount", "buffer-count", "int64_t", /*default=*/"4",
           "nvme: sub-groups whose states are in host buffers at once, read "
           "ahead of their update (offload_optimizer.buffer_count)">,
    Option<"nvmePath", "nvme-path", "std::string", /*default=*/"\"\"",
           "nvme: the directory of the per-rank files (nvme_path; dsc-run's "
           "--nvme-path overrides it)">,
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

def ScheduleCollectives : Pass<"dsc-schedule-collectives", "::mlir::ModuleOp"> {
  let summary = "reduces gradients as soon as they are final and prefetches "
                "parameter gathers";
  let description = [{
    Reorders the collectives of a data-parallel step (lib/Transforms/
    ScheduleCollectives.cpp). Early reduction: each gradient's all_reduce or
    reduce_scatter, with the reshapes and padding that only feed it, moves
    to just after the op that finishes the gradient, so that it overlaps with
    the rest of the backward pass (collectives run on the comm stream) and,
    from ZeRO stage 2, the whole gradient dies there. Prefetch: each
    all_gather of a loaded parameter shard (ZeRO stage 3) moves before the
    first user of an earlier gather, as far as `prefetch-bucket-size`
    elements of gathers issued ahead of use allow (DeepSpeed's
    stage3_prefetch_bucket_size), and at most `max-live-parameters`
    elements (stage3_max_live_parameters). Deterministic: every rank gets
    the same order.
  }];
  let options = [
    Option<"reduceEarly", "reduce-early", "bool", /*default=*/"true",
           "move gradient reductions to where the gradient is final">,
    Option<"prefetchBucketSize", "prefetch-bucket-size", "int64_t",
           /*default=*/"50000000",
           "elements of parameter gathers issued ahead of use (0: off)">,
    Option<"maxLiveParameters", "max-live-parameters", "int64_t",
           /*default=*/"1000000000",
           "elements of prefetched parameters alive at once">,
  ];
}

def BucketCollectives : Pass<"dsc-bucket-collectives", "::mlir::ModuleOp"> {
  let summary = "merges consecutive small collectives into bucketed calls";
  let description = [{
    Merges collectives of one kind and element type that follow each other
    in the block into one call on a packed buffer, in block order, while
    their elements (whole tensors: W * S for a shard of S) fit the bucket:
    `reduce-bucket-size` for all_reduce and reduce_scatter (DeepSpeed's
    reduce_bucket_size), `allgather-bucket-size` for all_gather
    (allgather_bucket_size); 0 turns bucketing of that kind off. The merged
    call replaces the last member; a member whose result is used before it
    by anything but a reshape or a store (which move after it) ends the
    bucket, so compute never waits for a bucket and stage-3 gathers merge
    only where the prefetch placed them side by side. Each member keeps its
    padding and every rank receives its own shard of each; the merged
    collective carries `dsc.bucket` = its number of members
    (lib/Transforms/BucketCollectives.cpp).

    Example (W = 2, two reduce-scatters of 8 and 4 elements):

    ```mlir
    %r = dsc.reshape %a : tensor<8xf32> -> tensor<2x4xf32>
    %s = dsc.reshape %b : tensor<4xf32> -> tensor<2x2xf32>
    %c = dsc.concat(%r, %s), dim = 1 : tensor<2x4xf32>, tensor<2x2xf32>
    %f = dsc.reshape %c : tensor<2x6xf32> -> tensor<12xf32>
    %x = dsc.reduce_scatter %f {dsc.bucket = 2 : i64}
        : tensor<12xf32> -> tensor<6xf32>
    %sa = dsc.slice %x, dim = 0, start = 0, end = 4, step = 1 : tensor<6xf32>
    %sb = dsc.slice %x, dim = 0, start = 4, end = 6, step = 1 : tensor<6xf32>
    ```
  }];
  let options = [
    Option<"reduceBucketSize", "reduce-bucket-size", "int64_t",
           /*default=*/"500000000",
           "elements per all_reduce / reduce_scatter bucket (0: off)">,
    Option<"allgatherBucketSize", "allgather-bucket-size", "int64_t",
           /*default=*/"500000000",
           "elements per all_gather bucket (0: off)">,
  ];
}

def MeshPlan : Pass<"dsc-plan", "::mlir::ModuleOp"> {
  let summary = "ranks the device meshes that train the model on a cluster";
  let description = [{
    "ZeRO or 3D parallelism?" for the exported model on a given cluster:
    lists every mesh of tensor (T), pipeline (P, with V chunks per rank for
    the interleaved schedule) and data parallelism (D = world / (T·P)), ZeRO
    stage, micro-batch size and activation checkpointing, and for a model
    with experts (`dsc.moe_dispatch` layers) expert parallelism (EP ranks
    of the data dimension), with its memory per rank, bytes per group and
    a step-time estimate from the graph's FLOPs and those bytes; the meshes
    that fit first, fastest first, each with the reason it ranks where it
    does (docs/parallelism-plan.md). Runs
    on the exported model, before the training pipeline; the module is not
    changed.

    ```
    dsc-opt model.mlir --dsc-plan="world-size=1024 global-batch=1536
        device-memory=80 tflops=312 intra-bw=150 inter-bw=25"
    ```
  }];
  let options = [
    Option<"worldSize", "world-size", "int64_t", /*default=*/"8",
           "ranks of the cluster">,
    Option<"nodeSize", "node-size", "int64_t", /*default=*/"8",
           "ranks per node">,
    Option<"globalBatch", "global-batch", "int64_t", /*default=*/"0",
           "samples per optimizer step (required)">,
    Option<"deviceMemory", "device-memory", "double", /*default=*/"80",
           "GB of device memory a rank may use">,
    Option<"tflops", "tflops", "double", /*default=*/"312",
           "matmul TFLOP/s a rank sustains">,
    Option<"intraBandwidth", "intra-bw", "double", /*default=*/"150",
           "GB/s a rank sends within its node">,
    Option<"interBandwidth", "inter-bw", "double", /*default=*/"25",
           "GB/s a rank sends to other nodes">,
    Option<"precision", "precision", "std::string", /*default=*/"\"bf16\"",
           "bf16 or fp16 (mixed precision) or fp32">,
    Option<"rows", "rows", "int64_t", /*default=*/"12",
           "meshes to list">,
    Option<"tensor", "tensor", "int64_t", /*default=*/"0",
           "consider only this tensor-parallel size (0: every size)">,
    Option<"pipeline", "pipeline", "int64_t", /*default=*/"0",
           "consider only this pipeline-parallel size (0: every size)">,
    Option<"expert", "expert", "int64_t", /*default=*/"0",
           "consider only this expert-parallel size (0: every size)">,
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "file to write, '-' for stderr">,
  ];
}

#endif // DSC_TRANSFORMS_PASSES_TD
