// RUN: dsc-opt %s --dscrt-verify-step --split-input-file -verify-diagnostics

// A collective reads what compute wrote, but comm never waited for it.
func.func @read_unordered() {
  %compute = dscrt.stream "compute"
  %comm = dscrt.stream "comm"
  %x = dscrt.input 0 "x" : memref<4xf32, #dscrt.host>
  // expected-note @+1 {{the buffer}}
  %a = dscrt.alloc : memref<4xf32>
  // expected-note @+1 {{the unordered access}}
  dscrt.copy %x to %a on %compute : memref<4xf32, #dscrt.host> to memref<4xf32>
  // expected-error @+1 {{'dscrt.all_reduce' op on stream 'comm' reads a buffer written on stream 'compute' without waiting for it}}
  dscrt.all_reduce %a on %comm {sequence = 0 : i64} : memref<4xf32>
  dscrt.synchronize %compute
  dscrt.synchronize %comm
  return
}

// -----

// An event recorded before the write covers nothing of it.
func.func @event_too_early() {
  %compute = dscrt.stream "compute"
  %comm = dscrt.stream "comm"
  %x = dscrt.input 0 "x" : memref<4xf32, #dscrt.host>
  // expected-note @+1 {{the buffer}}
  %a = dscrt.alloc : memref<4xf32>
  %early = dscrt.record %compute
  // expected-note @+1 {{the unordered access}}
  dscrt.copy %x to %a on %compute : memref<4xf32, #dscrt.host> to memref<4xf32>
  dscrt.wait %comm for %early
  // expected-error @+1 {{'dscrt.all_reduce' op on stream 'comm' reads a buffer written on stream 'compute' without waiting for it}}
  dscrt.all_reduce %a on %comm {sequence = 0 : i64} : memref<4xf32>
  dscrt.synchronize %compute
  dscrt.synchronize %comm
  return
}

// -----

// Compute overwrites a state a copy to the host may still be reading; the
// two dscrt.state ops of index 2 are one state.
func.func @overwrite_while_read() {
  %compute = dscrt.stream "compute"
  %d2h = dscrt.stream "d2h"
  // expected-note @+1 {{the buffer}}
  %w = dscrt.state 2 "w" : memref<4xf32>
  %h = dscrt.alloc : memref<4xf32, #dscrt.host>
  // expected-note @+1 {{the unordered access}}
  dscrt.copy %w to %h on %d2h : memref<4xf32> to memref<4xf32, #dscrt.host>
  %again = dscrt.state 2 "w" : memref<4xf32>
  %c = dscrt.constant dense<0.5> : tensor<4xf32> : memref<4xf32>
  // expected-error @+1 {{'dscrt.copy' op on stream 'compute' overwrites a buffer read on stream 'd2h' without waiting for it}}
  dscrt.copy %c to %again on %compute : memref<4xf32> to memref<4xf32>
  dscrt.synchronize %compute
  dscrt.synchronize %d2h
  return
}

// -----

// A view reads its source's memory.
func.func @through_a_view() {
  %compute = dscrt.stream "compute"
  %comm = dscrt.stream "comm"
  %x = dscrt.input 0 "x" : memref<4xf32, #dscrt.host>
  // expected-note @+1 {{the buffer}}
  %a = dscrt.alloc : memref<4xf32>
  %v = dscrt.view %a : memref<4xf32> to memref<2x2xf32>
  dscrt.copy %x to %a on %compute : memref<4xf32, #dscrt.host> to memref<4xf32>
  %written = dscrt.record %compute
  dscrt.wait %comm for %written
  // expected-note @+1 {{the unordered access}}
  dscrt.all_reduce %a on %comm {sequence = 0 : i64} : memref<4xf32>
  %b = dscrt.alloc : memref<2x2xf32>
  // expected-error @+1 {{'dscrt.copy' op on stream 'compute' reads a buffer written on stream 'comm' without waiting for it}}
  dscrt.copy %v to %b on %compute : memref<2x2xf32> to memref<2x2xf32>
  dscrt.synchronize %compute
  dscrt.synchronize %comm
  return
}

