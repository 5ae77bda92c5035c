// RUN: dsc-opt %s --dscrt-assign-streams --split-input-file | FileCheck %s
// RUN: dsc-opt %s --dscrt-assign-streams --dscrt-verify-step --split-input-file | FileCheck %s --check-prefix=VERIFIED

// The input of each case is a serial step, as --dsc-convert-to-runtime
// leaves it: every launch on "compute" but the collectives, on "comm".
// What the pass makes of it passes --dscrt-verify-step.
// VERIFIED-COUNT-4: func.func

// A collective waits for compute's work so far; compute waits for its sum
// before the kernel that reads it takes its output buffer; every stream is
// synchronized at the end, after compute waited for what nobody read.
// CHECK-LABEL: func.func @collective
// CHECK-NEXT: %[[COMPUTE:.*]] = dscrt.stream "compute"
// CHECK-NEXT: %[[COMM:.*]] = dscrt.stream "comm"
// CHECK: dscrt.kernel on %[[COMPUTE]] ins(%{{.*}}) outs(%[[G:.*]] : memref<4xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: dsc.neg
// CHECK-NEXT: dscrt.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[WRITTEN:.*]] = dscrt.record %[[COMPUTE]]
// CHECK-NEXT: dscrt.wait %[[COMM]] for %[[WRITTEN]]
// CHECK-NEXT: dscrt.all_reduce %[[G]] on %[[COMM]]
// CHECK-NEXT: %[[REDUCED:.*]] = dscrt.record %[[COMM]]
// CHECK-NEXT: dscrt.wait %[[COMPUTE]] for %[[REDUCED]]
// CHECK-NEXT: %[[H:.*]] = dscrt.alloc
// CHECK-NEXT: dscrt.kernel on %[[COMPUTE]] ins(%[[G]] : memref<4xf32>) outs(%[[H]] : memref<4xf32>)
// CHECK: %[[WRITTEN2:.*]] = dscrt.record %[[COMPUTE]]
// CHECK-NEXT: dscrt.wait %[[COMM]] for %[[WRITTEN2]]
// CHECK-NEXT: dscrt.all_reduce %[[H]] on %[[COMM]]
// CHECK-NEXT: %[[UNREAD:.*]] = dscrt.record %[[COMM]]
// CHECK-NEXT: dscrt.wait %[[COMPUTE]] for %[[UNREAD]]
// CHECK-NEXT: dscrt.synchronize %[[COMPUTE]]
// CHECK-NEXT: dscrt.synchronize %[[COMM]]
// CHECK-NEXT: return
func.func @collective() {
  %compute = dscrt.stream "compute"
  %comm = dscrt.stream "comm"
  %x = dscrt.input 0 "x" : memref<4xf32, #dscrt.host>
  %d = dscrt.alloc : memref<4xf32>
  dscrt.copy %x to %d on %compute : memref<4xf32, #dscrt.host> to memref<4xf32>
  %g = dscrt.alloc : memref<4xf32>
  dscrt.kernel on %compute ins(%d : memref<4xf32>) outs(%g : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %n = dsc.neg %a : tensor<4xf32>
    dscrt.yield %n : tensor<4xf32>
  }
  dscrt.all_reduce %g on %comm {sequence = 0 : i64} : memref<4xf32>
  %h = dscrt.alloc : memref<4xf32>
  dscrt.kernel on %compute ins(%g : memref<4xf32>) outs(%h : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %n = dsc.neg %a : tensor<4xf32>
    dscrt.yield %n : tensor<4xf32>
  }
  dscrt.all_reduce %h on %comm {sequence = 1 : i64} : memref<4xf32>
  dscrt.synchronize %compute
  return
}

// -----

