// RUN: dsc-opt %s --dsc-lower-to-runtime --dscrt-select-library | FileCheck %s

// The choice of a library kernel is recorded on each dscrt.kernel; what the
// library does not compute keeps generated loops (no name).

dsc.state parameter @w : tensor<16x8xf32>

// CHECK-LABEL: func.func @step()
func.func @forward(%x: tensor<4x8xf32>, %q: tensor<2x3x4x8xf32>,
                   %k: tensor<2x3x5x8xf32>, %m: tensor<8x5xf32>,
                   %p: tensor<1x3x8x5xf32>, %d: tensor<4x8xf64>)
    -> (tensor<4x16xf32>, tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>,
        tensor<2x3x4x5xf32>, tensor<4x8xf32>, tensor<4x8xf64>) {
  %w = dsc.load @w : tensor<16x8xf32>
  // dsc.linear: a GEMM.
  // CHECK: dscrt.kernel "gemm" on
  // CHECK: dsc.linear
  %y = dsc.linear %x, %w : tensor<4x8xf32>, tensor<16x8xf32>
  // A batched matmul whose operands both carry the whole batch: one
  // strided-batched GEMM.
  // CHECK: dscrt.kernel "gemm" on
  // CHECK: dsc.matmul
  %s = dsc.matmul %q, %k transpose_rhs : tensor<2x3x4x8xf32>, tensor<2x3x5x8xf32>
  // An operand with no batch is broadcast (stride 0): still one GEMM.
  // CHECK: dscrt.kernel "gemm" on
  // CHECK: dsc.matmul
  %b = dsc.matmul %q, %m : tensor<2x3x4x8xf32>, tensor<8x5xf32>
  // An operand that broadcasts some batch dims only cannot be placed by one
  // stride: the lowering broadcasts it to the whole batch, then one GEMM.
  // CHECK: dscrt.kernel "broadcast" on
  // CHECK-SAME: outs(%{{.*}} : memref<2x3x8x5xf32>)
  // CHECK: dsc.broadcast %{{.*}} : tensor<1x3x8x5xf32> -> tensor<2x3x8x5xf32>
  // CHECK: dscrt.kernel "gemm" on
  // CHECK: dsc.matmul %{{.*}}, %{{.*}} : tensor<2x3x4x8xf32>, tensor<2x3x8x5xf32>
  %r = dsc.matmul %q, %p : tensor<2x3x4x8xf32>, tensor<1x3x8x5xf32>
  // An elementwise chain keeps its generated loop.
  // CHECK: dscrt.kernel on
  // CHECK: dsc.tanh
  %t = dsc.tanh %x : tensor<4x8xf32>
  // An elementwise op of any type is a generated loop.
  // CHECK: dscrt.kernel on
  // CHECK: dsc.exp
  %e = dsc.exp %d : tensor<4x8xf64>
  // A store of a value no elementwise kernel computes (so none can write it
  // into the state directly) copies it: the library's copy.
  // CHECK: dscrt.kernel "copy" on
  // CHECK-NEXT: ^bb0(%{{.*}}: tensor<16x8xf32>):
  // CHECK-NEXT: dscrt.yield
  %w2 = dsc.softmax %w, dim = 1 : tensor<16x8xf32>
  dsc.store %w2 to @w : tensor<16x8xf32>
  return %y, %s, %b, %r, %t, %e : tensor<4x16xf32>, tensor<2x3x4x5xf32>,
      tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>, tensor<4x8xf32>, tensor<4x8xf64>
}
