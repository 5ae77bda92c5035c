// RUN: dsc-opt %s --dsc-lower-to-runtime --split-input-file | FileCheck %s
// RUN: dsc-opt %s --dsc-lower-to-runtime=fuse-elementwise=false --split-input-file | FileCheck %s --check-prefix=NOFUSE

dsc.state parameter @"fc.weight" : tensor<4x8xf32>
dsc.state buffer @"mask" : tensor<4xf32>

// CHECK-LABEL: func.func @step()
// CHECK-NOT: func.func @forward
// One stream, compute, for kernels and copies: no collectives, no comm.
// CHECK: %[[S:.*]] = dscrt.stream "compute"
// CHECK-NOT: dscrt.stream
// Inputs by index and name, in host memory, copied to device buffers.
// CHECK: %[[XH:.*]] = dscrt.input 0 "x" : memref<2x8xf32, #dscrt.host>
// CHECK-NEXT: %[[X:.*]] = dscrt.alloc : memref<2x8xf32>
// CHECK-NEXT: dscrt.copy %[[XH]] to %[[X]] on %[[S]] : memref<2x8xf32, #dscrt.host> to memref<2x8xf32>
// CHECK: %[[YH:.*]] = dscrt.input 1 "y" : memref<2xi64, #dscrt.host>
// CHECK-NEXT: %[[Y:.*]] = dscrt.alloc : memref<2xi64>
// CHECK-NEXT: dscrt.copy %[[YH]] to %[[Y]] on %[[S]]
// State by index and name.
// CHECK: %[[W:.*]] = dscrt.state 0 "fc.weight" : memref<4x8xf32>
// One kernel per non-elementwise op, writing a fresh buffer.
// CHECK: %[[H:.*]] = dscrt.alloc : memref<2x4xf32>
// CHECK: dscrt.kernel on %[[S]] ins(%[[X]], %[[W]] : memref<2x8xf32>, memref<4x8xf32>) outs(%[[H]] : memref<2x4xf32>) {
// CHECK: dsc.linear
// CHECK: dscrt.yield
// The elementwise chain mul -> tanh -> add is one kernel; the scale constant
// and the mask state are its inputs.
// CHECK: %[[C:.*]] = dscrt.constant dense<5.000000e-01> : tensor<f32> : memref<f32>
// CHECK: %[[M:.*]] = dscrt.state 1 "mask" : memref<4xf32>
// CHECK: %[[E:.*]] = dscrt.alloc : memref<2x4xf32>
// CHECK: dscrt.kernel on %[[S]] ins(%[[H]], %[[C]], %[[M]] : memref<2x4xf32>, memref<f32>, memref<4xf32>) outs(%[[E]] : memref<2x4xf32>) {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<2x4xf32>, %{{.*}}: tensor<f32>, %{{.*}}: tensor<4xf32>):
// CHECK-NEXT: dsc.mul
// CHECK-NEXT: dsc.tanh
// CHECK-NEXT: dsc.add
// CHECK-NEXT: dscrt.yield
// A reshape is a view of the same buffer.
// CHECK: %[[V:.*]] = dscrt.view %[[E]] : memref<2x4xf32> to memref<8xf32>
// CHECK: dscrt.kernel on %[[S]] ins(%[[V]] : memref<8xf32>)
// CHECK: dsc.reduce_sum
// CHECK: dsc.cross_entropy
// The output: a host buffer the result is copied into; the host waits for
// the stream before the step returns.
// CHECK: dsc.add
// CHECK: %[[LH:.*]] = dscrt.output 0 "loss" : memref<f32, #dscrt.host>
// CHECK-NEXT: dscrt.copy %{{.*}} to %[[LH]] on %[[S]] : memref<f32> to memref<f32, #dscrt.host>
// CHECK-NEXT: dscrt.synchronize %[[S]]
// CHECK-NEXT: return

// NOFUSE-COUNT-3: dscrt.kernel on %{{.*}} ins(%{{.*}}) outs(%{{.*}} : memref<2x4xf32>)
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

