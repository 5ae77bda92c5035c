// RUN: not dsc-opt %s --dsc-zero=stage=4 2>&1 | FileCheck %s --check-prefix=STAGE4
// RUN: not dsc-opt %s --dsc-zero=stage=-1 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not dsc-opt %s --dsc-zero=stage=1 2>&1 | FileCheck %s --check-prefix=NOWORLD
// RUN: not dsc-opt %s --dsc-zero=stage=3 2>&1 | FileCheck %s --check-prefix=NOWORLD3
// RUN: not dsc-opt %s --dsc-data-parallel=world-size=2 --dsc-zero=stage=2 2>&1 | FileCheck %s --check-prefix=NOOPT
// RUN: dsc-opt %s --dsc-zero=stage=0 | FileCheck %s --check-prefix=OFF

// Options and input the pass refuses, each with a message located at the
// module.

// STAGE4: zero-invalid.mlir:[[@LINE+6]]:1: error: ZeRO stage 4 does not exist; stages are 0 (off), 1 (optimizer state), 2 (+ gradients) and 3 (+ parameters)
// NEGATIVE: zero-invalid.mlir:[[@LINE+5]]:1: error: ZeRO stage -1 does not exist
// NOWORLD3: zero-invalid.mlir:[[@LINE+4]]:1: error: ZeRO stage 3 partitions over the data-parallel ranks, but the module has no 'dsc.world_size'
// NOWORLD: zero-invalid.mlir:[[@LINE+3]]:1: error: ZeRO stage 1 partitions over the data-parallel ranks, but the module has no 'dsc.world_size' (run --dsc-data-parallel first)
// NOOPT: zero-invalid.mlir:[[@LINE+2]]:1: error: ZeRO stage 2 partitions the optimizer's state, but the module has none (run --dsc-optimizer first)
// OFF: dsc.state parameter @w : tensor<4xf32>
module {
  dsc.state parameter @w : tensor<4xf32>
  func.func @step(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
    %w = dsc.load @w : tensor<4xf32>
    %p = dsc.mul %w, %x : tensor<4xf32>, tensor<4xf32>
    %l = dsc.reduce_sum %p, dims = [0] : tensor<4xf32>
    return %l : tensor<f32>
  }
}
