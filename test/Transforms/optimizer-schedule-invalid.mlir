// RUN: not dsc-opt %s --dsc-optimizer="scheduler=cosine" 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not dsc-opt %s --dsc-optimizer="warmup-num-steps=10" 2>&1 | FileCheck %s --check-prefix=NOSCHED
// RUN: not dsc-opt %s --dsc-optimizer="scheduler=warmup-lr total-num-steps=10" 2>&1 | FileCheck %s --check-prefix=TOTAL
// RUN: not dsc-opt %s --dsc-optimizer="scheduler=warmup-lr cos-min-ratio=0.1" 2>&1 | FileCheck %s --check-prefix=RATIO
// RUN: not dsc-opt %s --dsc-optimizer="scheduler=warmup-cosine-lr total-num-steps=10 warmup-max-lr=0.1" 2>&1 | FileCheck %s --check-prefix=MAXLR
// RUN: not dsc-opt %s --dsc-optimizer="scheduler=warmup-decay-lr" 2>&1 | FileCheck %s --check-prefix=NEEDTOTAL
// RUN: not dsc-opt %s --dsc-optimizer="scheduler=warmup-cosine-lr total-num-steps=10 warmup-num-steps=0" 2>&1 | FileCheck %s --check-prefix=STEPS
// RUN: not dsc-opt %s --dsc-optimizer="scheduler=warmup-lr warmup-type=exp" 2>&1 | FileCheck %s --check-prefix=TYPE
// RUN: not dsc-opt %s --dsc-optimizer="scheduler=warmup-lr warmup-min-lr=-0.5" 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: dsc-opt %s --dsc-optimizer="scheduler=warmup-lr" -verify-diagnostics -split-input-file

// KIND: error: unknown scheduler 'cosine'; expected none, warmup-lr, warmup-decay-lr or warmup-cosine-lr
// NOSCHED: error: warmup-num-steps does not apply to scheduler=none
// TOTAL: error: total-num-steps does not apply to scheduler=warmup-lr
// RATIO: error: cos-min-ratio does not apply to scheduler=warmup-lr
// MAXLR: error: warmup-max-lr does not apply to scheduler=warmup-cosine-lr
// NEEDTOTAL: error: scheduler=warmup-decay-lr needs total-num-steps > 0
// STEPS: error: warmup-num-steps must be a positive integer, got 0
// TYPE: error: unknown warmup-type 'exp'; expected log or linear
// NEG: error: warmup-min-lr -5.000000e-01 is out of range

dsc.state parameter @w : tensor<4xf32>
// expected-error @below {{the graph already has an output named 'lr'}}
func.func @step(%x: tensor<4xf32> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"}, tensor<f32> {dsc.output = "lr"},
        tensor<4xf32> {dsc.output = "grad.w", dsc.gradient_of = @w}) {
  %w = dsc.load @w : tensor<4xf32>
  %p = dsc.mul %w, %x : tensor<4xf32>, tensor<4xf32>
  %l = dsc.reduce_sum %p, dims = [0] : tensor<4xf32>
  return %l, %l, %x : tensor<f32>, tensor<f32>, tensor<4xf32>
}
