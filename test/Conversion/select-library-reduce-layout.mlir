// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library | FileCheck %s

// Every form of the reduction and layout ops is a library kernel: the
// forms the library does not take become ones it does in the lowering.

// CHECK-LABEL: func.func @step()
func.func @forward(%p: tensor<16x4xf32>, %w: tensor<50x8xf32>, %ids32: tensor<6xi32>,
                   %x7: tensor<1x2x1x2x1x2x3xf32>, %x: tensor<4x6x5xf32>,
                   %ids: tensor<6xi64>)
    -> (tensor<16x2xi64>, tensor<6x8xf32>, tensor<3x2x1x2x1x2x1xf32>, tensor<6xf32>,
        tensor<6x8xf32>, tensor<4xf32>) {
  // Top-k writes both results, though only the indices are used.
  // CHECK: dscrt.kernel "top_k" on
  // CHECK-SAME: outs(%{{.*}}, %{{.*}} : memref<16x2xf32>, memref<16x2xi64>)
  %v, %i = dsc.top_k %p, k = 2, dim = 1 : tensor<16x4xf32>
  // i32 ids: the library takes int64 indices, converted by a generated loop.
  // CHECK: dscrt.kernel on
  // CHECK: dsc.convert %{{.*}} : tensor<6xi32> to tensor<6xi64>
  // CHECK: dscrt.kernel "embedding" on
  // CHECK: dsc.embedding %{{.*}}, %{{.*}} : tensor<50x8xf32>, tensor<6xi64>
  %h = dsc.embedding %w, %ids32 : tensor<50x8xf32>, tensor<6xi32>
  // Rank 7: the emitter drops the dims of size 1 (or refuses more than
  // dsc::kernels::Dims holds).
  // CHECK: dscrt.kernel "permute" on
  // CHECK: dsc.permute
  %t = dsc.permute %x7, [6, 5, 4, 3, 2, 1, 0] : tensor<1x2x1x2x1x2x3xf32>
  // Reduced dims that are not adjacent: permuted last, then one row
  // reduction.
  // CHECK: dscrt.kernel "permute" on
  // CHECK: dsc.permute %{{.*}}, [1, 0, 2] : tensor<4x6x5xf32>
  // CHECK: dscrt.kernel "reduce" on
  // CHECK: dsc.reduce_sum %{{.*}}, dims = [1, 2] : tensor<6x4x5xf32>
  %r = dsc.reduce_sum %x, dims = [0, 2] : tensor<4x6x5xf32>
  // CHECK: dscrt.kernel "embedding" on
  %h2 = dsc.embedding %w, %ids : tensor<50x8xf32>, tensor<6xi64>
  // CHECK: dscrt.kernel "reduce" on
  // CHECK: dsc.reduce_mean
  %r2 = dsc.reduce_mean %x, dims = [1, 2] : tensor<4x6x5xf32>
  return %i, %h, %t, %r, %h2, %r2 : tensor<16x2xi64>, tensor<6x8xf32>,
      tensor<3x2x1x2x1x2x1xf32>, tensor<6xf32>, tensor<6x8xf32>, tensor<4xf32>
}
