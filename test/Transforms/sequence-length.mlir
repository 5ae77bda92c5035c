// RUN: dsc-opt %S/Inputs/three-blocks.mlir --dsc-sequence-length=length=4 | FileCheck %s
// RUN: dsc-opt %S/Inputs/three-blocks.mlir --dsc-sequence-length=length=8 > %t.full
// RUN: dsc-opt %S/Inputs/three-blocks.mlir > %t.plain
// RUN: diff %t.plain %t.full

// Both inputs cut to their first 4 tokens before anything reads them; the
// position table cut where it meets the tokens; every block and the loss
// at length 4, reshapes included.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[TOK:.*]]: tensor<2x8xi64> {dsc.input = "tokens"}, %[[TGT:.*]]: tensor<2x8xi64> {dsc.input = "targets"})
// CHECK-NEXT: %[[T4:.*]] = dsc.slice %[[TOK]], dim = 1, start = 0, end = 4, step = 1 : tensor<2x8xi64>
// CHECK-NEXT: %[[G4:.*]] = dsc.slice %[[TGT]], dim = 1, start = 0, end = 4, step = 1 : tensor<2x8xi64>
// CHECK: dsc.embedding %{{.*}}, %[[T4]] : tensor<16x4xf32>, tensor<2x4xi64>
// CHECK: %[[POS:.*]] = dsc.embedding %{{.*}} : tensor<8x4xf32>, tensor<8xi64>
// CHECK: %[[POS4:.*]] = dsc.slice %[[POS]], dim = 0, start = 0, end = 4, step = 1 : tensor<8x4xf32>
// CHECK: dsc.add %{{.*}}, %[[POS4]] : tensor<2x4x4xf32>, tensor<4x4xf32>
// CHECK-COUNT-3: dsc.causal_mask %{{.*}} : tensor<2x4x4xf32>
// CHECK: dsc.reshape %{{.*}} : tensor<8x4xf32> -> tensor<2x4x4xf32>
// CHECK: dsc.cross_entropy %{{.*}}, %[[G4]] : tensor<2x4x16xf32>, tensor<2x4xi64>
// CHECK-NOT: tensor<2x8x4xf32>
