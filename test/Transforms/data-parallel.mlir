// RUN: dsc-opt %s --dsc-data-parallel=world-size=4 --split-input-file | FileCheck %s
// RUN: dsc-opt %s --dsc-data-parallel=world-size=1 --split-input-file | FileCheck %s --check-prefix=ONE
// RUN: dsc-opt %s --dsc-data-parallel="world-size=4 grad-accum=2" --split-input-file | FileCheck %s --check-prefix=ACCUM

// A mean cross-entropy becomes the global mean over counted tokens.
// CHECK: module attributes {dsc.world_size = 4 : i64}
// CHECK-LABEL: func.func @lm
// CHECK: %[[SUM:.*]] = dsc.cross_entropy %{{.*}}, %[[T:.*]] ignore_index = -1 reduction = sum
// CHECK: %[[IGN:.*]] = dsc.constant dense<-1> : tensor<i64>
// CHECK: %[[KEEP:.*]] = dsc.compare ne, %[[T]], %[[IGN]]
// CHECK: %[[ONES:.*]] = dsc.convert %[[KEEP]] : tensor<8xi1> to tensor<8xf32>
// CHECK: %[[CNT:.*]] = dsc.reduce_sum %[[ONES]], dims = [0]
// CHECK: %[[GS:.*]] = dsc.all_reduce %[[SUM]] : tensor<f32>
// CHECK: %[[GC:.*]] = dsc.all_reduce %[[CNT]] : tensor<f32>
// CHECK: %[[L:.*]] = dsc.div %[[GS]], %[[GC]]
// CHECK: return %[[L]]
// ONE: module attributes {dsc.world_size = 1 : i64}
// ONE-NOT: dsc.all_reduce
// With gradient accumulation each rank's loss is its own token mean (the
// backward then needs no global count), averaged over the ranks.
// ACCUM-LABEL: func.func @lm
// ACCUM: %[[LOCAL:.*]] = dsc.cross_entropy %{{.*}}, %{{.*}} ignore_index = -1 :
// ACCUM-NOT: reduction = sum
// ACCUM: %[[S:.*]] = dsc.all_reduce %[[LOCAL]] : tensor<f32>
// ACCUM: %[[N:.*]] = dsc.constant dense<4.000000e+00> : tensor<f32>
// ACCUM: %[[L:.*]] = dsc.div %[[S]], %[[N]]
// ACCUM: return %[[L]]
func.func @lm(%l: tensor<8x16xf32> {dsc.input = "logits"}, %t: tensor<8xi64> {dsc.input = "targets"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %loss = dsc.cross_entropy %l, %t ignore_index = -1 : tensor<8x16xf32>, tensor<8xi64>
  return %loss : tensor<f32>
}

// -----

// Any other output is averaged over the ranks.
// CHECK-LABEL: func.func @other
// CHECK: %[[S:.*]] = dsc.all_reduce %{{.*}} : tensor<f32>
// CHECK: %[[N:.*]] = dsc.constant dense<4.000000e+00> : tensor<f32>
// CHECK: dsc.div %[[S]], %[[N]]
func.func @other(%x: tensor<f32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %y = dsc.exp %x : tensor<f32>
  return %y : tensor<f32>
}
