// Meshes the ranks cannot form and blocks a tensor group cannot split: each a
// located error.
// RUN: not dsc-opt %S/Inputs/gpt2-one-block.mlir --dsc-data-parallel="world-size=4 tensor-parallel=3" 2>&1 | FileCheck %s --check-prefix=WORLD
// RUN: not dsc-opt %S/Inputs/gpt2-one-block.mlir --world-size=4 --tensor-parallel=2 --pipeline-parallel=2 2>&1 | FileCheck %s --check-prefix=PIPE
// RUN: not dsc-opt %S/Inputs/gpt2-one-block.mlir --dsc-data-parallel="world-size=4 tensor-parallel=4" --dsc-tensor-parallel 2>&1 | FileCheck %s --check-prefix=HEADS
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=3 tensor-parallel=3" --dsc-tensor-parallel 2>&1 | FileCheck %s --check-prefix=WIDTH
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --world-size=2 --tensor-parallel=2 --moe-experts=2 --moe-ep-size=2 2>&1 | FileCheck %s --check-prefix=TEDMESH
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --world-size=3 --tensor-parallel=3 --moe-experts=2 2>&1 | FileCheck %s --check-prefix=TEDWIDTH
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --world-size=4 --tensor-parallel=2 --moe-experts=4 --moe-ep-size=2 --moe-capacity-factor=1.5 --moe-min-capacity=1 2>&1 | FileCheck %s --check-prefix=TEDCAP
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=4 tensor-parallel=2" --dsc-moe="experts=4 ep-size=2 capacity-factor=1.5 min-capacity=1 duplicate-token-dropping=false" -o /dev/null
// RUN: dsc-opt %s --split-input-file --dsc-data-parallel="world-size=2 tensor-parallel=2" --dsc-tensor-parallel -verify-diagnostics

// WORLD: gpt2-one-block.mlir:{{[0-9]+}}:1: error: the world of 4 ranks does not divide into tensor-parallel groups of 3 times 1 pipeline stages
// PIPE: gpt2-one-block.mlir:{{[0-9]+}}:{{[0-9]+}}: error: cannot cut this graph's 0 repeated blocks (states named <prefix>.<i>.*) into 2 pipeline stages
// HEADS: gpt2-one-block.mlir:{{[0-9]+}}:{{[0-9]+}}: error: --dsc-tensor-parallel: cannot split this attention block over the 4 ranks of a tensor group: 4 must divide its heads
// WIDTH: two-mlp-blocks.mlir:{{[0-9]+}}:{{[0-9]+}}: error: --dsc-tensor-parallel: cannot split this feed-forward block over the 3 ranks of a tensor group: 3 must divide its 16 hidden features
// Experts under tensor parallelism (DeepSpeed-TED): expert groups are made
// of data-parallel replicas, a tensor group splits each expert's hidden
// features, and duplicate token dropping each expert's capacity (3 slots
// here; without dropping the same mesh compiles).
// TEDMESH: error: --dsc-moe: ep-size 2 times tensor-parallel 2 must divide the world size 2 (expert groups are made of data-parallel replicas)
// TEDWIDTH: two-mlp-blocks.mlir:{{[0-9]+}}:{{[0-9]+}}: error: --dsc-moe: cannot split the experts of this block over the 3 ranks of a tensor group: 3 must divide its 16 hidden features
// TEDCAP: two-mlp-blocks.mlir:{{[0-9]+}}:{{[0-9]+}}: error: --dsc-moe: duplicate token dropping splits each expert's capacity of 3 slots over the 2 ranks of a tensor group, which must divide it (or --moe-duplicate-token-dropping=false)

// A graph without an attention or feed-forward block has nothing to split.
// expected-error @+1 {{--dsc-tensor-parallel found no attention or feed-forward block to split over the 2 ranks of a tensor group}}
module {
  dsc.state parameter @w : tensor<4x4xf32>
  func.func @forward(%x: tensor<2x4xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
    %w = dsc.load @w : tensor<4x4xf32>
    %y = dsc.linear %x, %w : tensor<2x4xf32>, tensor<4x4xf32>
    %loss = dsc.reduce_sum %y, dims = [0, 1] : tensor<2x4xf32>
    return %loss : tensor<f32>
  }
}

// -----

// A block whose weights another block also reads (tied) is left whole: here
// the only block, so nothing is split.
// expected-error @+1 {{--dsc-tensor-parallel found no attention or feed-forward block to split}}
module {
  dsc.state parameter @up : tensor<8x4xf32>
  dsc.state parameter @down : tensor<4x8xf32>
  func.func @forward(%x: tensor<2x4xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
    %u = dsc.load @up : tensor<8x4xf32>
    %h = dsc.linear %x, %u : tensor<2x4xf32>, tensor<8x4xf32>
    %g = dsc.relu %h : tensor<2x8xf32>
    %d = dsc.load @down : tensor<4x8xf32>
    %y = dsc.linear %g, %d : tensor<2x8xf32>, tensor<4x8xf32>
    %u2 = dsc.load @up : tensor<8x4xf32>
    %z = dsc.linear %y, %u2 : tensor<2x4xf32>, tensor<8x4xf32>
    %loss = dsc.reduce_sum %z, dims = [0, 1] : tensor<2x8xf32>
    return %loss : tensor<f32>
  }
}
