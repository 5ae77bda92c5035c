// RUN: dsc-opt %s --dsc-autodiff="seed=16.0 seed-state=optimizer.loss_scale" --dsc-optimizer="optimizer=sgd lr=0.1 loss-scaling=1 initial-scale-power=4 hysteresis=2 loss-scale-window=3" | FileCheck %s
// RUN: dsc-opt %s --dsc-autodiff="seed=8.0" --dsc-optimizer="optimizer=sgd loss-scaling=1 loss-scale=8" | FileCheck %s --check-prefix=STATIC
// RUN: not dsc-opt %s --dsc-autodiff --dsc-optimizer="loss-scaling=1" 2>&1 | FileCheck %s --check-prefix=UNSEEDED
// RUN: not dsc-opt %s --dsc-autodiff="seed=65536.0 seed-state=optimizer.loss_scale" --dsc-optimizer="loss-scaling=1 initial-scale-power=4" 2>&1 | FileCheck %s --check-prefix=MISMATCH
// RUN: not dsc-opt %s --dsc-autodiff="seed=16.0 seed-state=optimizer.loss_scale" --dsc-optimizer="loss-scaling=1 initial-scale-power=4 hysteresis=0" 2>&1 | FileCheck %s --check-prefix=HYST
// RUN: not dsc-opt %s --dsc-autodiff="seed=0" 2>&1 | FileCheck %s --check-prefix=BADSEED

// Dynamic loss scaling: the backward is seeded with the scale (2^4 while
// the state is still zero); overflow is sum(g * 0) != 0; the gradient is
// unscaled; every store keeps the old value on overflow; the scaler's
// state advances.

dsc.state parameter @w : tensor<4xf32>
func.func @forward(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<4xf32>
  %p = dsc.mul %w, %x : tensor<4xf32>, tensor<4xf32>
  %l = dsc.reduce_sum %p, dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}

// CHECK: module attributes {dsc.backward_seed = {state = @optimizer.loss_scale, value = 1.600000e+01 : f64}}
// CHECK: dsc.state optimizer @optimizer.loss_scale : tensor<f32>
// CHECK-NEXT: dsc.state optimizer @optimizer.hysteresis : tensor<f32>
// CHECK-NEXT: dsc.state optimizer @optimizer.good_steps : tensor<f32>
// CHECK-LABEL: func.func @forward
// CHECK-SAME: tensor<f32> {dsc.output = "loss"}, tensor<f32> {dsc.output = "lr"}, tensor<f32> {dsc.output = "loss_scale"}, tensor<f32> {dsc.output = "skipped"}
// The scale this step uses, at the top.
// CHECK: %[[STORED:.*]] = dsc.load @optimizer.loss_scale
// CHECK: %[[UNSET:.*]] = dsc.compare eq, %[[STORED]], %{{.*}}
// CHECK: %[[INIT:.*]] = dsc.constant dense<1.600000e+01>
// CHECK: %[[SCALE:.*]] = dsc.select %[[UNSET]], %[[INIT]], %[[STORED]]
// The seed of the backward, the same scale.
// CHECK: %[[SEED0:.*]] = dsc.constant dense<1.600000e+01>
// CHECK: %[[SSTORED:.*]] = dsc.load @optimizer.loss_scale
// CHECK: %[[SUNSET:.*]] = dsc.compare eq, %[[SSTORED]]
// CHECK: %[[SEED:.*]] = dsc.select %[[SUNSET]], %[[SEED0]], %[[SSTORED]]
// CHECK: %[[G:.*]] = dsc.mul %{{.*}}, %arg0
// Overflow check: every gradient element times zero, squared and summed
// (zero, or nan after an inf or a nan); the unscale factor goes to the
// update.
// CHECK: %[[ZERO:.*]] = dsc.constant dense<0.000000e+00>
// CHECK: %[[SUM:.*]] = dsc.sum_squares(%[[G]] : tensor<4xf32>) scale(%[[ZERO]] : tensor<f32>)
// CHECK: %[[FINITE:.*]] = dsc.compare eq, %[[SUM]]
// CHECK: %[[INV:.*]] = dsc.div %{{.*}}, %[[SCALE]]
// CHECK: %[[SKIPPED:.*]] = dsc.select %[[FINITE]], %{{.*}}, %{{.*}}
// The scaler: halve once hysteresis is down to 1, grow after 3 clean steps.
// CHECK: %[[CUR:.*]] = dsc.select %{{.*}}, %{{.*}}, %{{.*}}
// CHECK: %[[HALVE:.*]] = dsc.compare le, %[[CUR]]
// CHECK: dsc.constant dense<3.000000e+00>
// CHECK: %[[SKIP:.*]] = dsc.select %[[FINITE]], %{{.*}}, %{{.*}} : tensor<i1>, tensor<i1>, tensor<i1>
// CHECK: %[[NEW:.*]] = dsc.sgd_update params(%{{.*}}) grads(%[[G]] : tensor<4xf32>) {{.*}} unscale(%[[INV]] : tensor<f32>) skip(%[[SKIP]] : tensor<i1>)
// CHECK: dsc.store %[[NEW]] to @w
// CHECK: dsc.store %{{.*}} to @optimizer.step
// CHECK: dsc.store %{{.*}} to @optimizer.loss_scale
// CHECK: dsc.store %{{.*}} to @optimizer.hysteresis
// CHECK: dsc.store %{{.*}} to @optimizer.good_steps
// CHECK: return %{{.*}}, %{{.*}}, %[[SCALE]], %[[SKIPPED]]

