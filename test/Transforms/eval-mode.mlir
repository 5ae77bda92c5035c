// RUN: dsc-opt %s --dsc-eval-mode | FileCheck %s
// RUN: dsc-opt %s --step=eval | FileCheck %s --check-prefix=PIPELINE
// RUN: dsc-opt %s --step=train --optimizer=sgd | FileCheck %s --check-prefix=TRAIN

// Every dropout passes its input through; the key goes when nothing reads
// it. The evaluation pipeline runs the pass; training keeps the dropouts.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: dsc.step_key
// CHECK-NOT: dsc.dropout
// CHECK: %[[T:.*]] = dsc.tanh %arg0
// CHECK: dsc.add %[[T]], %[[T]]
// PIPELINE-NOT: dsc.dropout
// TRAIN: dsc.dropout
dsc.state parameter @w : tensor<8xf32>
func.func @forward(%x: tensor<2x8xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %key = dsc.step_key : tensor<4xi64>
  %d = dsc.dropout %x, %key, p = 0.1, seed = 0, samples = 2 : tensor<2x8xf32>
  %t = dsc.tanh %d : tensor<2x8xf32>
  %e = dsc.dropout %t, %key, p = 0.5, seed = 1, samples = 2 : tensor<2x8xf32>
  %s = dsc.add %t, %e : tensor<2x8xf32>, tensor<2x8xf32>
  %w = dsc.load @w : tensor<8xf32>
  %m = dsc.mul %s, %w : tensor<2x8xf32>, tensor<8xf32>
  %loss = dsc.reduce_sum %m, dims = [0, 1] : tensor<2x8xf32>
  return %loss : tensor<f32>
}