// A value used by two ops is not fused into either: it reaches memory once.
// Used twice by one op, it is computed once inside that op's loop.
// CHECK-LABEL: func.func @step()
// CHECK: dscrt.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: dsc.exp
// CHECK-NEXT: dscrt.yield
// CHECK: dscrt.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: dsc.mul
// CHECK-NEXT: dsc.neg
// CHECK-NEXT: dsc.sin
// CHECK-NEXT: dsc.mul
// CHECK-NEXT: dsc.sub
// CHECK-NEXT: dscrt.yield
func.func @forward(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<4xf32> {dsc.output = "y"}) {
  %e = dsc.exp %x : tensor<4xf32>
  %m = dsc.mul %e, %x : tensor<4xf32>, tensor<4xf32>
  %n = dsc.neg %m : tensor<4xf32>
  %s = dsc.sin %n : tensor<4xf32>
  %q = dsc.mul %s, %s : tensor<4xf32>, tensor<4xf32>
  %d = dsc.sub %q, %e : tensor<4xf32>, tensor<4xf32>
  return %d : tensor<4xf32>
}

// -----

// A value used by one op and stored joins that op's kernel as one more
// output: an optimizer's new moment is computed with the parameter's update,
// in one kernel. Both are written straight into their states' memory (no
// copies): every read of the old values is inside the kernel, at the
// element it writes.
// CHECK-LABEL: func.func @step()
// CHECK: dscrt.eval_exit
// CHECK-NEXT: %[[OLDP:.*]] = dscrt.state 0 "p" : memref<4xf32>
// CHECK-NEXT: %[[OLDM:.*]] = dscrt.state 1 "p.m" : memref<4xf32>
// CHECK-NEXT: %[[M:.*]] = dscrt.state 1 "p.m" : memref<4xf32>
// CHECK-NEXT: %[[P:.*]] = dscrt.state 0 "p" : memref<4xf32>
// CHECK-NEXT: dscrt.kernel on %{{.*}} ins(%[[OLDM]], %{{.*}}, %[[OLDP]] : memref<4xf32>, memref<4xf32>, memref<4xf32>) outs(%[[M]], %[[P]] : memref<4xf32>, memref<4xf32>) {
// CHECK: %[[NM:.*]] = dsc.add
// CHECK-NEXT: %[[NP:.*]] = dsc.sub
// CHECK-NEXT: dscrt.yield %[[NM]], %[[NP]]
// CHECK-NOT: dscrt.kernel
// CHECK: return
dsc.state parameter @p : tensor<4xf32>
dsc.state optimizer @p.m : tensor<4xf32>
func.func @train(%g: tensor<4xf32> {dsc.input = "g"}) -> (tensor<4xf32> {dsc.output = "g2"}) {
  %p = dsc.load @p : tensor<4xf32>
  %m = dsc.load @p.m : tensor<4xf32>
  %nm = dsc.add %m, %g : tensor<4xf32>, tensor<4xf32>
  %np = dsc.sub %p, %nm : tensor<4xf32>, tensor<4xf32>
  dsc.store %nm to @p.m : tensor<4xf32>
  dsc.store %np to @p : tensor<4xf32>
  return %g : tensor<4xf32>
}

// -----

// The old value is read after the kernel that computes the new one (by the
// reduction): the new value goes to a buffer and the store copies it, once
// every read is done.
// CHECK-LABEL: func.func @step()
// CHECK: dscrt.state 0 "p"
// CHECK-NEXT: %[[N:.*]] = dscrt.alloc : memref<4xf32>
// CHECK-NEXT: dscrt.kernel on {{.*}} outs(%[[N]] : memref<4xf32>) {
// CHECK: dsc.mul
// CHECK: dsc.reduce_sum
// CHECK: %[[S:.*]] = dscrt.state 0 "p"
// CHECK-NEXT: dscrt.kernel on %{{.*}} ins(%[[N]] : memref<4xf32>) outs(%[[S]] : memref<4xf32>) {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: dscrt.yield
dsc.state parameter @p : tensor<4xf32>
func.func @train(%g: tensor<4xf32> {dsc.input = "g"}) -> (tensor<f32> {dsc.output = "l"}) {
  %p = dsc.load @p : tensor<4xf32>
  %n = dsc.mul %p, %g : tensor<4xf32>, tensor<4xf32>
  %l = dsc.reduce_sum %p, dims = [0] : tensor<4xf32>
  dsc.store %n to @p : tensor<4xf32>
  return %l : tensor<f32>
}

// -----

