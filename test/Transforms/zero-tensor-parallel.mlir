// ZeRO under tensor parallelism: every state is partitioned over its data
// group of D = W / T ranks (Megatron's distributed optimizer), a
// tensor-parallel slice's being the rank's slice (partition_of keeps the
// whole, partition_blocks says the slice is what is partitioned), any
// other's the whole tensor. Collectives run over `data`; the slices'
// squared sum, partial over `data`, is summed over `tensor` into a partial
// of the world.
// RUN: dsc-opt %s --split-input-file --dsc-optimizer="optimizer=adamw lr=0.1" --dsc-zero=stage=1 | FileCheck %s --check-prefix=S1
// RUN: dsc-opt %s --split-input-file --dsc-optimizer="optimizer=sgd lr=0.1 momentum=0.9 grad-clip=1.0" --dsc-zero=stage=2 | FileCheck %s --check-prefix=S2
// RUN: dsc-opt %s --split-input-file --dsc-optimizer="optimizer=sgd lr=0.1" --dsc-zero="stage=3 persistence-threshold=0" | FileCheck %s --check-prefix=S3

// 4 ranks, tensor groups of T = 2, data groups of D = 2. The gradients as
// --dsc-autodiff leaves them (written by hand), each summed over `data`:
// @w (15 elements, whole on every rank: shards of 8, the last padded with
// one zero), the column-parallel slice @fc ([3, 5] of [6, 5]: shards of 8)
// and the row-parallel slice @proj ([5, 3] of [5, 6] in 5 blocks: shards
// of 8).
module attributes {dsc.world_size = 4 : i64, dsc.tensor_parallel_size = 2 : i64} {
  dsc.state parameter @w : tensor<3x5xf32>
  dsc.state parameter @fc {partition_of = array<i64: 6, 5>, partition_group = 3 : i32} : tensor<3x5xf32>
  dsc.state parameter @proj {partition_of = array<i64: 5, 6>, partition_group = 3 : i32, partition_blocks = 5 : i64} : tensor<5x3xf32>
  func.func @step(%x: tensor<3x5xf32> {dsc.input = "x"}, %t: tensor<3x5xf32> {dsc.input = "t"}, %u: tensor<5x3xf32> {dsc.input = "u"})
      -> (tensor<f32> {dsc.output = "loss"},
          tensor<3x5xf32> {dsc.output = "grad.w", dsc.gradient_of = @w},
          tensor<3x5xf32> {dsc.output = "grad.fc", dsc.gradient_of = @fc},
          tensor<5x3xf32> {dsc.output = "grad.proj", dsc.gradient_of = @proj}) {
    %w = dsc.load @w : tensor<3x5xf32>
    %p = dsc.mul %w, %x : tensor<3x5xf32>, tensor<3x5xf32>
    %l = dsc.reduce_sum %p, dims = [0, 1] : tensor<3x5xf32>
    %f = dsc.load @fc : tensor<3x5xf32>
    %q = dsc.mul %f, %t : tensor<3x5xf32>, tensor<3x5xf32>
    %m = dsc.reduce_sum %q, dims = [0, 1] : tensor<3x5xf32>
    %o = dsc.load @proj : tensor<5x3xf32>
    %r = dsc.mul %o, %u : tensor<5x3xf32>, tensor<5x3xf32>
    %n = dsc.reduce_sum %r, dims = [0, 1] : tensor<5x3xf32>
    %s0 = dsc.add %l, %m : tensor<f32>, tensor<f32>
    %s = dsc.add %s0, %n : tensor<f32>, tensor<f32>
    %gw = dsc.all_reduce %x over data : tensor<3x5xf32>
    %gf = dsc.all_reduce %t over data : tensor<3x5xf32>
    %gp = dsc.all_reduce %u over data : tensor<5x3xf32>
    return %s, %gw, %gf, %gp : tensor<f32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<5x3xf32>
  }
}

// Stage 1: the moments are shards over `data`: @w's of the whole (its
// partition_of the whole shape), the slices' of the rank's slice (the whole
// kept, partition_blocks stated, 1 included); the summed gradients and the
// parameters are sharded with dsc.local_shard over data and the updated
// parameters gathered back over data, each at its local shape.
// S1: dsc.state optimizer @w.exp_avg {partition_group = 4 : i32, partition_of = array<i64: 3, 5>} : tensor<8xf32>
// S1: dsc.state parameter @fc {partition_group = 3 : i32, partition_of = array<i64: 6, 5>} : tensor<3x5xf32>
// S1-NEXT: dsc.state optimizer @fc.exp_avg {partition_blocks = 1 : i64, partition_group = 4 : i32, partition_of = array<i64: 6, 5>} : tensor<8xf32>
// S1: dsc.state parameter @proj {partition_blocks = 5 : i64, partition_group = 3 : i32, partition_of = array<i64: 5, 6>} : tensor<5x3xf32>
// S1-NEXT: dsc.state optimizer @proj.exp_avg {partition_blocks = 5 : i64, partition_group = 4 : i32, partition_of = array<i64: 5, 6>} : tensor<8xf32>
// S1: dsc.all_reduce %arg0 over data : tensor<3x5xf32>
// S1: dsc.local_shard %{{.*}} over data : tensor<16xf32> -> tensor<8xf32>
// S1: dsc.adam_update params(%{{.*}} : tensor<8xf32>)
// S1: dsc.adam_update params(%{{.*}}, %{{.*}} : tensor<8xf32>, tensor<8xf32>)
// S1: %[[P:.*]] = dsc.all_gather %{{.*}} over data : tensor<8xf32> -> tensor<16xf32>
// S1: %[[S:.*]] = dsc.slice %[[P]], dim = 0, start = 0, end = 15
// S1: %[[W:.*]] = dsc.reshape %[[S]] : tensor<15xf32> -> tensor<3x5xf32>
// S1: dsc.store %[[W]] to @w : tensor<3x5xf32>
// S1: dsc.all_gather %{{.*}} over data : tensor<8xf32> -> tensor<16xf32>
// S1: dsc.reshape %{{.*}} : tensor<15xf32> -> tensor<5x3xf32>
// S1-NEXT: dsc.store %{{.*}} to @proj : tensor<5x3xf32>
// S1-NOT: over tensor
// S1-NOT: all_gather %{{.*}} :
// S1: return

