// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library | FileCheck %s

// dsc.step_key is a host buffer the runtime fills (dscrt.step_key), copied
// to device memory on compute as a graph input is; a dropout reads that
// copy in its library kernel (dsc/kernels/Random.h), f32, bf16 or f16.
// f64 is not among the library's types.

// CHECK-LABEL: func.func @step()
// CHECK: %[[HOST:.*]] = dscrt.step_key : memref<4xi64, #dscrt.host>
// CHECK: %[[KEY:.*]] = dscrt.alloc : memref<4xi64>
// CHECK: dscrt.copy %[[HOST]] to %[[KEY]] on
// CHECK: dscrt.kernel "dropout" on %{{.*}} ins(%{{.*}}, %[[KEY]] : memref<2x8xf32>, memref<4xi64>)
// CHECK: dsc.dropout %{{.*}}, %{{.*}}, p = 1.000000e-01, seed = 0, samples = 2 : tensor<2x8xf32>
// CHECK: dscrt.kernel "dropout" on %{{.*}} ins(%{{.*}}, %[[KEY]] : memref<2x8xbf16>, memref<4xi64>)
// CHECK: dscrt.kernel on %{{.*}} ins(%{{.*}}, %[[KEY]] : memref<2x8xf64>, memref<4xi64>)
// CHECK-NOT: dscrt.step_key
func.func @forward(%x: tensor<2x8xf32> {dsc.input = "x"}, %xb: tensor<2x8xbf16> {dsc.input = "xb"},
                   %xd: tensor<2x8xf64> {dsc.input = "xd"})
    -> (tensor<2x8xf32>, tensor<2x8xbf16>, tensor<2x8xf64>) {
  %key = dsc.step_key : tensor<4xi64>
  %y = dsc.dropout %x, %key, p = 0.1, seed = 0, samples = 2 : tensor<2x8xf32>
  %yb = dsc.dropout %xb, %key, p = 0.5, seed = 1, samples = 2 : tensor<2x8xbf16>
  %yd = dsc.dropout %xd, %key, p = 0.5, seed = 2, samples = 2 : tensor<2x8xf64>
  return %y, %yb, %yd : tensor<2x8xf32>, tensor<2x8xbf16>, tensor<2x8xf64>
}
