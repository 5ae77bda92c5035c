// RUN: dsc-opt %s --dsc-zero=stage=2 -split-input-file -verify-diagnostics

// A stage-2 gradient has no whole value left: a reader that cannot run on
// its shards is refused, naming it.
module attributes {dsc.world_size = 2 : i64} {
  dsc.state parameter @w : tensor<4xf32>
  dsc.state optimizer @w.momentum_buffer : tensor<4xf32>
  func.func @step(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
    %g = dsc.all_reduce %x : tensor<4xf32>
    %buf = dsc.load @w.momentum_buffer : tensor<4xf32>
    %new = dsc.add %buf, %g : tensor<4xf32>, tensor<4xf32>
    dsc.store %new to @w.momentum_buffer : tensor<4xf32>
    // expected-error @+1 {{reads a gradient that ZeRO stage 2 partitions; only elementwise ops and full sums of it can run on its shards}}
    %m = dsc.reduce_max %g, dims = [0] : tensor<4xf32>
    return %m : tensor<f32>
  }
}

// -----

// A partitioned optimizer state read outside the update (returned whole).
module attributes {dsc.world_size = 2 : i64} {
  dsc.state parameter @w : tensor<4xf32>
  dsc.state optimizer @w.momentum_buffer : tensor<4xf32>
  func.func @step(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<4xf32> {dsc.output = "m"}) {
    // expected-error @+1 {{reads partitioned state @w.momentum_buffer whole, outside the optimizer's update}}
    %buf = dsc.load @w.momentum_buffer : tensor<4xf32>
    %new = dsc.add %buf, %x : tensor<4xf32>, tensor<4xf32>
    dsc.store %new to @w.momentum_buffer : tensor<4xf32>
    return %buf : tensor<4xf32>
  }
}