// Collectives: a copy on compute, then an in-place all-reduce on comm,
// numbered in program order. Comm waits for compute's event recorded after
// the copy; compute waits for comm's event before it reads the sum.
// CHECK-LABEL: func.func @step()
// CHECK: %[[S:.*]] = dscrt.stream "compute"
// CHECK-NEXT: %[[M:.*]] = dscrt.stream "comm"
// CHECK: dscrt.copy
// CHECK-NEXT: %[[A:.*]] = dscrt.alloc : memref<f32>
// CHECK: dscrt.kernel on %[[S]] ins(%{{.*}} : memref<f32>) outs(%[[A]] : memref<f32>) {
// CHECK-NEXT: ^bb0(%[[ARG:.*]]: tensor<f32>):
// CHECK-NEXT: dscrt.yield %[[ARG]] : tensor<f32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[E0:.*]] = dscrt.record %[[S]]
// CHECK-NEXT: dscrt.wait %[[M]] for %[[E0]]
// CHECK-NEXT: dscrt.all_reduce %[[A]] on %[[M]] {sequence = 0 : i64} : memref<f32>
// CHECK-NEXT: %[[E1:.*]] = dscrt.record %[[M]]
// CHECK-NEXT: dscrt.wait %[[S]] for %[[E1]]
// CHECK-NEXT: %[[B:.*]] = dscrt.alloc : memref<f32>
// CHECK-NEXT: dscrt.kernel on %[[S]] ins(%[[A]] : memref<f32>) outs(%[[B]] : memref<f32>)
// CHECK: %[[E2:.*]] = dscrt.record %[[S]]
// CHECK-NEXT: dscrt.wait %[[M]] for %[[E2]]
// CHECK-NEXT: dscrt.all_reduce %[[B]] on %[[M]] {sequence = 1 : i64} : memref<f32>
// CHECK-NEXT: %[[E3:.*]] = dscrt.record %[[M]]
// CHECK-NEXT: dscrt.wait %[[S]] for %[[E3]]
// CHECK-NEXT: %[[Y:.*]] = dscrt.output 0 "y"
// CHECK-NEXT: dscrt.copy %[[B]] to %[[Y]] on %[[S]]
// CHECK-NEXT: dscrt.synchronize %[[S]]
// CHECK-NEXT: dscrt.synchronize %[[M]]
// CHECK-NEXT: return
func.func @forward(%x: tensor<f32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "y"}) {
  %a = dsc.all_reduce %x : tensor<f32>
  %b = dsc.all_reduce %a : tensor<f32>
  return %b : tensor<f32>
}

// -----

// Compute overlaps the collectives: work that does not read a sum runs before
// the wait, and one wait for the latest event covers both sums. A reshape of
// a sum is a view: its reader waits, not the view.
// CHECK-LABEL: func.func @step()
// CHECK: %[[S:.*]] = dscrt.stream "compute"
// CHECK: %[[M:.*]] = dscrt.stream "comm"
// CHECK: dscrt.all_reduce %{{.*}} on %[[M]] {sequence = 0 : i64}
// CHECK-NEXT: dscrt.record %[[M]]
// CHECK-NEXT: dscrt.alloc
// CHECK-NEXT: dscrt.kernel on %[[S]]
// CHECK: dsc.exp
// CHECK: dscrt.all_reduce %{{.*}} on %[[M]] {sequence = 1 : i64}
// CHECK-NEXT: %[[E:.*]] = dscrt.record %[[M]]
// CHECK-NEXT: dscrt.view
// CHECK-NEXT: dscrt.view
// CHECK-NEXT: dscrt.wait %[[S]] for %[[E]]
// CHECK-NOT: dscrt.wait %[[S]]
// CHECK: dsc.add
// CHECK: dscrt.synchronize
func.func @forward(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<2x2xf32> {dsc.output = "y"}) {
  %a = dsc.all_reduce %x : tensor<4xf32>
  %e = dsc.exp %x : tensor<4xf32>
  %b = dsc.all_reduce %e : tensor<4xf32>
  %v = dsc.reshape %a : tensor<4xf32> -> tensor<2x2xf32>
  %w = dsc.reshape %b : tensor<4xf32> -> tensor<2x2xf32>
  %s = dsc.add %v, %w : tensor<2x2xf32>, tensor<2x2xf32>
  return %s : tensor<2x2xf32>
}

// -----

// A sum nobody reads is waited for before the step ends.
// CHECK-LABEL: func.func @step()
// CHECK: dscrt.all_reduce
// CHECK-NEXT: %[[E:.*]] = dscrt.record
// CHECK: dscrt.copy
// CHECK-NEXT: dscrt.wait %{{.*}} for %[[E]]
// CHECK-NEXT: dscrt.synchronize
func.func @forward(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<4xf32> {dsc.output = "y"}) {
  %a = dsc.all_reduce %x : tensor<4xf32>
  %e = dsc.exp %x : tensor<4xf32>
  return %e : tensor<4xf32>
}