// Stage 2: the gradients are reduce-scattered over data; the clipping norm
// sums @w's squares over data, and the slices' (partial over data, which
// the optimizer summed over tensor) over the world.
// S2: dsc.state optimizer @fc.momentum_buffer {partition_blocks = 1 : i64, partition_group = 4 : i32, partition_of = array<i64: 6, 5>} : tensor<8xf32>
// S2-NOT: dsc.all_reduce %arg
// S2: %[[GW:.*]] = dsc.reduce_scatter %{{.*}} over data : tensor<16xf32> -> tensor<8xf32>
// S2: %[[GF:.*]] = dsc.reduce_scatter %{{.*}} over data : tensor<16xf32> -> tensor<8xf32>
// S2: %[[GP:.*]] = dsc.reduce_scatter %{{.*}} over data : tensor<16xf32> -> tensor<8xf32>
// S2: %[[RW:.*]] = dsc.sum_squares(%[[GW]] : tensor<8xf32>)
// S2-NEXT: %[[NW:.*]] = dsc.all_reduce %[[RW]] over data : tensor<f32>
// S2-NEXT: %[[RS:.*]] = dsc.sum_squares(%[[GF]], %[[GP]] : tensor<8xf32>, tensor<8xf32>)
// S2-NEXT: %[[NS:.*]] = dsc.all_reduce %[[RS]] : tensor<f32>
// S2-NEXT: dsc.add %[[NW]], %[[NS]]
// S2-NOT: over tensor
// S2: return

// Stage 3: the parameters themselves are shards over data, gathered back
// to the rank's local shape (the slice's) for the forward.
// S3: dsc.state parameter @w {partition_group = 4 : i32, partition_of = array<i64: 3, 5>} : tensor<8xf32>
// S3-NEXT: dsc.state parameter @fc {partition_blocks = 1 : i64, partition_group = 4 : i32, partition_of = array<i64: 6, 5>} : tensor<8xf32>
// S3-NEXT: dsc.state parameter @proj {partition_blocks = 5 : i64, partition_group = 4 : i32, partition_of = array<i64: 5, 6>} : tensor<8xf32>
// S3: %[[L:.*]] = dsc.load @proj : tensor<8xf32>
// S3-NEXT: %[[G:.*]] = dsc.all_gather %[[L]] over data : tensor<8xf32> -> tensor<16xf32>
// S3-NEXT: %[[U:.*]] = dsc.slice %[[G]], dim = 0, start = 0, end = 15
// S3-NEXT: %[[P:.*]] = dsc.reshape %[[U]] : tensor<15xf32> -> tensor<5x3xf32>
// S3-NEXT: dsc.mul %[[P]], %arg2
// S3: dsc.store %{{.*}} to @proj : tensor<8xf32>

// -----

// D = 1 (the tensor group is the world): nothing to partition over; the
// stage is recorded and every state stays as it is.
// RUN: dsc-opt %s --split-input-file --dsc-optimizer="optimizer=sgd lr=0.1 momentum=0.9" --dsc-zero=stage=2 | FileCheck %s --check-prefix=D1
// D1-LABEL: module attributes {dsc.tensor_parallel_size = 2 : i64, dsc.world_size = 2 : i64, dsc.zero_stage = 2 : i64}
// D1: dsc.state parameter @fc {partition_group = 3 : i32, partition_of = array<i64: 6, 5>} : tensor<3x5xf32>
// D1-NEXT: dsc.state optimizer @fc.momentum_buffer {partition_group = 3 : i32, partition_of = array<i64: 6, 5>} : tensor<3x5xf32>
// D1-NOT: reduce_scatter
// D1-NOT: local_shard
// D1-NOT: all_gather
module attributes {dsc.world_size = 2 : i64, dsc.tensor_parallel_size = 2 : i64} {
  dsc.state parameter @fc {partition_of = array<i64: 6, 5>, partition_group = 3 : i32} : tensor<3x5xf32>
  func.func @step(%t: tensor<3x5xf32> {dsc.input = "t"})
      -> (tensor<f32> {dsc.output = "loss"},
          tensor<3x5xf32> {dsc.output = "grad.fc", dsc.gradient_of = @fc}) {
    %f = dsc.load @fc : tensor<3x5xf32>
    %q = dsc.mul %f, %t : tensor<3x5xf32>, tensor<3x5xf32>
    %m = dsc.reduce_sum %q, dims = [0, 1] : tensor<3x5xf32>
    return %m, %t : tensor<f32>, tensor<3x5xf32>
  }
}
