// ZeRO on experts split over their expert group (expert parallelism): each
// rank's experts are partitioned over its expert-data group of
// D = W / P ranks, every other state over the world.
// RUN: dsc-opt %s --split-input-file --dsc-optimizer="optimizer=adamw lr=0.1" --dsc-zero=stage=1 | FileCheck %s --check-prefix=S1
// RUN: dsc-opt %s --split-input-file --dsc-optimizer="optimizer=sgd lr=0.1 momentum=0.9 grad-clip=1.0" --dsc-zero=stage=2 | FileCheck %s --check-prefix=S2
// RUN: dsc-opt %s --split-input-file --dsc-optimizer="optimizer=sgd lr=0.1" --dsc-zero="stage=3 persistence-threshold=0" | FileCheck %s --check-prefix=S3
// RUN: dsc-opt %s --split-input-file --dsc-optimizer="optimizer=sgd lr=0.1" --dsc-zero="stage=3 persistence-threshold=0" --dsc-bucket-collectives | FileCheck %s --check-prefix=BUCKET
// RUN: dsc-opt %s --split-input-file --dsc-optimizer="optimizer=sgd lr=0.1" --dsc-zero="stage=3 persistence-threshold=6" | FileCheck %s --check-prefix=PERSIST

// 8 ranks, expert groups of P = 2, so expert-data groups of D = 4. The
// gradients as --dsc-autodiff leaves them (written by hand): the world's
// @w (15 elements: shards of 2 over 8 ranks) summed over the world, each
// rank's 2 of the 4 experts of a block (30 elements: shards of 8 over 4
// ranks, the last padded with 2 zeros; the bias 6: shards of 2) summed
// over the expert-data group.
module attributes {dsc.world_size = 8 : i64, dsc.expert_parallel_size = 2 : i64} {
  dsc.state parameter @w : tensor<3x5xf32>
  dsc.state parameter @h.0.experts.fc {partition_of = array<i64: 4, 3, 5>, partition_group = 1 : i32} : tensor<2x3x5xf32>
  dsc.state parameter @h.0.experts.bias {partition_of = array<i64: 4, 3>, partition_group = 1 : i32} : tensor<2x3xf32>
  dsc.state parameter @h.1.experts.fc {partition_of = array<i64: 4, 3, 5>, partition_group = 1 : i32} : tensor<2x3x5xf32>
  func.func @step(%x: tensor<3x5xf32> {dsc.input = "x"}, %t: tensor<2x3x5xf32> {dsc.input = "t"}, %u: tensor<2x3xf32> {dsc.input = "u"})
      -> (tensor<f32> {dsc.output = "loss"},
          tensor<3x5xf32> {dsc.output = "grad.w", dsc.gradient_of = @w},
          tensor<2x3x5xf32> {dsc.output = "grad.h.0.experts.fc", dsc.gradient_of = @h.0.experts.fc},
          tensor<2x3xf32> {dsc.output = "grad.h.0.experts.bias", dsc.gradient_of = @h.0.experts.bias},
          tensor<2x3x5xf32> {dsc.output = "grad.h.1.experts.fc", dsc.gradient_of = @h.1.experts.fc}) {
    %w = dsc.load @w : tensor<3x5xf32>
    %p = dsc.mul %w, %x : tensor<3x5xf32>, tensor<3x5xf32>
    %l = dsc.reduce_sum %p, dims = [0, 1] : tensor<3x5xf32>
    %e0 = dsc.load @h.0.experts.fc : tensor<2x3x5xf32>
    %q = dsc.mul %e0, %t : tensor<2x3x5xf32>, tensor<2x3x5xf32>
    %m = dsc.reduce_sum %q, dims = [0, 1, 2] : tensor<2x3x5xf32>
    %b0 = dsc.load @h.0.experts.bias : tensor<2x3xf32>
    %r = dsc.mul %b0, %u : tensor<2x3xf32>, tensor<2x3xf32>
    %n = dsc.reduce_sum %r, dims = [0, 1] : tensor<2x3xf32>
    %e1 = dsc.load @h.1.experts.fc : tensor<2x3x5xf32>
    %v = dsc.mul %e1, %t : tensor<2x3x5xf32>, tensor<2x3x5xf32>
    %o = dsc.reduce_sum %v, dims = [0, 1, 2] : tensor<2x3x5xf32>
    %s0 = dsc.add %l, %m : tensor<f32>, tensor<f32>
    %s1 = dsc.add %s0, %n : tensor<f32>, tensor<f32>
    %s = dsc.add %s1, %o : tensor<f32>, tensor<f32>
    %gw = dsc.all_reduce %x : tensor<3x5xf32>
    %ge0 = dsc.all_reduce %t over expert_data : tensor<2x3x5xf32>
    %gb0 = dsc.all_reduce %u over expert_data : tensor<2x3xf32>
    %ge1 = dsc.all_reduce %t over expert_data : tensor<2x3x5xf32>
    return %s, %gw, %ge0, %gb0, %ge1 : tensor<f32>, tensor<3x5xf32>, tensor<2x3x5xf32>, tensor<2x3xf32>, tensor<2x3x5xf32>
  }
}

