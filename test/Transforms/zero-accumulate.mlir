// Gradient accumulators (grad-accum) are gradients: whole at stage 1, as
// DeepSpeed's stage 1 keeps full gradients, and partitioned from stage 2.
// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd lr=0.1 grad-accum=2" --dsc-zero=stage=1 | FileCheck %s --check-prefix=ACC1
// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd lr=0.1 grad-accum=2" --dsc-zero=stage=2 | FileCheck %s --check-prefix=ACC2
// ACC1: module attributes {dsc.grad_accum = 2 : i64, dsc.world_size = 2 : i64, dsc.zero_stage = 1 : i64}
// ACC1: dsc.state gradient @w.grad_acc : tensor<3x5xf32>
// ACC2: module attributes {dsc.grad_accum = 2 : i64, dsc.world_size = 2 : i64, dsc.zero_stage = 2 : i64}
// ACC2: dsc.state gradient @w.grad_acc {partition_of = array<i64: 3, 5>} : tensor<8xf32>
// ACC2-LABEL: func.func @step
// ACC2: dsc.reduce_scatter %{{.*}} : tensor<16xf32> -> tensor<8xf32>
// ACC2: dsc.load @w.grad_acc : tensor<8xf32>
// ACC2: dsc.store %{{.*}} to @w.grad_acc : tensor<8xf32>
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
