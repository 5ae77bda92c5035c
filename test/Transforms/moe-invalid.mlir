// RUN: dsc-opt %s --split-input-file --dsc-moe="experts=4" -verify-diagnostics
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=2 top-k=3" 2>&1 | FileCheck %s --check-prefix=TOPK
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts-per-layer=4,4" 2>&1 | FileCheck %s --check-prefix=LIST
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 capacity-factor=0" 2>&1 | FileCheck %s --check-prefix=FACTOR
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 init=zeros" 2>&1 | FileCheck %s --check-prefix=INIT
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 every=0" 2>&1 | FileCheck %s --check-prefix=EVERY
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=0" 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=4" --dsc-moe="experts=6 ep-size=4" 2>&1 | FileCheck %s --check-prefix=EPEXPERTS
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=4" --dsc-moe="experts=6 ep-size=3" 2>&1 | FileCheck %s --check-prefix=EPWORLD
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 ep-size=2" 2>&1 | FileCheck %s --check-prefix=EPNOWORLD
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 ep-size=0" 2>&1 | FileCheck %s --check-prefix=EPZERO
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 top-k=2 noisy-gate-policy=rsample" 2>&1 | FileCheck %s --check-prefix=RSAMPLEK
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 top-k=3 use-rts=true" 2>&1 | FileCheck %s --check-prefix=RTSK
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-moe="experts=4 noisy-gate-policy=gaussian" 2>&1 | FileCheck %s --check-prefix=POLICY
// RUN: not dsc-opt %S/Inputs/two-mlp-blocks.mlir --moe-experts=4 --moe-noisy-gate-policy=Jitter 2>&1 | FileCheck %s --check-prefix=POLICYFLAG
// EPEXPERTS: error: --dsc-moe: ep-size 4 must divide the 6 experts of a block
// EPWORLD: error: --dsc-moe: ep-size 3 must divide the world size 4 (run --dsc-data-parallel first)
// EPNOWORLD: error: --dsc-moe: ep-size 2 must divide the world size 1 (run --dsc-data-parallel first)
// EPZERO: error: --dsc-moe: ep-size must be at least 1, got 0
// TOPK: error: --dsc-moe: top-k 3 exceeds the 2 experts of a block
// LIST: error: --dsc-moe: experts-per-layer lists 2 counts for 3 replaced blocks (of 3 found, every 1)
// FACTOR: error: --dsc-moe: capacity-factor must be positive and finite, got 0
// INIT: error: --dsc-moe: init must be upcycle or random, got 'zeros'
// EVERY: error: --dsc-moe: every must be at least 1, got 0
// NONE: error: --dsc-moe: needs experts >= 1 (or experts-per-layer)
// DeepSpeed's top2gating and topkgating ignore RSample and use_rts: errors.
// RSAMPLEK: two-mlp-blocks.mlir:0:0: error: --dsc-moe: noisy-gate-policy=rsample applies to top-1 gating only, got top-k 2
// RTSK: two-mlp-blocks.mlir:0:0: error: --dsc-moe: use-rts (random token selection) applies to top-1 gating only, got top-k 3
// POLICY: error: --dsc-moe: noisy-gate-policy must be none, jitter or rsample, got 'gaussian'
// POLICYFLAG: dsc-opt: error: --moe-noisy-gate-policy: 'Jitter' is not one of none, jitter, rsample

// A model without a feed-forward block: one linear map, no activation.
// expected-error @+1 {{--dsc-moe found no feed-forward block to replace}}
module {
  dsc.state parameter @w : tensor<4x4xf32>
  func.func @forward(%x: tensor<8x4xf32> {dsc.input = "x"})
      -> (tensor<f32> {dsc.output = "loss"}) {
    %w = dsc.load @w : tensor<4x4xf32>
    %y = dsc.linear %x, %w : tensor<8x4xf32>, tensor<4x4xf32>
    %l = dsc.reduce_sum %y, dims = [0, 1] : tensor<8x4xf32>
    return %l : tensor<f32>
  }
}

// -----

// Linear maps with an activation between whose hidden value is read
// elsewhere too are not a block that can move into experts.
// expected-error @+1 {{--dsc-moe found no feed-forward block to replace}}
module {
  dsc.state parameter @w1 : tensor<16x4xf32>
  dsc.state parameter @w2 : tensor<4x16xf32>
  func.func @forward(%x: tensor<8x4xf32> {dsc.input = "x"})
      -> (tensor<f32> {dsc.output = "loss"}, tensor<8x16xf32> {dsc.output = "hidden"}) {
    %w1 = dsc.load @w1 : tensor<16x4xf32>
    %h = dsc.linear %x, %w1 : tensor<8x4xf32>, tensor<16x4xf32>
    %a = dsc.relu %h : tensor<8x16xf32>
    %w2 = dsc.load @w2 : tensor<4x16xf32>
    %y = dsc.linear %a, %w2 : tensor<8x16xf32>, tensor<4x16xf32>
    %l = dsc.reduce_sum %y, dims = [0, 1] : tensor<8x4xf32>
    return %l, %a : tensor<f32>, tensor<8x16xf32>
  }
}