// Two collectives may run behind compute: after the third, compute waits
// for the first, whose buffer is then free (and for the last at the end).
// CHECK-LABEL: func.func @in_flight
// CHECK: dscrt.all_gather %{{.*}} on %[[COMM:.*]] {sequence = 0
// CHECK-NEXT: %[[FIRST:.*]] = dscrt.record %[[COMM]]
// CHECK-NOT: dscrt.wait %{{.*}} for %[[FIRST]]
// CHECK: dscrt.all_gather %{{.*}} {sequence = 2
// CHECK-NEXT: %[[THIRD:.*]] = dscrt.record %[[COMM]]
// CHECK-NEXT: dscrt.wait %[[COMPUTE:.*]] for %[[FIRST]]
// CHECK-NEXT: dscrt.wait %[[COMPUTE]] for %[[THIRD]]
// CHECK-NEXT: dscrt.synchronize %[[COMPUTE]]
func.func @in_flight() {
  %compute = dscrt.stream "compute"
  %comm = dscrt.stream "comm"
  %x = dscrt.input 0 "x" : memref<2xf32, #dscrt.host>
  %d = dscrt.alloc : memref<2xf32>
  dscrt.copy %x to %d on %compute : memref<2xf32, #dscrt.host> to memref<2xf32>
  %a = dscrt.alloc : memref<4xf32>
  dscrt.all_gather %d to %a on %comm {sequence = 0 : i64} : memref<2xf32> to memref<4xf32>
  %b = dscrt.alloc : memref<4xf32>
  dscrt.all_gather %d to %b on %comm {sequence = 1 : i64} : memref<2xf32> to memref<4xf32>
  %c = dscrt.alloc : memref<4xf32>
  dscrt.all_gather %d to %c on %comm {sequence = 2 : i64} : memref<2xf32> to memref<4xf32>
  dscrt.synchronize %compute
  return
}

// -----

// ZeRO-Offload: the gradient's copy to the host runs on "d2h" after
// compute wrote it; the host update waits for the copy; the copy back runs
// on "h2d" after host and compute; compute waits for it, and for the copy
// to the host, before it writes the state. Streams are listed in reverse
// order of first use.
// CHECK-LABEL: func.func @offload
// CHECK-NEXT: %[[COMPUTE:.*]] = dscrt.stream "compute"
// CHECK-NEXT: %[[H2D:.*]] = dscrt.stream "h2d"
// CHECK-NEXT: %[[HOST:.*]] = dscrt.stream "host"
// CHECK-NEXT: %[[D2H:.*]] = dscrt.stream "d2h"
// CHECK: dscrt.kernel on %[[COMPUTE]] ins(%{{.*}}) outs(%[[G:.*]] : memref<4xf32>)
// CHECK: %[[WRITTEN:.*]] = dscrt.record %[[COMPUTE]]
// CHECK-NEXT: dscrt.wait %[[D2H]] for %[[WRITTEN]]
// CHECK-NEXT: %[[GH:.*]] = dscrt.alloc : memref<4xf32, #dscrt.host>
// CHECK-NEXT: dscrt.copy %[[G]] to %[[GH]] on %[[D2H]]
// CHECK-NEXT: %[[COPIED:.*]] = dscrt.record %[[D2H]]
// CHECK-NEXT: dscrt.wait %[[HOST]] for %[[COPIED]]
// CHECK-NEXT: %[[U:.*]] = dscrt.alloc : memref<4xf32, #dscrt.host>
// CHECK-NEXT: dscrt.kernel on %[[HOST]] ins(%[[GH]] {{.*}} outs(%[[U]]
// CHECK: %[[UPDATED:.*]] = dscrt.record %[[HOST]]
// CHECK-NEXT: dscrt.wait %[[H2D]] for %[[UPDATED]]
// CHECK-NEXT: %[[SO_FAR:.*]] = dscrt.record %[[COMPUTE]]
// CHECK-NEXT: dscrt.wait %[[H2D]] for %[[SO_FAR]]
// CHECK-NEXT: %[[UD:.*]] = dscrt.alloc : memref<4xf32>
// CHECK-NEXT: dscrt.copy %[[U]] to %[[UD]] on %[[H2D]]
// CHECK-NEXT: %[[BACK:.*]] = dscrt.record %[[H2D]]
// CHECK-NEXT: dscrt.wait %[[COMPUTE]] for %[[BACK]]
// CHECK-NEXT: dscrt.wait %[[COMPUTE]] for %[[COPIED]]
// CHECK-NEXT: %[[W:.*]] = dscrt.state 0 "w"
// CHECK-NEXT: dscrt.kernel on %[[COMPUTE]] ins(%[[UD]] {{.*}} outs(%[[W]]
// CHECK: dscrt.synchronize %[[COMPUTE]]
// CHECK-NEXT: dscrt.synchronize %[[D2H]]
// CHECK-NEXT: dscrt.synchronize %[[HOST]]
// CHECK-NEXT: dscrt.synchronize %[[H2D]]
// CHECK-NEXT: return
func.func @offload() {
  %compute = dscrt.stream "compute"
  %x = dscrt.input 0 "x" : memref<4xf32, #dscrt.host>
  %d = dscrt.alloc : memref<4xf32>
  dscrt.copy %x to %d on %compute : memref<4xf32, #dscrt.host> to memref<4xf32>
  %g = dscrt.alloc : memref<4xf32>
  dscrt.kernel on %compute ins(%d : memref<4xf32>) outs(%g : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %n = dsc.neg %a : tensor<4xf32>
    dscrt.yield %n : tensor<4xf32>
  }
  %gh = dscrt.alloc : memref<4xf32, #dscrt.host>
  dscrt.copy %g to %gh on %compute : memref<4xf32> to memref<4xf32, #dscrt.host>
  %u = dscrt.alloc : memref<4xf32, #dscrt.host>
  dscrt.kernel on %compute ins(%gh : memref<4xf32, #dscrt.host>) outs(%u : memref<4xf32, #dscrt.host>) {
  ^bb0(%a: tensor<4xf32>):
    %n = dsc.neg %a : tensor<4xf32>
    dscrt.yield %n : tensor<4xf32>
  }
  %ud = dscrt.alloc : memref<4xf32>
  dscrt.copy %u to %ud on %compute : memref<4xf32, #dscrt.host> to memref<4xf32>
  %w = dscrt.state 0 "w" : memref<4xf32>
  dscrt.kernel on %compute ins(%ud : memref<4xf32>) outs(%w : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    dscrt.yield %a : tensor<4xf32>
  }
  dscrt.synchronize %compute
  return
}