// Stage 1: the experts' moments are shards over the expert-data group
// (partition_group 2, the whole [4, ...] kept in partition_of); each rank
// takes its shard of its experts and of their summed gradients with a
// dsc.local_shard over expert_data, updates it in the experts' own update,
// and gathers the experts back over expert_data.
// S1: dsc.state optimizer @w.exp_avg {partition_of = array<i64: 3, 5>} : tensor<2xf32>
// S1: dsc.state parameter @h.0.experts.fc {partition_group = 1 : i32, partition_of = array<i64: 4, 3, 5>} : tensor<2x3x5xf32>
// S1-NEXT: dsc.state optimizer @h.0.experts.fc.exp_avg {partition_group = 2 : i32, partition_of = array<i64: 4, 3, 5>} : tensor<8xf32>
// S1-NEXT: dsc.state optimizer @h.0.experts.fc.exp_avg_sq {partition_group = 2 : i32, partition_of = array<i64: 4, 3, 5>} : tensor<8xf32>
// S1-NEXT: dsc.state parameter @h.0.experts.bias {partition_group = 1 : i32, partition_of = array<i64: 4, 3>} : tensor<2x3xf32>
// S1-NEXT: dsc.state optimizer @h.0.experts.bias.exp_avg {partition_group = 2 : i32, partition_of = array<i64: 4, 3>} : tensor<2xf32>
// S1-LABEL: func.func @step
// S1: %[[GW:.*]] = dsc.local_shard %{{.*}} : tensor<16xf32> -> tensor<2xf32>
// S1: %[[GE:.*]] = dsc.all_reduce %{{.*}} over expert_data : tensor<2x3x5xf32>
// S1: %[[GEF:.*]] = dsc.reshape %[[GE]] : tensor<2x3x5xf32> -> tensor<30xf32>
// S1: %[[PAD:.*]] = dsc.broadcast %{{.*}} : tensor<f32> -> tensor<2xf32>
// S1: %[[GEP:.*]] = dsc.concat(%[[GEF]], %[[PAD]]), dim = 0 : tensor<30xf32>, tensor<2xf32>
// S1: %[[GES:.*]] = dsc.local_shard %[[GEP]] over expert_data : tensor<32xf32> -> tensor<8xf32>
// S1: %[[GBS:.*]] = dsc.local_shard %{{.*}} over expert_data : tensor<8xf32> -> tensor<2xf32>
// S1: dsc.adam_update params(%{{.*}} : tensor<2xf32>) grads(%[[GW]] : tensor<2xf32>)
// S1: %[[E:.*]] = dsc.load @h.0.experts.fc : tensor<2x3x5xf32>
// S1: %[[ES:.*]] = dsc.local_shard %{{.*}} over expert_data : tensor<32xf32> -> tensor<8xf32>
// S1: %[[M:.*]] = dsc.load @h.0.experts.fc.exp_avg : tensor<8xf32>
// S1: %[[NEW:.*]]:3, %{{.*}}:3, %{{.*}}:3 = dsc.adam_update params(%[[ES]], %{{.*}}, %{{.*}} : tensor<8xf32>, tensor<2xf32>, tensor<8xf32>) grads(%[[GES]], %[[GBS]], %{{.*}} : tensor<8xf32>, tensor<2xf32>, tensor<8xf32>) exp_avgs(%[[M]],
// S1: dsc.all_gather %{{.*}} : tensor<2xf32> -> tensor<16xf32>
// S1: %[[ALL:.*]] = dsc.all_gather %[[NEW]]#0 over expert_data : tensor<8xf32> -> tensor<32xf32>
// S1: %[[CUT:.*]] = dsc.slice %[[ALL]], dim = 0, start = 0, end = 30, step = 1 : tensor<32xf32>
// S1: %[[BACK:.*]] = dsc.reshape %[[CUT]] : tensor<30xf32> -> tensor<2x3x5xf32>
// S1: dsc.store %[[BACK]] to @h.0.experts.fc : tensor<2x3x5xf32>
// S1: dsc.all_gather %[[NEW]]#1 over expert_data : tensor<2xf32> -> tensor<8xf32>

