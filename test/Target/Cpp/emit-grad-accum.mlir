// RUN: dsc-opt %s --dsc-autodiff --dsc-optimizer="optimizer=sgd grad-accum=3" --dsc-lower-to-runtime --dscrt-select-library --dsc-plan-memory | dsc-translate --dscrt-to-cpp | FileCheck %s

// The artifact carries the micro-batches per optimizer step (the module's
// dsc.grad_accum) as its last ArtifactInfo field, and the accumulators as
// states of role Gradient.
// CHECK: {{[{][{]}}"w.grad_acc", ElementType::F32, 1, kShape{{[0-9]+}}}, dsc::rt::StateRole::Gradient},
// CHECK: const dsc::rt::ArtifactInfo kInfo = {{.*}}, kStreams, 3, 0, 1, 1, 0};

dsc.state parameter @w : tensor<4xf32>
func.func @forward(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<4xf32>
  %p = dsc.mul %w, %x : tensor<4xf32>, tensor<4xf32>
  %l = dsc.reduce_sum %p, dims = [0] : tensor<4xf32>
  return %l : tensor<f32>
}
