// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd lr=0.1 momentum=0.9 grad-accum=4" | FileCheck %s
// RUN: dsc-opt %s --dsc-optimizer="optimizer=adamw grad-accum=2" | FileCheck %s --check-prefix=ADAMW
// RUN: not dsc-opt %s --dsc-optimizer="grad-accum=0" 2>&1 | FileCheck %s --check-prefix=ZERO

// Gradient accumulation over 4 micro-batches: the gradient / 4 is added to
// the parameter's accumulator (a `gradient` state) on every call; the
// update reads the sum through dsc.optimizer_boundary, so it runs on the
// call that ends the optimizer step only, and needs no skip.

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
// CHECK-NEXT: dsc.state gradient @optimizer.loss_acc : tensor<f32>
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
// The loss of the step is the mean of its micro-batches' losses, added up
// beside the gradients and returned by the call that ends the step.
// CHECK: %[[LACC:.*]] = dsc.load @optimizer.loss_acc
// CHECK: %[[LQUARTER:.*]] = dsc.constant dense<2.500000e-01>
// CHECK: %[[LSCALED:.*]] = dsc.mul %[[L:.*]], %[[LQUARTER]]
// CHECK: %[[LSUM:.*]] = dsc.add %[[LACC]], %[[LSCALED]]
// CHECK: %[[NEXTL:.*]] = dsc.select %[[B]], %{{.*}}, %[[LSUM]]
// CHECK: %[[SUM:.*]]:3 = dsc.optimizer_boundary %[[G]], %[[LSUM]], %[[STEP]] : (tensor<4xf32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<f32>, tensor<f32>)
// CHECK: %[[W:.*]] = dsc.load @w :
// CHECK: %[[BUF:.*]] = dsc.load @w.momentum_buffer
// CHECK: %[[NEW:.*]], %[[NB:.*]] = dsc.sgd_update params(%[[W]] : tensor<4xf32>) grads(%[[SUM]]#0 : tensor<4xf32>) momentum_buffers(%[[BUF]] : tensor<4xf32>) copies() lr(%{{.*}} : tensor<f32>) {
// CHECK: dsc.store %[[NEXTM]] to @optimizer.micro_step
// CHECK: dsc.store %[[NEXTACC]] to @w.grad_acc
// CHECK: dsc.store %[[NEXTL]] to @optimizer.loss_acc
// CHECK: dsc.store %[[NEW]] to @w
// CHECK: dsc.store %[[NB]] to @w.momentum_buffer
// The step count advances on the boundary only.
// CHECK: dsc.store %[[SUM]]#2 to @optimizer.step
// CHECK: return %[[SUM]]#1, %{{.*}} : tensor<f32>, tensor<f32>

// AdamW: the update reads the boundary's sum, without a skip.
// ADAMW: dsc.state gradient @w.grad_acc
// ADAMW: %[[SUM:.*]]:3 = dsc.optimizer_boundary
// ADAMW-NOT: skip(
// ADAMW: dsc.adam_update {{.*}} grads(%[[SUM]]#0 : tensor<4xf32>) {{.*}} step(%[[SUM]]#2 : tensor<f32>)
// ADAMW-NOT: skip(
// ADAMW: return

// ZERO: error: grad-accum must be at least 1, got 0