// Stage 2: the experts' gradients are reduce-scattered over the expert-data
// group instead of all-reduced over it. Clipping's squared norm: the
// optimizer summed the experts' squares over the expert group; of shards
// over the expert-data group that is a sum over the world, so the experts'
// partial sum adds to the world's and one all-reduce over the world makes
// the total.
// S2-LABEL: func.func @step
// S2: %[[GW:.*]] = dsc.reduce_scatter %{{.*}} : tensor<16xf32> -> tensor<2xf32>
// S2: %[[GE:.*]] = dsc.reduce_scatter %{{.*}} over expert_data : tensor<32xf32> -> tensor<8xf32>
// S2: %[[GB:.*]] = dsc.reduce_scatter %{{.*}} over expert_data : tensor<8xf32> -> tensor<2xf32>
// S2: %[[GE1:.*]] = dsc.reduce_scatter %{{.*}} over expert_data : tensor<32xf32> -> tensor<8xf32>
// S2-NOT: dsc.all_reduce
// S2: %[[SW:.*]] = dsc.sum_squares(%[[GW]] : tensor<2xf32>) : tensor<f32>
// S2-NEXT: %[[SE:.*]] = dsc.sum_squares(%[[GE]], %[[GB]], %[[GE1]] : tensor<8xf32>, tensor<2xf32>, tensor<8xf32>) : tensor<f32>
// S2-NEXT: %[[SUM:.*]] = dsc.add %[[SW]], %[[SE]] : tensor<f32>, tensor<f32>
// S2-NEXT: %[[TOTAL:.*]] = dsc.all_reduce %[[SUM]] : tensor<f32>
// S2-NEXT: dsc.sqrt %[[TOTAL]] : tensor<f32>
// S2-NOT: dsc.all_reduce
// S2: dsc.sgd_update params(%{{.*}}, %{{.*}}, %{{.*}} : tensor<8xf32>, tensor<2xf32>, tensor<8xf32>) grads(%[[GE]], %[[GB]], %[[GE1]] : tensor<8xf32>, tensor<2xf32>, tensor<8xf32>)
// S2: dsc.all_gather %{{.*}} over expert_data : tensor<8xf32> -> tensor<32xf32>

// Stage 3: the experts themselves are shards over the expert-data group,
// gathered over it for the forward. A block's experts are gathered
// together, in declaration order, before the first use of any of them (the
// bias before the weight's multiplication), and unpadded after the last
// gather; the next block's experts before their own first use.
// S3: dsc.state parameter @w {partition_of = array<i64: 3, 5>} : tensor<2xf32>
// S3: dsc.state parameter @h.0.experts.fc {partition_group = 2 : i32, partition_of = array<i64: 4, 3, 5>} : tensor<8xf32>
// S3: dsc.state parameter @h.0.experts.bias {partition_group = 2 : i32, partition_of = array<i64: 4, 3>} : tensor<2xf32>
// S3-LABEL: func.func @step
// S3: dsc.all_gather %{{.*}} : tensor<2xf32> -> tensor<16xf32>
// S3: %[[F:.*]] = dsc.load @h.0.experts.fc : tensor<8xf32>
// S3-NEXT: %[[FG:.*]] = dsc.all_gather %[[F]] over expert_data : tensor<8xf32> -> tensor<32xf32>
// S3-NEXT: %[[B:.*]] = dsc.load @h.0.experts.bias : tensor<2xf32>
// S3-NEXT: %[[BG:.*]] = dsc.all_gather %[[B]] over expert_data : tensor<2xf32> -> tensor<8xf32>
// S3-NEXT: %[[FC:.*]] = dsc.slice %[[FG]], dim = 0, start = 0, end = 30, step = 1 : tensor<32xf32>
// S3-NEXT: %[[FW:.*]] = dsc.reshape %[[FC]] : tensor<30xf32> -> tensor<2x3x5xf32>
// S3-NEXT: dsc.slice %[[BG]]
// S3-NEXT: dsc.reshape
// S3-NEXT: dsc.mul %[[FW]], %{{.*}} : tensor<2x3x5xf32>, tensor<2x3x5xf32>
// S3: dsc.load @h.1.experts.fc : tensor<8xf32>
// S3-NEXT: dsc.all_gather %{{.*}} over expert_data : tensor<8xf32> -> tensor<32xf32>
// S3: dsc.sgd_update params(%{{.*}}, %{{.*}}, %{{.*}} : tensor<8xf32>, tensor<2xf32>, tensor<8xf32>)
// S3-NOT: dsc.all_gather
// S3: return

