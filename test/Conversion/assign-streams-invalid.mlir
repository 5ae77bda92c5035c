// RUN: dsc-opt %s --dscrt-assign-streams --split-input-file -verify-diagnostics

// The pass places streams once: a step with a stream of another kind than
// the conversion's two is assigned already.
func.func @assigned() {
  %compute = dscrt.stream "compute"
  // expected-error @+1 {{'dscrt.stream' op is a stream of a step whose streams are assigned: --dscrt-assign-streams expects its work on "compute" and its collectives on "comm"}}
  %d2h = dscrt.stream "d2h"
  %x = dscrt.input 0 "x" : memref<4xf32, #dscrt.host>
  %d = dscrt.alloc : memref<4xf32>
  dscrt.copy %x to %d on %compute : memref<4xf32, #dscrt.host> to memref<4xf32>
  %h = dscrt.alloc : memref<4xf32, #dscrt.host>
  dscrt.copy %d to %h on %d2h : memref<4xf32> to memref<4xf32, #dscrt.host>
  dscrt.synchronize %compute
  dscrt.synchronize %d2h
  return
}

// -----

// Work on a stream the function does not create (an argument) is not the
// conversion's serial step either.
func.func @foreign_stream(%other: !dscrt.stream) {
  %compute = dscrt.stream "compute"
  %x = dscrt.input 0 "x" : memref<4xf32, #dscrt.host>
  %d = dscrt.alloc : memref<4xf32>
  // expected-error @+1 {{'dscrt.copy' op is on a stream the conversion does not use: --dscrt-assign-streams expects it on "compute"}}
  dscrt.copy %x to %d on %other : memref<4xf32, #dscrt.host> to memref<4xf32>
  dscrt.synchronize %compute
  return
}
