// RUN: dsc-translate --dscrt-to-cpp %s --split-input-file -verify-diagnostics

// expected-error @+1 {{expected a lowered @step function (run --dsc-lower-to-runtime --dsc-plan-memory)}}
module {
}

// -----

module {
  // expected-error @+1 {{the arena is not planned (run --dsc-plan-memory)}}
  func.func @step() {
    return
  }
}

// -----

module {
  func.func @step() attributes {dscrt.arena_bytes = 0 : i64} {
    // expected-error @+1 {{unplanned buffer: run --dsc-plan-memory first}}
    %a = dscrt.alloc : memref<4xf32>
    return
  }
}

// -----

module {
  func.func @step() attributes {dscrt.arena_bytes = 256 : i64} {
    %s = dscrt.stream "compute"
    %x = dscrt.state 0 "x" : memref<2x2xf64>
    %b = dscrt.buffer 0 : memref<2x2xf64>
    dscrt.kernel on %s ins(%x : memref<2x2xf64>) outs(%b : memref<2x2xf64>) {
    ^bb0(%t: tensor<2x2xf64>):
      // expected-error @+1 {{dsc.matmul needs f32, bf16 or f16 on the CPU and CUDA targets}}
      %r = dsc.matmul %t, %t : tensor<2x2xf64>, tensor<2x2xf64>
      dscrt.yield %r : tensor<2x2xf64>
    }
    return
  }
}

// -----

module {
  // expected-error @+1 {{stream 'compute' has work after its last dscrt.synchronize: the step would return before it ran}}
  func.func @step() attributes {dscrt.arena_bytes = 256 : i64} {
    %s = dscrt.stream "compute"
    %x = dscrt.input 0 "x" : memref<4xf32, #dscrt.host>
    %b = dscrt.buffer 0 : memref<4xf32>
    dscrt.synchronize %s
    dscrt.copy %x to %b on %s : memref<4xf32, #dscrt.host> to memref<4xf32>
    return
  }
}

// -----

module {
  func.func @step() attributes {dscrt.arena_bytes = 4096 : i64} {
    %s = dscrt.stream "compute"
    %x = dscrt.state 0 "x" : memref<4x2xf64>
    %i = dscrt.state 1 "slots" : memref<4x1xi64>
    %b = dscrt.buffer 0 : memref<2x2x2xf64>
    dscrt.kernel on %s ins(%x, %i : memref<4x2xf64>, memref<4x1xi64>) outs(%b : memref<2x2x2xf64>) {
    ^bb0(%t: tensor<4x2xf64>, %slots: tensor<4x1xi64>):
      // expected-error @+1 {{dsc.moe_dispatch needs f32, bf16 or f16 on the CPU and CUDA targets}}
      %r = dsc.moe_dispatch %t, %slots : tensor<4x2xf64>, tensor<4x1xi64> -> tensor<2x2x2xf64>
      dscrt.yield %r : tensor<2x2x2xf64>
    }
    return
  }
}

// -----

// A broadcast whose result has 7 dims larger than 1: more than the
// library's shapes (dsc::kernels::Dims) hold.
module {
  func.func @step() attributes {dscrt.arena_bytes = 4096 : i64} {
    %s = dscrt.stream "compute"
    %x = dscrt.state 0 "x" : memref<2x2x2x2x2x2x1xf32>
    %b = dscrt.buffer 0 : memref<2x2x2x2x2x2x2xf32>
    dscrt.kernel "broadcast" on %s ins(%x : memref<2x2x2x2x2x2x1xf32>) outs(%b : memref<2x2x2x2x2x2x2xf32>) {
    ^bb0(%t: tensor<2x2x2x2x2x2x1xf32>):
      // expected-error @+1 {{'dsc.broadcast' of rank 7 exceeds the kernel library's rank limit 6}}
      %r = dsc.broadcast %t : tensor<2x2x2x2x2x2x1xf32> -> tensor<2x2x2x2x2x2x2xf32>
      dscrt.yield %r : tensor<2x2x2x2x2x2x2xf32>
    }
    return
  }
}

// -----

// A concat without --dscrt-select-library: only elementwise chains are
// emitted loops.
module {
  func.func @step() attributes {dscrt.arena_bytes = 4096 : i64} {
    %s = dscrt.stream "compute"
    %x = dscrt.state 0 "x" : memref<2xf32>
    %b = dscrt.buffer 0 : memref<4xf32>
    dscrt.kernel on %s ins(%x : memref<2xf32>) outs(%b : memref<4xf32>) {
    ^bb0(%t: tensor<2xf32>):
      // expected-error @+1 {{'dsc.concat' runs as a library kernel only, after --dscrt-select-library}}
      %r = dsc.concat(%t, %t), dim = 0 : tensor<2xf32>, tensor<2xf32>
      dscrt.yield %r : tensor<4xf32>
    }
    return
  }
}

