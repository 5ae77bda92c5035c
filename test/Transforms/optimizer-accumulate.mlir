// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd lr=0.1 momentum=0.9 grad-accum=4" | FileCheck %s
// RUN: dsc-opt %s --dsc-optimizer="optimizer=adamw grad-accum=2" | FileCheck %s --check-prefix=ADAMW
// RUN: not dsc-opt %s --dsc-optimizer="grad-accum=0" 2>&1 | FileCheck %s --check-prefix=ZERO

// Gradient accumulation over 4 micro-batches: the gradient / 4 is added to
// the parameter's accumulator (a `gradient` state); the update applies when
// the micro-step count reaches 4, and otherwise skips (its results are the
// old values, stored back).

dsc.state parameter @w : tensor<4xf32>
func.func @step(%x: tensor<4xf32> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"},
        tensor<4xf32> {dsc.output = "grad.w", dsc.gradient_of = @w}) {
  %w = dsc.load @w : tensor<4xf32>
  %p = dsc.mul %w, %x : tensor<4xf32>, tensor<4xf32>
  %l = dsc.reduce_sum %p, dims = [0] : tensor<4xf32>
  return %l, %x : tensor<f32>, tensor<4xf32>
}

// CHECK: module attributes {dsc.grad_accum = 4 : i64}
// CHECK: dsc.state parameter @w
// CHECK-NEXT: dsc.state optimizer @w.momentum_buffer : tensor<4xf32>
// CHECK-NEXT: dsc.state gradient @w.grad_acc : tensor<4xf32>
// CHECK: dsc.state optimizer @optimizer.step : tensor<f32>
// CHECK-NEXT: dsc.state optimizer @optimizer.micro_step : tensor<f32>
// CHECK-LABEL: func.func @step
// CHECK: %[[N:.*]] = dsc.load @optimizer.step
// CHECK: %[[STEP:.*]] = dsc.add %[[N]]
// CHECK: %[[M:.*]] = dsc.load @optimizer.micro_step
// CHECK: %[[COUNT:.*]] = dsc.add %[[M]], %{{.*}}
// CHECK: %[[FOUR:.*]] = dsc.constant dense<4.000000e+00>
// CHECK: %[[B:.*]] = dsc.compare ge, %[[COUNT]], %[[FOUR]]
// CHECK: %[[NEXTM:.*]] = dsc.select %[[B]], %{{.*}}, %[[COUNT]]
// CHECK: %[[ACC:.*]] = dsc.load @w.grad_acc
// CHECK: %[[QUARTER:.*]] = dsc.constant dense<2.500000e-01>
// CHECK: %[[SCALED:.*]] = dsc.mul %arg0, %[[QUARTER]]
// CHECK: %[[G:.*]] = dsc.add %[[ACC]], %[[SCALED]]
// CHECK: %[[NEXTACC:.*]] = dsc.select %[[B]], %{{.*}}, %[[G]]
// CHECK: %[[NO:.*]] = dsc.constant dense<false> : tensor<i1>
// CHECK: %[[YES:.*]] = dsc.constant dense<true> : tensor<i1>
// CHECK: %[[SKIP:.*]] = dsc.select %[[B]], %[[NO]], %[[YES]]
// CHECK: %[[W:.*]] = dsc.load @w :
// CHECK: %[[BUF:.*]] = dsc.load @w.momentum_buffer
// CHECK: %[[NEW:.*]], %[[NB:.*]] = dsc.sgd_update params(%[[W]] : tensor<4xf32>) grads(%[[G]] : tensor<4xf32>) momentum_buffers(%[[BUF]] : tensor<4xf32>) copies() lr(%{{.*}} : tensor<f32>) skip(%[[SKIP]] : tensor<i1>)
// CHECK: dsc.store %[[NEXTM]] to @optimizer.micro_step
// CHECK: dsc.store %[[NEXTACC]] to @w.grad_acc
// CHECK: dsc.store %[[NEW]] to @w
// CHECK: dsc.store %[[NB]] to @w.momentum_buffer
// CHECK: %[[KEEPSTEP:.*]] = dsc.select %[[B]], %[[STEP]], %[[N]]
// CHECK: dsc.store %[[KEEPSTEP]] to @optimizer.step

// AdamW: the update skips off the boundary (moments and parameter kept).
// ADAMW: dsc.state gradient @w.grad_acc
// ADAMW: %[[B:.*]] = dsc.compare ge
// ADAMW: %[[SKIP:.*]] = dsc.select %[[B]], %{{.*}}, %{{.*}} : tensor<i1>, tensor<i1>, tensor<i1>
// ADAMW: dsc.adam_update {{.*}} skip(%[[SKIP]] : tensor<i1>)

// ZERO: error: grad-accum must be at least 1, got 0