// A static scale: the seed is the constant, no scaler state, overflow
// still skips the step.
// STATIC-NOT: optimizer.loss_scale
// STATIC-LABEL: func.func @forward
// STATIC: dsc.constant dense<8.000000e+00>
// STATIC: dsc.compare eq
// STATIC: dsc.store
// STATIC-NOT: optimizer.hysteresis

// UNSEEDED: error: loss scaling needs the backward seeded with the loss scale: run --dsc-autodiff="seed=65536.000000 seed-state=optimizer.loss_scale" before --dsc-optimizer
// MISMATCH: error: loss scaling needs the backward seeded with the loss scale: run --dsc-autodiff="seed=16.000000 seed-state=optimizer.loss_scale" before --dsc-optimizer
// HYST: error: hysteresis must be at least 1, got 0
// BADSEED: error: seed 0.000000e+00 must be positive and finite

// With gradient accumulation the overflow test reads the accumulated
// gradients behind the optimizer boundary (once per optimizer step), the
// scaler and `skipped` are computed there too, and the update skips on an
// overflow only.
// RUN: dsc-opt %s --dsc-autodiff="seed=16.0 seed-state=optimizer.loss_scale" --dsc-optimizer="optimizer=sgd loss-scaling=1 initial-scale-power=4 grad-accum=2" | FileCheck %s --check-prefix=ACCUM
// ACCUM-LABEL: func.func @forward
// ACCUM: %[[B:.*]] = dsc.compare ge
// ACCUM: %[[ACC:.*]] = dsc.add %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>
// ACCUM-NOT: dsc.store
// ACCUM: %[[SUM:.*]]:3 = dsc.optimizer_boundary %[[ACC]]
// ACCUM-NOT: dsc.store
// ACCUM: dsc.sum_squares(%[[SUM]]#0 : tensor<4xf32>)
// ACCUM-NOT: dsc.store
// ACCUM: %[[FINITE:.*]] = dsc.compare eq
// ACCUM-NOT: dsc.store
// ACCUM: %[[S0:.*]] = dsc.select %[[FINITE]]
// ACCUM-NOT: dsc.store
// ACCUM: %[[SKIPPED:.*]] = dsc.select %[[B]], %[[S0]], %{{.*}}
// ACCUM-NOT: dsc.store
// ACCUM: %[[SKIP:.*]] = dsc.select %[[FINITE]], %{{.*}}, %{{.*}} : tensor<i1>, tensor<i1>, tensor<i1>
// ACCUM: dsc.sgd_update {{.*}} grads(%[[SUM]]#0 : tensor<4xf32>) {{.*}} skip(%[[SKIP]] : tensor<i1>)
// ACCUM: dsc.store %{{.*}} to @optimizer.micro_step
// ACCUM: dsc.store %{{.*}} to @w.grad_acc
// ACCUM: return %{{.*}}, %{{.*}}, %{{.*}}, %[[SKIPPED]]
