// RUN: dsc-opt %s --dsc-data-parallel="world-size=2 grad-accum=4" --dsc-autodiff --dsc-optimizer="optimizer=sgd lr=0.1 grad-accum=4" | FileCheck %s

// Gradient accumulation on 2 ranks: no micro-batch communicates. Each call
// adds its rank's loss / 4 (the data-parallel mean's share on this rank,
// the loss over 2) to optimizer.loss_acc; the call that ends the step sums
// it over the ranks once, behind the boundary, with the gradient.

// CHECK: dsc.state gradient @optimizer.loss_acc : tensor<f32>
// CHECK-LABEL: func.func @lm
// CHECK-NOT: dsc.all_reduce
// CHECK: %[[LOCAL:.*]] = dsc.cross_entropy
// CHECK-NOT: dsc.all_reduce
// CHECK: %[[TWO:.*]] = dsc.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NOT: dsc.all_reduce
// CHECK: %[[SHARE:.*]] = dsc.div %[[LOCAL]], %[[TWO]]
// CHECK-NOT: dsc.all_reduce
// CHECK: %[[ACC:.*]] = dsc.load @optimizer.loss_acc
// CHECK-NOT: dsc.all_reduce
// CHECK: %[[SCALED:.*]] = dsc.mul %[[SHARE]], %{{.*}}
// CHECK-NOT: dsc.all_reduce
// CHECK: %[[SUM:.*]] = dsc.add %[[ACC]], %[[SCALED]]
// CHECK-NOT: dsc.all_reduce
// CHECK: %[[GATE:.*]]:3 = dsc.optimizer_boundary %{{.*}}, %[[SUM]], %{{.*}}
// CHECK-DAG: dsc.all_reduce %[[GATE]]#0 : tensor<16x4xf32>
// CHECK-DAG: %[[LOSS:.*]] = dsc.all_reduce %[[GATE]]#1 : tensor<f32>
// CHECK: return %[[LOSS]]
dsc.state parameter @w : tensor<16x4xf32>
func.func @lm(%x: tensor<8x4xf32> {dsc.input = "x"}, %t: tensor<8xi64> {dsc.input = "targets"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<16x4xf32>
  %logits = dsc.linear %x, %w : tensor<8x4xf32>, tensor<16x4xf32>
  %loss = dsc.cross_entropy %logits, %t : tensor<8x16xf32>, tensor<8xi64>
  return %loss : tensor<f32>
}