// -----

// The experts' state names are taken.
module {
  // expected-error @+1 {{--dsc-moe would declare 'mlp.gate.weight', which the model already has}}
  dsc.state parameter @mlp.fc.weight : tensor<16x4xf32>
  dsc.state parameter @mlp.proj.weight : tensor<4x16xf32>
  dsc.state parameter @mlp.gate.weight : tensor<4x4xf32>
  func.func @forward(%x: tensor<8x4xf32> {dsc.input = "x"})
      -> (tensor<f32> {dsc.output = "loss"}) {
    %w1 = dsc.load @mlp.fc.weight : tensor<16x4xf32>
    %h = dsc.linear %x, %w1 : tensor<8x4xf32>, tensor<16x4xf32>
    %a = dsc.relu %h : tensor<8x16xf32>
    %w2 = dsc.load @mlp.proj.weight : tensor<4x16xf32>
    %y = dsc.linear %a, %w2 : tensor<8x16xf32>, tensor<4x16xf32>
    %g = dsc.load @mlp.gate.weight : tensor<4x4xf32>
    %z = dsc.linear %y, %g : tensor<8x4xf32>, tensor<4x4xf32>
    %l = dsc.reduce_sum %z, dims = [0, 1] : tensor<8x4xf32>
    return %l : tensor<f32>
  }
}

// -----

// No result is the loss, so there is nowhere to add l_aux.
module {
  dsc.state parameter @fc.weight : tensor<16x4xf32>
  dsc.state parameter @proj.weight : tensor<4x16xf32>
  // expected-error @+1 {{--dsc-moe: the function has no result named "loss"}}
  func.func @forward(%x: tensor<8x4xf32> {dsc.input = "x"})
      -> (tensor<8x4xf32> {dsc.output = "y"}) {
    %w1 = dsc.load @fc.weight : tensor<16x4xf32>
    %h = dsc.linear %x, %w1 : tensor<8x4xf32>, tensor<16x4xf32>
    %a = dsc.relu %h : tensor<8x16xf32>
    %w2 = dsc.load @proj.weight : tensor<4x16xf32>
    %y = dsc.linear %a, %w2 : tensor<8x16xf32>, tensor<4x16xf32>
    return %y : tensor<8x4xf32>
  }
}

// -----

// The rewrite's metrics are outputs of names of their own.
dsc.state parameter @"h.0.mlp.c_fc.weight" : tensor<16x4xf32>
dsc.state parameter @"h.0.mlp.c_proj.weight" : tensor<4x16xf32>
// expected-error @below {{--dsc-moe: the graph already has an output named 'moe.dropped'}}
func.func @forward(%x: tensor<8x4xf32> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"}, tensor<f32> {dsc.output = "moe.dropped"}) {
  %w0 = dsc.load @"h.0.mlp.c_fc.weight" : tensor<16x4xf32>
  %h0 = dsc.linear %x, %w0 : tensor<8x4xf32>, tensor<16x4xf32>
  %g0 = dsc.gelu tanh %h0 : tensor<8x16xf32>
  %p0 = dsc.load @"h.0.mlp.c_proj.weight" : tensor<4x16xf32>
  %y0 = dsc.linear %g0, %p0 : tensor<8x16xf32>, tensor<4x16xf32>
  %l = dsc.reduce_sum %y0, dims = [0, 1] : tensor<8x4xf32>
  return %l, %l : tensor<f32>, tensor<f32>
}

// -----

// The balance term is logged as `aux_loss`, which the graph must not have.
dsc.state parameter @"h.0.mlp.c_fc.weight" : tensor<16x4xf32>
dsc.state parameter @"h.0.mlp.c_proj.weight" : tensor<4x16xf32>
// expected-error @below {{--dsc-moe: the graph already has an output named 'aux_loss'}}
func.func @forward(%x: tensor<8x4xf32> {dsc.input = "x"})
    -> (tensor<f32> {dsc.output = "loss"}, tensor<f32> {dsc.output = "aux_loss"}) {
  %w0 = dsc.load @"h.0.mlp.c_fc.weight" : tensor<16x4xf32>
  %h0 = dsc.linear %x, %w0 : tensor<8x4xf32>, tensor<16x4xf32>
  %g0 = dsc.gelu tanh %h0 : tensor<8x16xf32>
  %p0 = dsc.load @"h.0.mlp.c_proj.weight" : tensor<4x16xf32>
  %y0 = dsc.linear %g0, %p0 : tensor<8x16xf32>, tensor<4x16xf32>
  %l = dsc.reduce_sum %y0, dims = [0, 1] : tensor<8x4xf32>
  return %l, %l : tensor<f32>, tensor<f32>
}
