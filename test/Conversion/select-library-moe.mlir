// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library | FileCheck %s

// The mixture-of-experts routing ops are the library's (dsc/kernels/Moe.h)
// in every form they take: slots with and without priority (both results
// written), dispatch and combine with and without weights, route dot; rows
// of f32, bf16 or f16. f64 rows are not among the library's types.

// CHECK-LABEL: func.func @step()
func.func @forward(%experts: tensor<16x2xi64>, %priority: tensor<16x2xf32>,
                   %x: tensor<16x32xf32>, %w: tensor<16x2xf32>, %xb: tensor<16x32xbf16>,
                   %wh: tensor<16x2xf16>, %xh: tensor<16x32xf16>, %x64: tensor<16x32xf64>)
    -> (tensor<16x2xi64>, tensor<4x5x32xf32>, tensor<4x5x32xf32>, tensor<16x32xf32>,
        tensor<16x32xf32>, tensor<16x2xf32>, tensor<4x5x32xbf16>, tensor<16x2xf16>,
        tensor<4x5x32xf64>) {
  // CHECK: dscrt.kernel "moe_slots" on
  // CHECK-SAME: outs(%{{.*}}, %{{.*}} : memref<16x2xi64>, memref<4xi64>)
  // CHECK: dsc.moe_slots
  %slots, %counts = dsc.moe_slots %experts, capacity = 5
      : tensor<16x2xi64> -> tensor<16x2xi64>, tensor<4xi64>
  // CHECK: dscrt.kernel "moe_slots" on
  // CHECK: dsc.moe_slots {{.*}} priority
  %kept, %c2 = dsc.moe_slots %experts priority %priority, capacity = 5
      : tensor<16x2xi64>, tensor<16x2xf32> -> tensor<16x2xi64>, tensor<4xi64>
  // CHECK: dscrt.kernel "moe_dispatch" on
  %d = dsc.moe_dispatch %x, %slots : tensor<16x32xf32>, tensor<16x2xi64> -> tensor<4x5x32xf32>
  // CHECK: dscrt.kernel "moe_dispatch" on
  %dw = dsc.moe_dispatch %x, %kept, %w
      : tensor<16x32xf32>, tensor<16x2xi64>, tensor<16x2xf32> -> tensor<4x5x32xf32>
  // CHECK: dscrt.kernel "moe_combine" on
  %y = dsc.moe_combine %d, %slots : tensor<4x5x32xf32>, tensor<16x2xi64> -> tensor<16x32xf32>
  // CHECK: dscrt.kernel "moe_combine" on
  %yw = dsc.moe_combine %dw, %kept, %w
      : tensor<4x5x32xf32>, tensor<16x2xi64>, tensor<16x2xf32> -> tensor<16x32xf32>
  // CHECK: dscrt.kernel "moe_route_dot" on
  %g = dsc.moe_route_dot %x, %dw, %kept
      : tensor<16x32xf32>, tensor<4x5x32xf32>, tensor<16x2xi64> -> tensor<16x2xf32>
  // CHECK: dscrt.kernel "moe_dispatch" on
  // CHECK-SAME: memref<16x32xbf16>
  %db = dsc.moe_dispatch %xb, %slots : tensor<16x32xbf16>, tensor<16x2xi64> -> tensor<4x5x32xbf16>
  // CHECK: dscrt.kernel "moe_dispatch" on
  // CHECK-SAME: memref<16x2xf16>
  %dh = dsc.moe_dispatch %xh, %slots, %wh
      : tensor<16x32xf16>, tensor<16x2xi64>, tensor<16x2xf16> -> tensor<4x5x32xf16>
  // CHECK: dscrt.kernel "moe_route_dot" on
  // CHECK-SAME: memref<16x32xf16>
  %gh = dsc.moe_route_dot %xh, %dh, %slots
      : tensor<16x32xf16>, tensor<4x5x32xf16>, tensor<16x2xi64> -> tensor<16x2xf16>
  // CHECK: dscrt.kernel on
  // CHECK: dsc.moe_dispatch
  %d64 = dsc.moe_dispatch %x64, %slots : tensor<16x32xf64>, tensor<16x2xi64> -> tensor<4x5x32xf64>
  return %kept, %d, %dw, %y, %yw, %g, %db, %gh, %d64 : tensor<16x2xi64>, tensor<4x5x32xf32>,
      tensor<4x5x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x2xf32>,
      tensor<4x5x32xbf16>, tensor<16x2xf16>, tensor<4x5x32xf64>
}
