// Pipeline meshes and graphs the stage cut refuses: each a located error.
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-parallel="world-size=4 pipeline-parallel=4" --dsc-pipeline-parallel 2>&1 | FileCheck %s --check-prefix=BLOCKS
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --world-size=3 --pipeline-parallel=2 2>&1 | FileCheck %s --check-prefix=WORLD
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-parallel=stage=2 2>&1 | FileCheck %s --check-prefix=STAGE
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-parallel=world-size=2 --dsc-pipeline-parallel 2>&1 | FileCheck %s --check-prefix=MESH
// RUN: not dsc-opt %S/Inputs/three-blocks.mlir --dsc-data-parallel="world-size=2 pipeline-parallel=2" --dsc-pipeline-schedule 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: dsc-opt %s --split-input-file --dsc-data-parallel="world-size=3 pipeline-parallel=3" --dsc-pipeline-parallel=micro-batches=2 -verify-diagnostics

// BLOCKS: three-blocks.mlir:{{[0-9]+}}:{{[0-9]+}}: error: cannot cut this graph's 3 repeated blocks (states named <prefix>.<i>.*) into 4 pipeline stages: pipeline-parallel must not exceed the model's blocks
// WORLD: three-blocks.mlir:{{[0-9]+}}:{{[0-9]+}}: error: the world of 3 ranks does not divide into tensor-parallel groups of 1 times 2 pipeline stages
// STAGE: error: pipeline stage 2 is not one of the 2 stages
// MESH: error: --dsc-pipeline-parallel needs a mesh of at least 2 pipeline stages (run --dsc-data-parallel pipeline-parallel=P first), got 1
// ORDER: error: --dsc-pipeline-schedule orders a pipeline stage's program: run --dsc-pipeline-parallel first

// An output after the loss is returned by the stage that computes it: a
// graph input has none.
dsc.state parameter @"h.0.w" : tensor<4x4xf32>
dsc.state parameter @"h.1.w" : tensor<4x4xf32>
// expected-error @+1 {{output #1 is a graph input, which no pipeline stage computes}}
func.func @forward(%x: tensor<2x4xf32> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"}, tensor<2x4xf32> {dsc.output = "x"}) {
  %w0 = dsc.load @"h.0.w" : tensor<4x4xf32>
  %h0 = dsc.linear %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %w1 = dsc.load @"h.1.w" : tensor<4x4xf32>
  %h1 = dsc.linear %h0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
  %loss = dsc.reduce_sum %h1, dims = [0, 1] : tensor<2x4xf32>
  return %loss, %x : tensor<f32>, tensor<2x4xf32>
}

// -----

// The loss comes first.
dsc.state parameter @"h.0.w" : tensor<4x4xf32>
dsc.state parameter @"h.1.w" : tensor<4x4xf32>
// expected-error @+1 {{pipeline parallelism needs an f32 scalar loss, got 'tensor<2x4xf32>'}}
func.func @forward(%x: tensor<2x4xf32> {dsc.input = "x"})
    -> (tensor<2x4xf32> {dsc.output = "h"}, tensor<f32> {dsc.output = "loss"}) {
  %w0 = dsc.load @"h.0.w" : tensor<4x4xf32>
  %h0 = dsc.linear %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %w1 = dsc.load @"h.1.w" : tensor<4x4xf32>
  %h1 = dsc.linear %h0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
  %loss = dsc.reduce_sum %h1, dims = [0, 1] : tensor<2x4xf32>
  return %h1, %loss : tensor<2x4xf32>, tensor<f32>
}

// -----

dsc.state parameter @"h.0.w" : tensor<4x4xf32>
dsc.state parameter @"h.1.w" : tensor<4x4xf32>
// expected-error @+1 {{pipeline parallelism cuts a graph whose first output is its loss; this one has none}}
func.func @forward(%x: tensor<2x4xf32> {dsc.input = "x"}) {
  %w0 = dsc.load @"h.0.w" : tensor<4x4xf32>
  %h0 = dsc.linear %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %w1 = dsc.load @"h.1.w" : tensor<4x4xf32>
  %h1 = dsc.linear %h0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
  return
}

// -----

// A micro-batch's random ops draw from its first sample's place in the
// step's batch (its dsc.step_key's sample_offset): the inputs must agree on
// how many samples a micro-batch holds.
dsc.state parameter @"h.0.w" : tensor<4x4xf32>
dsc.state parameter @"h.1.w" : tensor<4x4xf32>
dsc.state parameter @"h.2.w" : tensor<4x4xf32>
func.func @forward(%x: tensor<2x4xf32> {dsc.input = "x"},
                   %y: tensor<1x4xf32> {dsc.input = "y"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  // expected-error @+1 {{the micro-batches' random ops need each micro-batch's first sample, but the graph's inputs hold 2 and 1 rows}}
  %key = dsc.step_key : tensor<4xi64>
  %w0 = dsc.load @"h.0.w" : tensor<4x4xf32>
  %h0 = dsc.linear %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %d0 = dsc.dropout %h0, %key, p = 0.1, seed = 1, samples = 2 : tensor<2x4xf32>
  %w1 = dsc.load @"h.1.w" : tensor<4x4xf32>
  %h1 = dsc.linear %d0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
  %w2 = dsc.load @"h.2.w" : tensor<4x4xf32>
  %h2 = dsc.linear %h1, %w2 : tensor<2x4xf32>, tensor<4x4xf32>
  %loss = dsc.reduce_sum %h2, dims = [0, 1] : tensor<2x4xf32>
  return %loss : tensor<f32>
}

// -----

// Every rank returns each output, summed over the pipeline group: the sum
// needs a tensor of a static shape.
dsc.state parameter @"h.0.w" : tensor<4x4xf32>
dsc.state parameter @"h.1.w" : tensor<4x4xf32>
// expected-error @+1 {{pipeline parallelism sums output #1 over the pipeline group, which needs a static shape, got 'i64'}}
func.func @forward(%x: tensor<2x4xf32> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"}, i64 {dsc.output = "seven"}) {
  %w0 = dsc.load @"h.0.w" : tensor<4x4xf32>
  %h0 = dsc.linear %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %w1 = dsc.load @"h.1.w" : tensor<4x4xf32>
  %h1 = dsc.linear %h0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
  %loss = dsc.reduce_sum %h1, dims = [0, 1] : tensor<2x4xf32>
  %seven = arith.constant 7 : i64
  return %loss, %seven : tensor<f32>, i64
}

// -----

// Knowledge distillation's teacher (its states, frozen) is not cut yet.
dsc.state parameter @"h.0.w" : tensor<4x4xf32>
dsc.state parameter @"h.1.w" : tensor<4x4xf32>
// expected-error @+1 {{pipeline parallelism does not cut a graph with a distillation teacher (--dsc-distill) yet}}
dsc.state teacher @"teacher.h.0.w" : tensor<4x4xf32>
func.func @forward(%x: tensor<2x4xf32> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %w0 = dsc.load @"h.0.w" : tensor<4x4xf32>
  %h0 = dsc.linear %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>
  %w1 = dsc.load @"h.1.w" : tensor<4x4xf32>
  %h1 = dsc.linear %h0, %w1 : tensor<2x4xf32>, tensor<4x4xf32>
  %loss = dsc.reduce_sum %h1, dims = [0, 1] : tensor<2x4xf32>
  return %loss : tensor<f32>
}
