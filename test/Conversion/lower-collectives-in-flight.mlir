// RUN: dsc-opt %s --dsc-lower-to-runtime | FileCheck %s

// At most two collectives run behind compute: issuing the third makes
// compute wait for the first, so its buffers are free from there on (the
// memory plan ends a collective's buffers at that wait).
// CHECK:      %[[COMPUTE:.*]] = dscrt.stream "compute"
// CHECK:      %[[COMM:.*]] = dscrt.stream "comm"
// CHECK:      dscrt.all_reduce {{.*}}sequence = 0
// CHECK-NEXT: %[[E0:.*]] = dscrt.record %[[COMM]]
// CHECK-NOT:  dscrt.wait %[[COMPUTE]]
// CHECK:      dscrt.all_reduce {{.*}}sequence = 1
// CHECK-NEXT: %[[E1:.*]] = dscrt.record %[[COMM]]
// CHECK-NOT:  dscrt.wait %[[COMPUTE]]
// CHECK:      dscrt.all_reduce {{.*}}sequence = 2
// CHECK-NEXT: %[[E2:.*]] = dscrt.record %[[COMM]]
// CHECK-NEXT: dscrt.wait %[[COMPUTE]] for %[[E0]]
// CHECK:      dscrt.wait %[[COMPUTE]] for %[[E1]]
// CHECK:      dscrt.wait %[[COMPUTE]] for %[[E2]]

module attributes {dsc.world_size = 2 : i64} {
  func.func @step(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<4xf32> {dsc.output = "y"}) {
    %a = dsc.exp %x : tensor<4xf32>
    %r0 = dsc.all_reduce %a : tensor<4xf32>
    %b = dsc.tanh %x : tensor<4xf32>
    %r1 = dsc.all_reduce %b : tensor<4xf32>
    %c = dsc.neg %x : tensor<4xf32>
    %r2 = dsc.all_reduce %c : tensor<4xf32>
    %s0 = dsc.add %r0, %r1 : tensor<4xf32>, tensor<4xf32>
    %s1 = dsc.add %s0, %r2 : tensor<4xf32>, tensor<4xf32>
    return %s1 : tensor<4xf32>
  }
}