// Bucketing merges a block's gathers, over the expert-data group.
// BUCKET-LABEL: func.func @step
// BUCKET: %[[F:.*]] = dsc.load @h.0.experts.fc : tensor<8xf32>
// BUCKET-NEXT: %[[B:.*]] = dsc.load @h.0.experts.bias : tensor<2xf32>
// BUCKET-NEXT: %[[P:.*]] = dsc.concat(%[[F]], %[[B]]), dim = 0 : tensor<8xf32>, tensor<2xf32>
// BUCKET-NEXT: dsc.all_gather %[[P]] over expert_data {dsc.bucket = 2 : i64} : tensor<10xf32> -> tensor<40xf32>

// The persistence threshold compares the rank's experts (the bias: 2 x 3
// elements) with it: at 6 they stay whole on the rank (still split over
// the expert group); their moments are partitioned all the same.
// PERSIST: dsc.state parameter @h.0.experts.fc {partition_group = 2 : i32, partition_of = array<i64: 4, 3, 5>} : tensor<8xf32>
// PERSIST: dsc.state parameter @h.0.experts.bias {partition_group = 1 : i32, partition_of = array<i64: 4, 3>} : tensor<2x3xf32>
// PERSIST-LABEL: func.func @step
// PERSIST: dsc.load @h.0.experts.bias : tensor<2x3xf32>
// PERSIST: dsc.all_gather %{{.*}} over expert_data : tensor<2xf32> -> tensor<8xf32>
// PERSIST-NEXT: dsc.slice
// PERSIST-NEXT: dsc.reshape
// PERSIST-NEXT: dsc.store %{{.*}} to @h.0.experts.bias : tensor<2x3xf32>

// -----

// A one-block model (no repeated block to name a layer by): its experts'
// layer is their module path, `mlp.experts`, so they are gathered together
// before the first use of any of them and bucketed as one, as in a model of
// many blocks; `mlp.experts.fc` and `mlp.experts.bias` of the 4 experts
// over P = 2 and D = 2 ranks.
module attributes {dsc.world_size = 4 : i64, dsc.expert_parallel_size = 2 : i64} {
  dsc.state parameter @w : tensor<3x5xf32>
  dsc.state parameter @mlp.experts.fc.weight {partition_of = array<i64: 4, 3, 5>, partition_group = 1 : i32} : tensor<2x3x5xf32>
  dsc.state parameter @mlp.experts.fc.bias {partition_of = array<i64: 4, 3>, partition_group = 1 : i32} : tensor<2x3xf32>
  func.func @step(%x: tensor<3x5xf32> {dsc.input = "x"}, %t: tensor<2x3x5xf32> {dsc.input = "t"}, %u: tensor<2x3xf32> {dsc.input = "u"})
      -> (tensor<f32> {dsc.output = "loss"},
          tensor<3x5xf32> {dsc.output = "grad.w", dsc.gradient_of = @w},
          tensor<2x3x5xf32> {dsc.output = "grad.mlp.experts.fc.weight", dsc.gradient_of = @mlp.experts.fc.weight},
          tensor<2x3xf32> {dsc.output = "grad.mlp.experts.fc.bias", dsc.gradient_of = @mlp.experts.fc.bias}) {
    %w = dsc.load @w : tensor<3x5xf32>
    %p = dsc.mul %w, %x : tensor<3x5xf32>, tensor<3x5xf32>
    %l = dsc.reduce_sum %p, dims = [0, 1] : tensor<3x5xf32>
    %e0 = dsc.load @mlp.experts.fc.weight : tensor<2x3x5xf32>
    %q = dsc.mul %e0, %t : tensor<2x3x5xf32>, tensor<2x3x5xf32>
    %m = dsc.reduce_sum %q, dims = [0, 1, 2] : tensor<2x3x5xf32>
    %b0 = dsc.load @mlp.experts.fc.bias : tensor<2x3xf32>
    %r = dsc.mul %b0, %u : tensor<2x3xf32>, tensor<2x3xf32>
    %n = dsc.reduce_sum %r, dims = [0, 1] : tensor<2x3xf32>
    %s0 = dsc.add %l, %m : tensor<f32>, tensor<f32>
    %s = dsc.add %s0, %n : tensor<f32>, tensor<f32>
    %gw = dsc.all_reduce %x : tensor<3x5xf32>
    %ge0 = dsc.all_reduce %t over expert_data : tensor<2x3x5xf32>
    %gb0 = dsc.all_reduce %u over expert_data : tensor<2x3xf32>
    return %s, %gw, %ge0, %gb0 : tensor<f32>, tensor<3x5xf32>, tensor<2x3x5xf32>, tensor<2x3xf32>
  }
}

