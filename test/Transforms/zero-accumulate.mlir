// Gradient accumulators (grad-accum) hold this rank's own, unreduced
// gradients: whole at every stage. The reduction (a reduce-scatter from
// stage 2) reads their sum behind the optimizer boundary: once per
// optimizer step, never on the other micro-batches.
// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd lr=0.1 grad-accum=2" --dsc-zero=stage=1 | FileCheck %s --check-prefix=ACC1
// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd lr=0.1 grad-accum=2" --dsc-zero=stage=2 | FileCheck %s --check-prefix=ACC2
// ACC1: module attributes {dsc.grad_accum = 2 : i64, dsc.world_size = 2 : i64, dsc.zero_stage = 1 : i64}
// ACC1: dsc.state gradient @w.grad_acc : tensor<3x5xf32>
// ACC1-LABEL: func.func @step
// ACC1-NOT: dsc.all_reduce
// ACC1: %[[SUM:.*]]:3 = dsc.optimizer_boundary
// ACC1: dsc.all_reduce %[[SUM]]#0 : tensor<3x5xf32>
// ACC1: dsc.local_shard
// ACC2: module attributes {dsc.grad_accum = 2 : i64, dsc.world_size = 2 : i64, dsc.zero_stage = 2 : i64}
// ACC2: dsc.state gradient @w.grad_acc : tensor<3x5xf32>
// ACC2-LABEL: func.func @step
// ACC2-NOT: dsc.reduce_scatter
// ACC2: dsc.load @w.grad_acc : tensor<3x5xf32>
// ACC2: %[[SUM:.*]]:3 = dsc.optimizer_boundary
// ACC2: %[[FLAT:.*]] = dsc.reshape %[[SUM]]#0
// ACC2: dsc.reduce_scatter %{{.*}} : tensor<16xf32> -> tensor<8xf32>
// ACC2: dsc.store %{{.*}} to @w.grad_acc : tensor<3x5xf32>
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
