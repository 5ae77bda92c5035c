// RUN: dsc-opt %s --dsc-plan-memory | FileCheck %s

// A collective runs on its own stream while compute goes on: its buffer %a
// stays live until compute waits for an event recorded on comm after it, so
// %b, written by compute meanwhile, gets other memory.
// CHECK-LABEL: func.func @step() attributes {dscrt.arena_bytes = 2048 : i64}
// CHECK: dscrt.buffer 0 : memref<256xf32>
// CHECK: dscrt.all_reduce
// CHECK: dscrt.buffer 1024 : memref<256xf32>
func.func @step() {
  %compute = dscrt.stream "compute"
  %comm = dscrt.stream "comm"
  %a = dscrt.alloc : memref<256xf32>
  dscrt.kernel on %compute ins() outs(%a : memref<256xf32>) {
    %r = dsc.constant dense<1.0> : tensor<256xf32>
    dscrt.yield %r : tensor<256xf32>
  }
  %written = dscrt.record %compute
  dscrt.wait %comm for %written
  dscrt.all_reduce %a on %comm {sequence = 0 : i64} : memref<256xf32>
  %reduced = dscrt.record %comm
  %b = dscrt.alloc : memref<256xf32>
  dscrt.kernel on %compute ins() outs(%b : memref<256xf32>) {
    %r = dsc.constant dense<2.0> : tensor<256xf32>
    dscrt.yield %r : tensor<256xf32>
  }
  dscrt.wait %compute for %reduced
  dscrt.synchronize %compute
  dscrt.synchronize %comm
  return
}
