// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd lr=0.1 grad-accum=2" --dsc-zero=stage=2 --dsc-lower-to-runtime | FileCheck %s
// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd lr=0.1 grad-accum=2" --dsc-zero=stage=2 --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s --check-prefix=CPP

// Gradient accumulation at ZeRO stage 2 on 2 ranks: every call accumulates
// the rank's gradient and loss and counts the micro-step; a call that ends
// no optimizer step returns at dscrt.micro_step_exit, before any
// collective; the reduce-scatter of the sum, the update, its all-gather,
// the step count and the outputs come after it. The step has no
// evaluation cut (dscrt.eval_exit): its loss is computed behind the
// boundary.
// CHECK-LABEL: func.func @step
// CHECK-NOT: dscrt.reduce_scatter
// CHECK-NOT: dscrt.all_gather
// CHECK-NOT: dscrt.output
// CHECK-NOT: dscrt.eval_exit
// CHECK: dscrt.state {{.*}} "optimizer.micro_step"
// CHECK-NOT: dscrt.reduce_scatter
// CHECK-NOT: dscrt.output
// CHECK: dscrt.state {{.*}} "w.grad_acc"
// CHECK-NOT: dscrt.reduce_scatter
// CHECK-NOT: dscrt.output
// CHECK: dscrt.state {{.*}} "optimizer.loss_acc"
// CHECK-NOT: dscrt.reduce_scatter
// CHECK-NOT: dscrt.output
// CHECK: dscrt.micro_step_exit
// CHECK-NOT: dscrt.eval_exit
// CHECK: dscrt.reduce_scatter {{.*}} {sequence = 0 : i64}
// CHECK: dscrt.all_gather {{.*}} {sequence = 1 : i64}
// CHECK: dscrt.state {{.*}} "optimizer.step"
// CHECK: dscrt.output 0 "loss"
// CHECK: dscrt.output 1 "lr"
// CHECK: dscrt.synchronize

// CPP-NOT: if (!ctx->training()) {
// CPP: if (!ctx->endsOptimizerStep()) {
// CPP: return;
// CPP: ctx->reduceScatterSum(
// CPP: ctx->allGather(
module attributes {dsc.world_size = 2 : i64} {
  dsc.state parameter @w : tensor<3x5xf32>
  func.func @step(%x: tensor<3x5xf32> {dsc.input = "x"})
      -> (tensor<f32> {dsc.output = "loss"},
          tensor<3x5xf32> {dsc.output = "grad.w", dsc.gradient_of = @w}) {
    %w = dsc.load @w : tensor<3x5xf32>
    %p = dsc.mul %w, %x : tensor<3x5xf32>, tensor<3x5xf32>
    %l = dsc.reduce_sum %p, dims = [0, 1] : tensor<3x5xf32>
    %g = dsc.all_reduce %x : tensor<3x5xf32>
    return %l, %g : tensor<f32>, tensor<3x5xf32>
  }
}
