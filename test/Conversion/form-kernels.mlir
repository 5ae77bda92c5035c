// RUN: dsc-opt %s --dsc-form-kernels --split-input-file | FileCheck %s
// RUN: dsc-opt %s --dsc-form-kernels=fuse-elementwise=false --split-input-file | FileCheck %s --check-prefix=NOFUSE

// An elementwise chain is one group, numbered at its last op; a
// non-elementwise op and an elementwise op whose value two ops read stay
// kernels of their own.
// CHECK-LABEL: func.func @chain
// CHECK: dsc.linear
// CHECK-NOT: dsc.fusion_group
// CHECK: dsc.exp %{{.*}} : tensor
// CHECK-NOT: dsc.fusion_group
// CHECK: dsc.mul %{{.*}} {dsc.fusion_group = 0 : i64}
// CHECK-NEXT: dsc.tanh %{{.*}} {dsc.fusion_group = 0 : i64}
// CHECK-NEXT: dsc.add %{{.*}} {dsc.fusion_group = 0 : i64}
// NOFUSE-NOT: dsc.fusion_group
func.func @chain(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %h = dsc.linear %x, %w : tensor<2x8xf32>, tensor<4x8xf32>
  %e = dsc.exp %h : tensor<2x4xf32>
  %m = dsc.mul %e, %e : tensor<2x4xf32>, tensor<2x4xf32>
  %t = dsc.tanh %m : tensor<2x4xf32>
  %a = dsc.add %t, %e : tensor<2x4xf32>, tensor<2x4xf32>
  return %a, %e : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// A value read by its user and stored joins the user's group (one more
// output of the kernel); the groups of one function are numbered apart.
dsc.state optimizer @m : tensor<4xf32>
// CHECK-LABEL: func.func @stored
// CHECK: dsc.mul %{{.*}} {dsc.fusion_group = 0 : i64}
// CHECK-NEXT: dsc.add %{{.*}} {dsc.fusion_group = 0 : i64}
// CHECK-NEXT: dsc.store
// CHECK-NEXT: dsc.neg %{{.*}} {dsc.fusion_group = 1 : i64}
// CHECK-NEXT: dsc.exp %{{.*}} {dsc.fusion_group = 1 : i64}
func.func @stored(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %m = dsc.mul %x, %x : tensor<4xf32>, tensor<4xf32>
  %u = dsc.add %m, %x : tensor<4xf32>, tensor<4xf32>
  dsc.store %m to @m : tensor<4xf32>
  %n = dsc.neg %u : tensor<4xf32>
  %e = dsc.exp %n : tensor<4xf32>
  return %e, %u : tensor<4xf32>, tensor<4xf32>
}

// -----

// The optimizer boundary splits a chain: a kernel runs where its last op
// is, so the negation before the boundary would run once per optimizer
// step only. An operand of another shape is not fused either.
// CHECK-LABEL: func.func @boundary
// CHECK-NOT: dsc.fusion_group
// CHECK: return
func.func @boundary(%g: tensor<4xf32>, %v: tensor<2x4xf32>) -> (tensor<4xf32>, tensor<2x4xf32>) {
  %s = dsc.neg %g : tensor<4xf32>
  %b:1 = dsc.optimizer_boundary %g : (tensor<4xf32>) -> (tensor<4xf32>)
  %n = dsc.add %b#0, %s : tensor<4xf32>, tensor<4xf32>
  %e = dsc.exp %g : tensor<4xf32>
  %r = dsc.mul %v, %e : tensor<2x4xf32>, tensor<4xf32>
  return %n, %r : tensor<4xf32>, tensor<2x4xf32>
}