// -----

// ZeRO-Infinity's read-ahead, as the conversion placed it (two sub-groups
// read once the step is sure to reach its updates, the third after the
// first is written back): each sub-group's reads are one event of "nvme",
// which its host update waits for; the write-back waits for the update,
// and a read after it for the host's work so far, whose memory it may
// reuse.
// CHECK-LABEL: func.func @nvme_read_ahead
// CHECK-NEXT: %[[COMPUTE:.*]] = dscrt.stream "compute"
// CHECK-NEXT: %[[HOST:.*]] = dscrt.stream "host"
// CHECK-NEXT: %[[NVME:.*]] = dscrt.stream "nvme"
// CHECK: dscrt.eval_exit
// CHECK-NEXT: %[[M0:.*]] = dscrt.alloc
// CHECK-NEXT: dscrt.nvme_read 1 "w0.master" to %[[M0]] on %[[NVME]]
// CHECK-NEXT: %[[V0:.*]] = dscrt.alloc
// CHECK-NEXT: dscrt.nvme_read 2 "w0.exp_avg" to %[[V0]] on %[[NVME]]
// CHECK-NEXT: %[[READ0:.*]] = dscrt.record %[[NVME]]
// CHECK-NEXT: %[[M1:.*]] = dscrt.alloc
// CHECK-NEXT: dscrt.nvme_read 4 "w1.master" to %[[M1]] on %[[NVME]]
// CHECK-NEXT: %[[READ1:.*]] = dscrt.record %[[NVME]]
// CHECK-NEXT: dscrt.wait %[[HOST]] for %[[READ0]]
// CHECK-NEXT: dscrt.kernel on %[[HOST]] ins(%[[M0]], %[[V0]] {{.*}} outs(%[[M0]], %[[V0]]
// CHECK: %[[UPDATED0:.*]] = dscrt.record %[[HOST]]
// CHECK-NEXT: dscrt.wait %[[NVME]] for %[[UPDATED0]]
// CHECK-NEXT: dscrt.nvme_write %[[M0]] to 1 "w0.master" on %[[NVME]]
// CHECK-NEXT: dscrt.nvme_write %[[V0]] to 2 "w0.exp_avg" on %[[NVME]]
// CHECK-NEXT: %[[FREED:.*]] = dscrt.record %[[HOST]]
// CHECK-NEXT: dscrt.wait %[[NVME]] for %[[FREED]]
// CHECK-NEXT: %[[M2:.*]] = dscrt.alloc
// CHECK-NEXT: dscrt.nvme_read 7 "w2.master" to %[[M2]] on %[[NVME]]
// CHECK-NEXT: %[[READ2:.*]] = dscrt.record %[[NVME]]
// CHECK-NEXT: dscrt.wait %[[HOST]] for %[[READ1]]
// CHECK-NEXT: dscrt.kernel on %[[HOST]] ins(%[[M1]]
// CHECK: dscrt.wait %[[HOST]] for %[[READ2]]
// CHECK-NEXT: dscrt.kernel on %[[HOST]] ins(%[[M2]]
// CHECK: dscrt.synchronize %[[COMPUTE]]
// CHECK-NEXT: dscrt.synchronize %[[HOST]]
// CHECK-NEXT: dscrt.synchronize %[[NVME]]
module {
  dsc.state master @w0.master on nvme : tensor<4xf32>
  dsc.state optimizer @w0.exp_avg on nvme : tensor<4xf32>
  dsc.state master @w1.master on nvme : tensor<4xf32>
  dsc.state master @w2.master on nvme : tensor<4xf32>
  func.func @nvme_read_ahead() {
    %compute = dscrt.stream "compute"
    dscrt.eval_exit
    %m0 = dscrt.alloc : memref<4xf32, #dscrt.host>
    dscrt.nvme_read 1 "w0.master" to %m0 on %compute : memref<4xf32, #dscrt.host>
    %v0 = dscrt.alloc : memref<4xf32, #dscrt.host>
    dscrt.nvme_read 2 "w0.exp_avg" to %v0 on %compute : memref<4xf32, #dscrt.host>
    %m1 = dscrt.alloc : memref<4xf32, #dscrt.host>
    dscrt.nvme_read 4 "w1.master" to %m1 on %compute : memref<4xf32, #dscrt.host>
    dscrt.kernel on %compute ins(%m0, %v0 : memref<4xf32, #dscrt.host>, memref<4xf32, #dscrt.host>) outs(%m0, %v0 : memref<4xf32, #dscrt.host>, memref<4xf32, #dscrt.host>) {
    ^bb0(%m: tensor<4xf32>, %v: tensor<4xf32>):
      %n = dsc.add %m, %v : tensor<4xf32>, tensor<4xf32>
      %s = dsc.neg %v : tensor<4xf32>
      dscrt.yield %n, %s : tensor<4xf32>, tensor<4xf32>
    }
    dscrt.nvme_write %m0 to 1 "w0.master" on %compute : memref<4xf32, #dscrt.host>
    dscrt.nvme_write %v0 to 2 "w0.exp_avg" on %compute : memref<4xf32, #dscrt.host>
    %m2 = dscrt.alloc : memref<4xf32, #dscrt.host>
    dscrt.nvme_read 7 "w2.master" to %m2 on %compute : memref<4xf32, #dscrt.host>
    dscrt.kernel on %compute ins(%m1 : memref<4xf32, #dscrt.host>) outs(%m1 : memref<4xf32, #dscrt.host>) {
    ^bb0(%m: tensor<4xf32>):
      %n = dsc.neg %m : tensor<4xf32>
      dscrt.yield %n : tensor<4xf32>
    }
    dscrt.nvme_write %m1 to 4 "w1.master" on %compute : memref<4xf32, #dscrt.host>
    dscrt.kernel on %compute ins(%m2 : memref<4xf32, #dscrt.host>) outs(%m2 : memref<4xf32, #dscrt.host>) {
    ^bb0(%m: tensor<4xf32>):
      %n = dsc.neg %m : tensor<4xf32>
      dscrt.yield %n : tensor<4xf32>
    }
    dscrt.nvme_write %m2 to 7 "w2.master" on %compute : memref<4xf32, #dscrt.host>
    dscrt.synchronize %compute
    return
  }
}
