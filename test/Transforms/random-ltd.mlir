// RUN: dsc-opt %S/Inputs/three-blocks.mlir --dsc-random-ltd=kept=4 | FileCheck %s
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --dsc-random-ltd="kept=4 layers=0,2 seed=9" | FileCheck %s --check-prefix=LAYERS
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --dsc-random-ltd=kept=8 > %t.full
// RUN: dsc-opt %S/Inputs/three-blocks.mlir > %t.plain
// RUN: diff %t.plain %t.full

// Default layers: the middle block only. One index draw for the step,
// the kept-token mask, then the block's ops at length 4 between a gather
// and a scatter; the causal mask is the 4 x 4 one.
// CHECK-LABEL: func.func @forward
// CHECK: %[[KEY:.*]] = dsc.step_key : tensor<4xi64>
// CHECK: %[[IDX:.*]] = dsc.random_ltd_indices %[[KEY]], length = 8, seed = 0 : tensor<2x4xi64>
// CHECK: %[[COL:.*]] = dsc.reshape %[[IDX]] : tensor<2x4xi64> -> tensor<2x4x1xi64>
// CHECK: %[[IDX3:.*]] = dsc.broadcast %[[COL]] : tensor<2x4x1xi64> -> tensor<2x4x4xi64>
// CHECK: %[[HITS:.*]] = dsc.scatter_add %{{.*}}, %[[COL]], %{{.*}}, dim = 1 : tensor<2x8x1xf32>, tensor<2x4x1xi64>, tensor<2x4x1xf32>
// CHECK: %[[KEEP:.*]] = dsc.compare gt, %[[HITS]], %{{.*}} : tensor<2x8x1xf32>, tensor<f32>
// The first block runs on every token.
// CHECK: dsc.causal_mask %{{.*}} : tensor<2x8x8xf32>
// CHECK: %[[X1:.*]] = dsc.add %{{.*}} : tensor<2x8x4xf32>, tensor<2x8x4xf32>
// CHECK: %[[XK:.*]] = dsc.gather %[[X1]], %[[IDX3]], dim = 1 : tensor<2x8x4xf32>, tensor<2x4x4xi64>
// CHECK: dsc.layer_norm %[[XK]] {{.*}} : tensor<2x4x4xf32>
// CHECK: dsc.causal_mask %{{.*}} : tensor<2x4x4xf32>
// CHECK: dsc.reshape %{{.*}} : tensor<2x4x4xf32> -> tensor<8x4xf32>
// CHECK: %[[YK:.*]] = dsc.add %[[XK]], %{{.*}} : tensor<2x4x4xf32>, tensor<2x4x4xf32>
// CHECK: %[[SC:.*]] = dsc.scatter_add %{{.*}}, %[[IDX3]], %[[YK]], dim = 1 : tensor<2x8x4xf32>, tensor<2x4x4xi64>, tensor<2x4x4xf32>
// CHECK: %[[X2:.*]] = dsc.select %[[KEEP]], %[[SC]], %[[X1]] : tensor<2x8x1xi1>, tensor<2x8x4xf32>, tensor<2x8x4xf32>
// CHECK: dsc.layer_norm %[[X2]]
// The last block, and the loss, on every token.
// CHECK: dsc.causal_mask %{{.*}} : tensor<2x8x8xf32>
// CHECK-NOT: dsc.gather
// CHECK: dsc.cross_entropy {{.*}} : tensor<2x8x16xf32>, tensor<2x8xi64>

// Chosen layers, one draw shared by both.
// LAYERS: dsc.random_ltd_indices %{{.*}}, length = 8, seed = 9 : tensor<2x4xi64>
// LAYERS-NOT: dsc.random_ltd_indices
// LAYERS: dsc.gather {{.*}} : tensor<2x8x4xf32>, tensor<2x4x4xi64>
// LAYERS: dsc.select
// LAYERS: dsc.causal_mask %{{.*}} : tensor<2x8x8xf32>
// LAYERS: dsc.gather {{.*}} : tensor<2x8x4xf32>, tensor<2x4x4xi64>
// LAYERS: dsc.select
// LAYERS: dsc.cross_entropy
