// RUN: dsc-opt %s --dsc-optimizer="optimizer=adamw lr=0.1" --dsc-zero=stage=1 --split-input-file | FileCheck %s --check-prefix=S1
// RUN: dsc-opt %s --dsc-optimizer="optimizer=sgd lr=0.1 momentum=0.9 grad-clip=1.0" --dsc-zero=stage=2 --split-input-file | FileCheck %s --check-prefix=S2
// RUN: dsc-opt %s --dsc-optimizer="optimizer=adamw lr=0.1" --dsc-zero=stage=0 --split-input-file | FileCheck %s --check-prefix=S0

// The gradients of --dsc-autodiff on 2 ranks (written here by hand): @w has
// 15 elements (shards of 8, the last padded with one zero), @b 4 (shards
// of 2, no padding).

module attributes {dsc.world_size = 2 : i64} {
  dsc.state parameter @w : tensor<3x5xf32>
  dsc.state parameter @b : tensor<4xf32>
  func.func @step(%x: tensor<3x5xf32> {dsc.input = "x"}, %y: tensor<4xf32> {dsc.input = "y"})
      -> (tensor<f32> {dsc.output = "loss"},
          tensor<3x5xf32> {dsc.output = "grad.w", dsc.gradient_of = @w},
          tensor<4xf32> {dsc.output = "grad.b", dsc.gradient_of = @b}) {
    %w = dsc.load @w : tensor<3x5xf32>
    %b = dsc.load @b : tensor<4xf32>
    %p = dsc.mul %w, %x : tensor<3x5xf32>, tensor<3x5xf32>
    %q = dsc.mul %b, %y : tensor<4xf32>, tensor<4xf32>
    %l = dsc.reduce_sum %p, dims = [0, 1] : tensor<3x5xf32>
    %m = dsc.reduce_sum %q, dims = [0] : tensor<4xf32>
    %s = dsc.add %l, %m : tensor<f32>, tensor<f32>
    %gw = dsc.all_reduce %x : tensor<3x5xf32>
    %gb = dsc.all_reduce %y : tensor<4xf32>
    return %s, %gw, %gb : tensor<f32>, tensor<3x5xf32>, tensor<4xf32>
  }
}

// Stage 0 changes nothing.
// S0: dsc.state optimizer @w.exp_avg : tensor<3x5xf32>
// S0-NOT: dsc.local_shard
// S0-NOT: dsc.all_gather

// Stage 1: the moments are shards; the gradients stay all-reduced, each
// rank takes its block of them and of the parameter, updates it, and the
// parameter is gathered and stored whole. Scalars (step, bias
// corrections) are shared by every shard.
// S1: dsc.state parameter @w : tensor<3x5xf32>
// S1-NEXT: dsc.state optimizer @w.exp_avg {partition_of = array<i64: 3, 5>} : tensor<8xf32>
// S1-NEXT: dsc.state optimizer @w.exp_avg_sq {partition_of = array<i64: 3, 5>} : tensor<8xf32>
// S1-NEXT: dsc.state parameter @b : tensor<4xf32>
// S1-NEXT: dsc.state optimizer @b.exp_avg {partition_of = array<i64: 4>} : tensor<2xf32>
// S1-NEXT: dsc.state optimizer @b.exp_avg_sq {partition_of = array<i64: 4>} : tensor<2xf32>
// S1-NEXT: dsc.state optimizer @optimizer.step : tensor<f32>
// S1-LABEL: func.func @step
// S1: %[[GW:.*]] = dsc.all_reduce %{{.*}} : tensor<3x5xf32>
// S1: %[[GWF:.*]] = dsc.reshape %[[GW]] : tensor<3x5xf32> -> tensor<15xf32>
// S1: %[[PAD:.*]] = dsc.broadcast %{{.*}} : tensor<f32> -> tensor<1xf32>
// S1: %[[GWP:.*]] = dsc.concat(%[[GWF]], %[[PAD]]), dim = 0 : tensor<15xf32>, tensor<1xf32>
// S1: %[[GWS:.*]] = dsc.local_shard %[[GWP]] : tensor<16xf32> -> tensor<8xf32>
// S1: %[[GB:.*]] = dsc.all_reduce %{{.*}} : tensor<4xf32>
// S1: %[[GBS:.*]] = dsc.local_shard %[[GB]] : tensor<4xf32> -> tensor<2xf32>
// S1: %[[W:.*]] = dsc.load @w : tensor<3x5xf32>
// S1: %[[WS:.*]] = dsc.local_shard %{{.*}} : tensor<16xf32> -> tensor<8xf32>
// S1: %[[MW:.*]] = dsc.load @w.exp_avg : tensor<8xf32>
// S1: %[[VW:.*]] = dsc.load @w.exp_avg_sq : tensor<8xf32>
// S1: %[[B:.*]] = dsc.load @b : tensor<4xf32>
// S1: %[[BS:.*]] = dsc.local_shard %[[B]] : tensor<4xf32> -> tensor<2xf32>
// S1: %[[NEW:.*]]:2, %[[M:.*]]:2, %[[V:.*]]:2 = dsc.adam_update params(%[[WS]], %[[BS]] : tensor<8xf32>, tensor<2xf32>) grads(%[[GWS]], %[[GBS]] : tensor<8xf32>, tensor<2xf32>) exp_avgs(%[[MW]], %{{.*}} : tensor<8xf32>, tensor<2xf32>) exp_avg_sqs(%[[VW]], %{{.*}} : tensor<8xf32>, tensor<2xf32>) copies() lr(%{{.*}} : tensor<f32>) step(%{{.*}} : tensor<f32>)
// S1: %[[ALL:.*]] = dsc.all_gather %[[NEW]]#0 : tensor<8xf32> -> tensor<16xf32>
// S1: %[[CUT:.*]] = dsc.slice %[[ALL]], dim = 0, start = 0, end = 15, step = 1 : tensor<16xf32>
// S1: %[[WHOLE:.*]] = dsc.reshape %[[CUT]] : tensor<15xf32> -> tensor<3x5xf32>
// S1: dsc.store %[[WHOLE]] to @w : tensor<3x5xf32>
// S1: %[[BALL:.*]] = dsc.all_gather %[[NEW]]#1 : tensor<2xf32> -> tensor<4xf32>
// S1: dsc.store %[[BALL]] to @b : tensor<4xf32>
// S1: dsc.store %[[M]]#0 to @w.exp_avg : tensor<8xf32>
// S1: dsc.store %[[V]]#1 to @b.exp_avg_sq : tensor<2xf32>
// S1: dsc.store %{{.*}} to @optimizer.step : tensor<f32>
// S1-NOT: dsc.load @w.exp_avg : tensor<3x5xf32>

