// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd lr=0.1 momentum=0.9 grad-accum=4" | FileCheck %s
// RUN: dsc-opt %s --dsc-optimizer="optimizer=adamw grad-accum=2" | FileCheck %s --check-prefix=ADAMW
// RUN: not dsc-opt %s --dsc-optimizer="grad-accum=0" 2>&1 | FileCheck %s --check-prefix=ZERO

// Gradient accumulation over 4 micro-batches: the gradient / 4 is added to
// the parameter's accumulator (a `gradient` state); the update applies when
// the micro-step count reaches 4, and otherwise stores the old values back.

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
// CHECK: %[[W:.*]] = dsc.load @w :
// CHECK: %[[BUF:.*]] = dsc.load @w.momentum_buffer
// CHECK: %[[NB:.*]] = dsc.add %{{.*}}, %[[G]]
// CHECK: %[[KEEPBUF:.*]] = dsc.select %[[B]], %[[NB]], %[[BUF]]
// CHECK: %[[NEW:.*]] = dsc.sub %[[W]], %{{.*}}
// CHECK: %[[KEEPW:.*]] = dsc.select %[[B]], %[[NEW]], %[[W]]
// CHECK: dsc.store %[[NEXTM]] to @optimizer.micro_step
// CHECK: dsc.store %[[NEXTACC]] to @w.grad_acc
// CHECK: dsc.store %[[KEEPBUF]] to @w.momentum_buffer
// CHECK: dsc.store %[[KEEPW]] to @w
// CHECK: %[[KEEPSTEP:.*]] = dsc.select %[[B]], %[[STEP]], %[[N]]
// CHECK: dsc.store %[[KEEPSTEP]] to @optimizer.step

// AdamW: the moments and the parameter (with its decay) are kept alike.
// ADAMW: dsc.state gradient @w.grad_acc
// ADAMW: %[[B:.*]] = dsc.compare ge
// ADAMW: %[[W:.*]] = dsc.load @w :
// ADAMW: %[[M:.*]] = dsc.load @w.exp_avg :
// ADAMW: %[[V:.*]] = dsc.load @w.exp_avg_sq :
// ADAMW: dsc.select %[[B]], %{{.*}}, %[[M]]
// ADAMW: dsc.select %[[B]], %{{.*}}, %[[V]]
// ADAMW: dsc.select %[[B]], %{{.*}}, %[[W]]

// ZERO: error: grad-accum must be at least 1, got 0