// -----

func.func @read_unwritten() {
  %compute = dscrt.stream "compute"
  %a = dscrt.alloc : memref<4xf32>
  %b = dscrt.alloc : memref<4xf32>
  // expected-error @+1 {{'dscrt.copy' op reads a buffer that nothing has written}}
  dscrt.copy %a to %b on %compute : memref<4xf32> to memref<4xf32>
  dscrt.synchronize %compute
  return
}

// -----

func.func @unused_alloc() {
  %compute = dscrt.stream "compute"
  // expected-error @+1 {{'dscrt.alloc' op allocates a buffer nothing uses}}
  %a = dscrt.alloc : memref<4xf32>
  return
}

// -----

func.func @not_synchronized() {
  %compute = dscrt.stream "compute"
  %comm = dscrt.stream "comm"
  %c = dscrt.constant dense<0.5> : tensor<4xf32> : memref<4xf32>
  %a = dscrt.alloc : memref<4xf32>
  dscrt.copy %c to %a on %compute : memref<4xf32> to memref<4xf32>
  %written = dscrt.record %compute
  dscrt.wait %comm for %written
  dscrt.all_reduce %a on %comm {sequence = 0 : i64} : memref<4xf32>
  dscrt.synchronize %compute
  // expected-error @+1 {{'func.return' op returns before synchronizing stream 'comm', which has work pending}}
  return
}

// -----

// A host kernel reads what an NVMe read writes, but the host stream never
// waited for the read.
func.func @read_of_nvme_read_unordered() {
  %host = dscrt.stream "host"
  %nvme = dscrt.stream "nvme"
  // expected-note @+1 {{the buffer}}
  %h = dscrt.alloc : memref<4xf32, #dscrt.host>
  // expected-note @+1 {{the unordered access}}
  dscrt.nvme_read 0 "w.exp_avg" to %h on %nvme : memref<4xf32, #dscrt.host>
  %o = dscrt.output 0 "o" : memref<4xf32, #dscrt.host>
  // expected-error @+1 {{'dscrt.kernel' op on stream 'host' reads a buffer written on stream 'nvme' without waiting for it}}
  dscrt.kernel on %host ins(%h : memref<4xf32, #dscrt.host>) outs(%o : memref<4xf32, #dscrt.host>) {
  ^bb0(%v: tensor<4xf32>):
    dscrt.yield %v : tensor<4xf32>
  }
  dscrt.synchronize %host
  dscrt.synchronize %nvme
  return
}

// -----

// A host kernel overwrites a buffer an NVMe write may still be reading.
func.func @overwrite_while_nvme_write() {
  %host = dscrt.stream "host"
  %nvme = dscrt.stream "nvme"
  %x = dscrt.input 0 "x" : memref<4xf32, #dscrt.host>
  // expected-note @+1 {{the buffer}}
  %h = dscrt.alloc : memref<4xf32, #dscrt.host>
  dscrt.kernel on %host ins(%x : memref<4xf32, #dscrt.host>) outs(%h : memref<4xf32, #dscrt.host>) {
  ^bb0(%v: tensor<4xf32>):
    dscrt.yield %v : tensor<4xf32>
  }
  %written = dscrt.record %host
  dscrt.wait %nvme for %written
  // expected-note @+1 {{the unordered access}}
  dscrt.nvme_write %h to 0 "w.exp_avg" on %nvme : memref<4xf32, #dscrt.host>
  // expected-error @+1 {{'dscrt.kernel' op on stream 'host' overwrites a buffer read on stream 'nvme' without waiting for it}}
  dscrt.kernel on %host ins(%x : memref<4xf32, #dscrt.host>) outs(%h : memref<4xf32, #dscrt.host>) {
  ^bb0(%v: tensor<4xf32>):
    dscrt.yield %v : tensor<4xf32>
  }
  dscrt.synchronize %host
  dscrt.synchronize %nvme
  return
}
