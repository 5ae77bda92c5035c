// RUN: dsc-opt %s --dscrt-verify-step --split-input-file | FileCheck %s

// Ordered steps pass unchanged: a collective after compute's event, compute
// after the collective's, a copy stream ordered through comm (transitively),
// and work enqueued after the host synchronized a stream.
// CHECK-LABEL: func.func @ordered
func.func @ordered() {
  %compute = dscrt.stream "compute"
  %comm = dscrt.stream "comm"
  %d2h = dscrt.stream "d2h"
  %x = dscrt.input 0 "x" : memref<4xf32, #dscrt.host>
  %a = dscrt.alloc : memref<4xf32>
  dscrt.copy %x to %a on %compute : memref<4xf32, #dscrt.host> to memref<4xf32>
  %written = dscrt.record %compute
  dscrt.wait %comm for %written
  dscrt.all_reduce %a on %comm {sequence = 0 : i64} : memref<4xf32>
  %reduced = dscrt.record %comm
  dscrt.wait %d2h for %reduced
  %h = dscrt.alloc : memref<4xf32, #dscrt.host>
  dscrt.copy %a to %h on %d2h : memref<4xf32> to memref<4xf32, #dscrt.host>
  dscrt.synchronize %d2h
  %y = dscrt.output 0 "y" : memref<4xf32, #dscrt.host>
  dscrt.copy %h to %y on %compute : memref<4xf32, #dscrt.host> to memref<4xf32, #dscrt.host>
  dscrt.synchronize %compute
  dscrt.synchronize %comm
  return
}
