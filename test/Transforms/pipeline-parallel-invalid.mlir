// Pipeline meshes and graphs the stage cut refuses: each a located error.
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-parallel="world-size=4 pipeline-parallel=4" --dsc-pipeline-parallel 2>&1 | FileCheck %s --check-prefix=BLOCKS
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --world-size=3 --pipeline-parallel=2 2>&1 | FileCheck %s --check-prefix=WORLD
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel=stage=2 2>&1 | FileCheck %s --check-prefix=STAGE
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-parallel=world-size=2 --dsc-pipeline-parallel 2>&1 | FileCheck %s --check-prefix=MESH
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-schedule 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: dsc-opt %s --split-input-file --dsc-data-parallel="world-size=3 pipeline-parallel=3" --dsc-pipeline-parallel -verify-diagnostics

// BLOCKS: three-blocks.mlir:{{[0-9]+}}:{{[0-9]+}}: error: cannot cut this graph's 3 repeated blocks (states named <prefix>.<i>.*) into 4 pipeline stages: pipeline-parallel must not exceed the model's blocks
// WORLD: three-blocks.mlir:{{[0-9]+}}:{{[0-9]+}}: error: the world of 3 ranks does not divide into tensor-parallel groups of 1 times 2 pipeline stages
// STAGE: error: pipeline stage 2 is not one of the 2 stages
// MESH: error: --dsc-pipeline-parallel needs a mesh of at least 2 pipeline stages (run --dsc-data-parallel pipeline-parallel=P first), got 1
// ORDER: error: --dsc-pipeline-schedule orders a pipeline stage's program: run --dsc-pipeline-parallel first

dsc.state parameter @"h.0.w" : tensor<4x4xf32>
dsc.state parameter @"h.1.w" : tensor<4x4xf32>
// expected-error @+1 {{pipeline parallelism cuts a graph whose one output is its loss; this one has 2 outputs}}
func.func @forward(%x: tensor<2x4xf32> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"}, tensor<2x4xf32> {dsc.output = "h"}) {
  %w0 = dsc.load @"h.0.w" : tensor<4x4xf32>
  %h0 = dsc.linear %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %w1 = dsc.load @"h.1.w" : tensor<4x4xf32>
  %h1 = dsc.linear %h0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
  %loss = dsc.reduce_sum %h1, dims = [0, 1] : tensor<2x4xf32>
  return %loss, %h1 : tensor<f32>, tensor<2x4xf32>
}

// -----

// Dropout: a micro-batch would draw its masks from the call's first sample,
// not from its own as gradient accumulation's call of it does.
dsc.state parameter @"h.0.w" : tensor<4x4xf32>
dsc.state parameter @"h.1.w" : tensor<4x4xf32>
dsc.state parameter @"h.2.w" : tensor<4x4xf32>
func.func @forward(%x: tensor<2x4xf32> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %key = dsc.step_key : tensor<4xi64>
  %w0 = dsc.load @"h.0.w" : tensor<4x4xf32>
  %h0 = dsc.linear %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  // expected-error @+1 {{dropout (p = 1.000000e-01) with pipeline parallelism is not supported yet: the micro-batches of a stage would not draw the masks that gradient accumulation draws; export the model with dropout 0}}
  %d0 = dsc.dropout %h0, %key, p = 0.1, seed = 1, samples = 2 : tensor<2x4xf32>
  %w1 = dsc.load @"h.1.w" : tensor<4x4xf32>
  %h1 = dsc.linear %d0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
  %w2 = dsc.load @"h.2.w" : tensor<4x4xf32>
  %h2 = dsc.linear %h1, %w2 : tensor<2x4xf32>, tensor<4x4xf32>
  %loss = dsc.reduce_sum %h2, dims = [0, 1] : tensor<2x4xf32>
  return %loss : tensor<f32>
}
