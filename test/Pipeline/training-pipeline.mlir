// --dsc-pipeline runs the training step's passes in their standard order;
// dsc-opt's --world-size/--optimizer/--step flags are the same pipeline.
// RUN: dsc-opt %s --dsc-pipeline="world-size=2 optimizer=sgd lr=0.1" --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: dsc-opt %s --world-size=2 --optimizer=sgd --lr=0.1 --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=ORDER
// ORDER: cse
// ORDER-NEXT: dsc-data-parallel{grad-accum=1 micro-batch=0 pipeline-parallel=1 tensor-parallel=1 world-size=2}
// ORDER-NEXT: dsc-form-attention
// ORDER-NEXT: dsc-autodiff
// ORDER-NEXT: dsc-optimizer{{.*}}lr=1.000000e-01{{.*}}optimizer=sgd
// ORDER-NEXT: cse

// The data-efficiency passes come first: the variants of the schedules
// (a training step's only), then the lengths this step is built for
// (random-LTD not when evaluating).
// RUN: dsc-opt %S/../Transforms/Inputs/three-blocks.mlir --ltd-min=2 --ltd-max=8 --seqlen=4 --ltd-kept=2 --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=DATA
// RUN: dsc-opt %S/../Transforms/Inputs/three-blocks.mlir --ltd-min=2 --ltd-max=8 --seqlen=4 --ltd-kept=2 --step=eval --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=DATAEVAL
// DATA: cse
// DATA-NEXT: dsc-data-variants{{.*}}ltd-max=8 ltd-min=2
// DATA-NEXT: dsc-sequence-length{length=4}
// DATA-NEXT: dsc-random-ltd{kept=2 {{.*}}seed=0}
// DATA-NEXT: dsc-data-parallel
// DATAEVAL: cse
// DATAEVAL-NEXT: dsc-sequence-length{length=4}
// DATAEVAL-NEXT: dsc-data-parallel

// The pipeline runs before the passes the command line names.
// RUN: dsc-opt %s --step=eval --dsc-lower-to-runtime --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=THEN
// THEN: dsc-data-parallel
// THEN-NEXT: dsc-eval-mode
// THEN-NOT: dsc-autodiff
// THEN: cse
// THEN-NEXT: func.func(
// THEN-NEXT: dsc-decompose-for-library
// THEN-NEXT: dsc-form-kernels{fuse-elementwise=true}
// THEN-NEXT: ),
// THEN-NEXT: dsc-convert-to-runtime
// THEN-NEXT: func.func(
// THEN-NEXT: dscrt-assign-streams
// THEN-NEXT: dscrt-verify-step

// Activation checkpointing ends the pipeline, after the last CSE (which
// would merge the recomputed blocks back); a flag without a value is true.
// RUN: not dsc-opt %s --checkpoint-activations --checkpoint-budget=4096 --dump-pass-pipeline -o /dev/null 2>&1 | FileCheck %s --check-prefix=CKPT
// CKPT: dsc-optimizer
// CKPT-NEXT: cse
// CKPT-NEXT: dsc-checkpoint-activations{budget=4096 comm-aware=true print=false segments=blocks}
// This graph has no repeated blocks, which the pass reports.
// CKPT: error: found no repeated blocks to checkpoint

// step=gradients: loss and gradients, no update.
// RUN: dsc-opt %s --step=gradients | FileCheck %s --check-prefix=GRAD
// GRAD-NOT: dsc.state optimizer
// GRAD: -> (tensor<f32> {dsc.output = "loss"}, tensor<4xf32> {dsc.gradient_of = @w, dsc.output = "grad.w"})
// GRAD-NOT: dsc.store

// step=train (the default): the update is in the graph.
// RUN: dsc-opt %s --dsc-pipeline | FileCheck %s --check-prefix=TRAIN
// TRAIN: dsc.state optimizer @w.exp_avg
// TRAIN: dsc.store %{{.*}} to @w

// Bad values are errors.
// RUN: %expect_exit 1 dsc-opt %s --step=bogus 2>&1 | FileCheck %s --check-prefix=BAD-FLAG
// BAD-FLAG: dsc-opt: error: --step: 'bogus' is not one of train, gradients, eval
// RUN: %expect_exit 1 dsc-opt %s --dsc-pipeline="step=bogus" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: dsc-pipeline option 'step': 'bogus' is not one of train, gradients, eval
// The option string of --dsc-pipeline is checked with the flags' table.
// RUN: %expect_exit 1 dsc-opt %s --dsc-pipeline="lr=nan betas={0.9,} world-size=0" 2>&1 | FileCheck %s --check-prefix=BAD-PIPELINE
// BAD-PIPELINE: error: dsc-pipeline option 'lr': 'nan' is not a finite number
// BAD-PIPELINE: error: dsc-pipeline option 'betas': expected 2 comma-separated numbers, got '0.9,'
// BAD-PIPELINE: error: dsc-pipeline option 'world-size': must be in [1, 1048576], got 0
// The flag is checked before any pass runs (the pass, given world-size=0
// another way, refuses it too: Transforms/data-parallel-invalid.mlir).
// RUN: %expect_exit 1 dsc-opt %s --world-size=0 2>&1 | FileCheck %s --check-prefix=WORLD
// RUN: %expect_exit 1 dsc-opt %s --world-size=0 --zero-stage=3 2>&1 | FileCheck %s --check-prefix=WORLD
// WORLD: dsc-opt: error: --world-size: must be in [1, 1048576], got 0
// WORLD-NOT: see current operation

dsc.state parameter @w : tensor<4xf32>
func.func @step(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<4xf32>
  %p = dsc.mul %w, %x : tensor<4xf32>, tensor<4xf32>
  %l = dsc.reduce_sum %p, dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}