// Stage 2: the gradients are reduce-scattered where they were
// all-reduced (no whole gradient remains); clipping sums the squares of
// each rank's shards (one dsc.sum_squares of them) and all-reduces one
// scalar before the square root. Collective order: reduce-scatters, the
// norm's all-reduce, then one all-gather per parameter at its store.
// S2: dsc.state optimizer @w.momentum_buffer {partition_of = array<i64: 3, 5>} : tensor<8xf32>
// S2: dsc.state optimizer @b.momentum_buffer {partition_of = array<i64: 4>} : tensor<2xf32>
// S2-LABEL: func.func @step
// S2-NOT: dsc.all_reduce %{{.*}} : tensor<3x5xf32>
// S2: %[[GWP:.*]] = dsc.concat
// S2-NEXT: %[[GWS:.*]] = dsc.reduce_scatter %[[GWP]] : tensor<16xf32> -> tensor<8xf32>
// S2-NEXT: %[[GBS:.*]] = dsc.reduce_scatter %{{.*}} : tensor<4xf32> -> tensor<2xf32>
// S2: %[[PART:.*]] = dsc.sum_squares(%[[GWS]], %[[GBS]] : tensor<8xf32>, tensor<2xf32>) : tensor<f32>
// S2-NEXT: %[[TOTAL:.*]] = dsc.all_reduce %[[PART]] : tensor<f32>
// S2-NEXT: dsc.sqrt %[[TOTAL]] : tensor<f32>
// S2: %[[COEF:.*]] = dsc.minimum
// S2: %[[BW:.*]] = dsc.load @w.momentum_buffer : tensor<8xf32>
// S2: %[[NEW:.*]]:2, %[[BUF:.*]]:2 = dsc.sgd_update params(%{{.*}}, %{{.*}} : tensor<8xf32>, tensor<2xf32>) grads(%[[GWS]], %[[GBS]] : tensor<8xf32>, tensor<2xf32>) momentum_buffers(%[[BW]], %{{.*}} : tensor<8xf32>, tensor<2xf32>) copies() lr(%{{.*}} : tensor<f32>) clip_coef(%[[COEF]] : tensor<f32>)
// S2-NEXT: dsc.all_gather %[[NEW]]#0 : tensor<8xf32> -> tensor<16xf32>
// S2: dsc.store %{{.*}} to @w : tensor<3x5xf32>
// S2: dsc.all_gather %[[NEW]]#1 : tensor<2xf32> -> tensor<4xf32>
// S2: dsc.store %{{.*}} to @b : tensor<4xf32>
// S2: dsc.store %[[BUF]]#0 to @w.momentum_buffer : tensor<8xf32>

// -----

// One rank: shards are the flattened tensors and no collective is added.
module attributes {dsc.world_size = 1 : i64} {
  dsc.state parameter @w : tensor<2x3xf32>
  func.func @step(%x: tensor<2x3xf32> {dsc.input = "x"})
      -> (tensor<f32> {dsc.output = "loss"},
          tensor<2x3xf32> {dsc.output = "grad.w", dsc.gradient_of = @w}) {
    %w = dsc.load @w : tensor<2x3xf32>
    %p = dsc.mul %w, %x : tensor<2x3xf32>, tensor<2x3xf32>
    %l = dsc.reduce_sum %p, dims = [0, 1] : tensor<2x3xf32>
    return %l, %x : tensor<f32>, tensor<2x3xf32>
  }
}
// S1: dsc.state optimizer @w.exp_avg {partition_of = array<i64: 2, 3>} : tensor<6xf32>
// S1-LABEL: func.func @step
// S1-NOT: dsc.local_shard
// S1-NOT: dsc.all_gather
// S1: %[[NEW:.*]], %{{.*}}, %{{.*}} = dsc.adam_update params(%{{.*}} : tensor<6xf32>)
// S1: %[[WHOLE:.*]] = dsc.reshape %[[NEW]] : tensor<6xf32> -> tensor<2x3xf32>
// S1: dsc.store %[[WHOLE]] to @w : tensor<2x3xf32>
// S2-LABEL: func.func @step
// S2-NOT: dsc.reduce_scatter
// S2-NOT: dsc.all_reduce
