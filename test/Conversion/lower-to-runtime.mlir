// RUN: dsc-opt %s --dsc-lower-to-runtime --split-input-file | FileCheck %s
// RUN: dsc-opt %s --dsc-lower-to-runtime=fuse-elementwise=false --split-input-file | FileCheck %s --check-prefix=NOFUSE

dsc.state parameter @"fc.weight" : tensor<4x8xf32>
dsc.state buffer @"mask" : tensor<4xf32>

// CHECK-LABEL: func.func @step()
// CHECK-NOT: func.func @forward
// Inputs and state by index and name.
// CHECK: %[[X:.*]] = dscrt.input 0 "x" : memref<2x8xf32>
// CHECK: %[[Y:.*]] = dscrt.input 1 "y" : memref<2xi64>
// CHECK: %[[W:.*]] = dscrt.state 0 "fc.weight" : memref<4x8xf32>
// One kernel per non-elementwise op, writing a fresh buffer.
// CHECK: %[[H:.*]] = dscrt.alloc : memref<2x4xf32>
// CHECK: dscrt.kernel ins(%[[X]], %[[W]] : memref<2x8xf32>, memref<4x8xf32>) outs(%[[H]] : memref<2x4xf32>) {
// CHECK: dsc.linear
// CHECK: dscrt.yield
// The elementwise chain mul -> tanh -> add is one kernel; the scale constant
// and the mask state are its inputs.
// CHECK: %[[C:.*]] = dscrt.constant dense<5.000000e-01> : tensor<f32> : memref<f32>
// CHECK: %[[M:.*]] = dscrt.state 1 "mask" : memref<4xf32>
// CHECK: %[[E:.*]] = dscrt.alloc : memref<2x4xf32>
// CHECK: dscrt.kernel ins(%[[H]], %[[C]], %[[M]] : memref<2x4xf32>, memref<f32>, memref<4xf32>) outs(%[[E]] : memref<2x4xf32>) {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<2x4xf32>, %{{.*}}: tensor<f32>, %{{.*}}: tensor<4xf32>):
// CHECK-NEXT: dsc.mul
// CHECK-NEXT: dsc.tanh
// CHECK-NEXT: dsc.add
// CHECK-NEXT: dscrt.yield
// A reshape is a view of the same buffer.
// CHECK: %[[V:.*]] = dscrt.view %[[E]] : memref<2x4xf32> to memref<8xf32>
// CHECK: dscrt.kernel ins(%[[V]] : memref<8xf32>)
// CHECK: dsc.reduce_sum
// CHECK: dsc.cross_entropy
// CHECK: dscrt.output 0 "loss", %{{.*}} : memref<f32>
// CHECK-NEXT: return

// NOFUSE-COUNT-3: dscrt.kernel ins(%{{.*}}) outs(%{{.*}} : memref<2x4xf32>)
func.func @forward(%x: tensor<2x8xf32> {dsc.input = "x"}, %y: tensor<2xi64> {dsc.input = "y"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @"fc.weight" : tensor<4x8xf32>
  %h = dsc.linear %x, %w : tensor<2x8xf32>, tensor<4x8xf32>
  %c = dsc.constant dense<0.5> : tensor<f32>
  %s = dsc.mul %h, %c : tensor<2x4xf32>, tensor<f32>
  %t = dsc.tanh %s : tensor<2x4xf32>
  %m = dsc.load @"mask" : tensor<4xf32>
  %e = dsc.add %t, %m : tensor<2x4xf32>, tensor<4xf32>
  %v = dsc.reshape %e : tensor<2x4xf32> -> tensor<8xf32>
  %r = dsc.reduce_sum %v, dims = [0] : tensor<8xf32>
  %l = dsc.cross_entropy %e, %y : tensor<2x4xf32>, tensor<2xi64>
  %o = dsc.add %l, %r : tensor<f32>, tensor<f32>
  return %o : tensor<f32>
}

// -----

// A value used twice is not fused into its users: it reaches memory once.
// CHECK-LABEL: func.func @step()
// CHECK: dscrt.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: dsc.exp
// CHECK-NEXT: dscrt.yield
// CHECK: dscrt.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: dsc.mul
// CHECK-NEXT: dsc.neg
// CHECK-NEXT: dscrt.yield
func.func @forward(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<4xf32> {dsc.output = "y"}) {
  %e = dsc.exp %x : tensor<4xf32>
  %m = dsc.mul %e, %e : tensor<4xf32>, tensor<4xf32>
  %n = dsc.neg %m : tensor<4xf32>
  return %n : tensor<4xf32>
}

// -----

// Collectives: a copy, then an in-place all-reduce numbered in program order.
// CHECK-LABEL: func.func @step()
// CHECK: %[[A:.*]] = dscrt.alloc : memref<f32>
// CHECK: dscrt.kernel ins(%{{.*}} : memref<f32>) outs(%[[A]] : memref<f32>) {
// CHECK-NEXT: ^bb0(%[[ARG:.*]]: tensor<f32>):
// CHECK-NEXT: dscrt.yield %[[ARG]] : tensor<f32>
// CHECK: dscrt.all_reduce %[[A]] {sequence = 0 : i64} : memref<f32>
// CHECK: dscrt.all_reduce %{{.*}} {sequence = 1 : i64} : memref<f32>
func.func @forward(%x: tensor<f32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "y"}) {
  %a = dsc.all_reduce %x : tensor<f32>
  %b = dsc.all_reduce %a : tensor<f32>
  return %b : tensor<f32>
}