// S3-LABEL: func.func @step
// S3: %[[F:.*]] = dsc.load @mlp.experts.fc.weight : tensor<15xf32>
// S3-NEXT: %[[FG:.*]] = dsc.all_gather %[[F]] over expert_data : tensor<15xf32> -> tensor<30xf32>
// S3-NEXT: %[[B:.*]] = dsc.load @mlp.experts.fc.bias : tensor<3xf32>
// S3-NEXT: %[[BG:.*]] = dsc.all_gather %[[B]] over expert_data : tensor<3xf32> -> tensor<6xf32>
// S3-NEXT: dsc.reshape %[[FG]] : tensor<30xf32> -> tensor<2x3x5xf32>
// S3-NEXT: dsc.reshape %[[BG]] : tensor<6xf32> -> tensor<2x3xf32>
// S3-NEXT: dsc.mul
// BUCKET-LABEL: func.func @step
// BUCKET: %[[F:.*]] = dsc.load @mlp.experts.fc.weight : tensor<15xf32>
// BUCKET-NEXT: %[[B:.*]] = dsc.load @mlp.experts.fc.bias : tensor<3xf32>
// BUCKET-NEXT: %[[P:.*]] = dsc.concat(%[[F]], %[[B]]), dim = 0 : tensor<15xf32>, tensor<3xf32>
// BUCKET-NEXT: dsc.all_gather %[[P]] over expert_data {dsc.bucket = 2 : i64} : tensor<18xf32> -> tensor<36xf32>

// -----

// P = W: each expert-data group is one rank, so there is nothing to
// partition the experts over; they stay as they are, their gradient
// summed over nothing.
module attributes {dsc.world_size = 2 : i64, dsc.expert_parallel_size = 2 : i64} {
  dsc.state parameter @w : tensor<4xf32>
  dsc.state parameter @h.0.experts.fc {partition_of = array<i64: 4, 3>, partition_group = 1 : i32} : tensor<2x3xf32>
  func.func @step(%x: tensor<4xf32> {dsc.input = "x"}, %t: tensor<2x3xf32> {dsc.input = "t"})
      -> (tensor<f32> {dsc.output = "loss"},
          tensor<4xf32> {dsc.output = "grad.w", dsc.gradient_of = @w},
          tensor<2x3xf32> {dsc.output = "grad.h.0.experts.fc", dsc.gradient_of = @h.0.experts.fc}) {
    %w = dsc.load @w : tensor<4xf32>
    %p = dsc.mul %w, %x : tensor<4xf32>, tensor<4xf32>
    %l = dsc.reduce_sum %p, dims = [0] : tensor<4xf32>
    %e = dsc.load @h.0.experts.fc : tensor<2x3xf32>
    %q = dsc.mul %e, %t : tensor<2x3xf32>, tensor<2x3xf32>
    %m = dsc.reduce_sum %q, dims = [0, 1] : tensor<2x3xf32>
    %s = dsc.add %l, %m : tensor<f32>, tensor<f32>
    %gw = dsc.all_reduce %x : tensor<4xf32>
    return %s, %gw, %t : tensor<f32>, tensor<4xf32>, tensor<2x3xf32>
  }
}

// S1: dsc.state optimizer @w.exp_avg {partition_of = array<i64: 4>} : tensor<2xf32>
// S1: dsc.state optimizer @h.0.experts.fc.exp_avg {partition_group = 1 : i32, partition_of = array<i64: 4, 3>} : tensor<2x3xf32>
// S1-NOT: over expert_data
// S3: dsc.state parameter @w {partition_of = array<i64: 4>} : tensor<2xf32>
// S3: dsc.state parameter @h.0.experts.fc {partition_group = 1 : i32, partition_of = array<i64: 4, 3>} : tensor<2x3xf32>
// S3-NOT: over expert_data
