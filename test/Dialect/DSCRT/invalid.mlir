// RUN: dsc-opt %s -split-input-file -verify-diagnostics

func.func @unaligned() attributes {dscrt.arena_bytes = 1024 : i64} {
  // expected-error @+1 {{'dscrt.buffer' op offset 100 must be a non-negative multiple of 256}}
  %b = dscrt.buffer 100 : memref<4xf32>
  return
}

// -----

func.func @past_arena() attributes {dscrt.arena_bytes = 512 : i64} {
  // expected-error @+1 {{'dscrt.buffer' op [256, 768) extends past the arena of 512 bytes}}
  %b = dscrt.buffer 256 : memref<128xf32>
  return
}

// -----

func.func @no_arena() {
  // expected-error @+1 {{'dscrt.buffer' op needs a 'dscrt.arena_bytes' on its function}}
  %b = dscrt.buffer 0 : memref<4xf32>
  return
}

// -----

func.func @constant_type() {
  // expected-error @+1 {{'dscrt.constant' op value of type 'tensor<2xf32>' does not fit the buffer 'memref<3xf32>'}}
  %c = dscrt.constant dense<1.0> : tensor<2xf32> : memref<3xf32>
  return
}

// -----

func.func @view_count(%x: memref<4xf32>) {
  // expected-error @+1 {{'dscrt.view' op cannot view 'memref<4xf32>' as 'memref<5xf32>' (element type and count must match)}}
  %v = dscrt.view %x : memref<4xf32> to memref<5xf32>
  return
}

// -----

func.func @kernel_args(%x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{'dscrt.kernel' op body argument 'tensor<8xf32>' does not match input 'memref<4xf32>'}}
  dscrt.kernel ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: tensor<8xf32>):
    dscrt.yield %a : tensor<8xf32>
  }
  return
}

// -----

func.func @kernel_arity(%x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{'dscrt.kernel' op body has 0 arguments for 1 inputs}}
  dscrt.kernel ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0:
    %c = dsc.constant dense<1.0> : tensor<4xf32>
    dscrt.yield %c : tensor<4xf32>
  }
  return
}

// -----

func.func @kernel_yield_count(%x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{'dscrt.kernel' op yields 2 values for 1 outputs}}
  dscrt.kernel ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    dscrt.yield %a, %a : tensor<4xf32>, tensor<4xf32>
  }
  return
}

// -----

func.func @kernel_yield_type(%x: memref<4xf32>, %y: memref<4xi64>) {
  // expected-error @+1 {{'dscrt.kernel' op yields 'tensor<4xf32>' into output 'memref<4xi64>'}}
  dscrt.kernel ins(%x : memref<4xf32>) outs(%y : memref<4xi64>) {
  ^bb0(%a: tensor<4xf32>):
    dscrt.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @dynamic(%x: memref<?xf32>) {
  // expected-error @+1 {{'dscrt.view' op operand #0 must be statically shaped memref}}
  %v = dscrt.view %x : memref<?xf32> to memref<4xf32>
  return
}

// -----

func.func @exit_before_output(%l: memref<f32>) {
  // expected-error @+1 {{'dscrt.eval_exit' op must follow every dscrt.output: an evaluation step would return before writing it}}
  dscrt.eval_exit
  dscrt.output 0 "loss", %l : memref<f32>
  return
}

// -----

func.func @exit_twice() {
  // expected-error @+1 {{'dscrt.eval_exit' op appears twice in the step}}
  dscrt.eval_exit
  dscrt.eval_exit
  return
}
