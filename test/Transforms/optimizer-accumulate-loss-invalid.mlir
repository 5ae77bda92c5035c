// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd grad-accum=2" -verify-diagnostics -split-input-file

// A loss computed from sums over the ranks other than by scaling them
// (here the global token mean that --dsc-data-parallel writes without
// grad-accum) cannot be accumulated per rank.
module attributes {dsc.world_size = 2 : i64} {
  dsc.state parameter @w : tensor<4xf32>
  func.func @step(%x: tensor<4xf32> {dsc.input = "x"})
      -> (tensor<f32> {dsc.output = "loss"},
          tensor<4xf32> {dsc.output = "grad.w", dsc.gradient_of = @w}) {
    %w = dsc.load @w : tensor<4xf32>
    %p = dsc.mul %w, %x : tensor<4xf32>, tensor<4xf32>
    %s = dsc.reduce_sum %p, dims = [0] : tensor<4xf32>
    %n = dsc.reduce_sum %x, dims = [0] : tensor<4xf32>
    %gs = dsc.all_reduce %s : tensor<f32>
    %gn = dsc.all_reduce %n : tensor<f32>
    // expected-error @below {{computes the loss from a sum over the ranks in a way that is not a sum of terms scaled by constants}}
    %l = dsc.div %gs, %gn : tensor<f32>, tensor<f32>
    %g = dsc.all_reduce %x : tensor<4xf32>
    return %l, %g : tensor<f32>, tensor<4xf32>
  }
}

// -----

// A term the same on every rank, added to a mean over the ranks, would
// count once per rank if accumulated per rank.
module attributes {dsc.world_size = 2 : i64} {
  dsc.state parameter @w : tensor<4xf32>
  func.func @step(%x: tensor<4xf32> {dsc.input = "x"})
      -> (tensor<f32> {dsc.output = "loss"},
          tensor<4xf32> {dsc.output = "grad.w", dsc.gradient_of = @w}) {
    %w = dsc.load @w : tensor<4xf32>
    %p = dsc.mul %w, %x : tensor<4xf32>, tensor<4xf32>
    %s = dsc.reduce_sum %p, dims = [0] : tensor<4xf32>
    %gs = dsc.all_reduce %s : tensor<f32>
    %r = dsc.reduce_sum %w, dims = [0] : tensor<4xf32>
    // expected-error @below {{adds a term averaged over the ranks to one that is not}}
    %l = dsc.add %gs, %r : tensor<f32>, tensor<f32>
    %g = dsc.all_reduce %x : tensor<4xf32>
    return %l, %g : tensor<f32>, tensor<4xf32>
  }
}
