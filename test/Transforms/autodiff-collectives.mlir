// RUN: dsc-opt %s --dsc-autodiff --split-input-file | FileCheck %s

// The gradient of dsc.all_gather is a dsc.reduce_scatter of the cotangent:
// every rank's cotangent of the gathered whole is partial, and the owner of
// each block gets their sum.
module attributes {dsc.world_size = 2 : i64} {
  dsc.state parameter @s : tensor<2xf32>
  func.func @gathered(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
    %s = dsc.load @s : tensor<2xf32>
    %w = dsc.all_gather %s : tensor<2xf32> -> tensor<4xf32>
    %p = dsc.mul %w, %x : tensor<4xf32>, tensor<4xf32>
    %l = dsc.reduce_sum %p, dims = [0] : tensor<4xf32>
    return %l : tensor<f32>
  }
}
// (--dsc-autodiff then all-reduces every parameter's gradient on W > 1, as
// it does for the replicated parameters it is built for: --dsc-zero runs
// after it and never differentiates through a gather.)
// CHECK-LABEL: func.func @gathered
// CHECK: dsc.reduce_sum
// CHECK: %[[D:.*]] = dsc.mul %{{.*}}, %arg0 : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: %[[G:.*]] = dsc.reduce_scatter %[[D]] : tensor<4xf32> -> tensor<2xf32>
// CHECK: return %{{.*}}, %{{.*}} : tensor<f32>, tensor<2xf32>

// -----

// The gradient of dsc.reduce_scatter is a dsc.all_gather of the cotangent.
module attributes {dsc.world_size = 2 : i64} {
  dsc.state parameter @w : tensor<4xf32>
  func.func @scattered(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
    %w = dsc.load @w : tensor<4xf32>
    %p = dsc.mul %w, %x : tensor<4xf32>, tensor<4xf32>
    %r = dsc.reduce_scatter %p : tensor<4xf32> -> tensor<2xf32>
    %l = dsc.reduce_sum %r, dims = [0] : tensor<2xf32>
    return %l : tensor<f32>
  }
}
// CHECK-LABEL: func.func @scattered
// CHECK: %[[DR:.*]] = dsc.broadcast %{{.*}} : tensor<1xf32> -> tensor<2xf32>
// CHECK-NEXT: %[[DP:.*]] = dsc.all_gather %[[DR]] : tensor<2xf32> -> tensor<4xf32>
// CHECK-NEXT: dsc.mul %[[DP]], %{{.*}} : tensor<4xf32>, tensor<4xf32>
