// Experts under tensor parallelism (DeepSpeed-TED) in --dsc-moe: W = 4 ranks,
// tensor groups of T = 2, expert groups of P = 2 (along the data dimension).
// Inputs/two-mlp-blocks.mlir: 8 tokens of width 4 per data rank, hidden 16;
// 4 experts of capacity 4 (min-capacity). Each rank holds 2 experts, each
// its half of the hidden features: column-parallel c_fc ([2, 8, 4] of
// [4, 16, 4], 4 blocks: one per expert), row-parallel c_proj ([2, 4, 8] of
// [4, 4, 16], 16 blocks: one per expert's row), c_proj's bias whole on the
// tensor group (added once the partial products are summed).
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=4 tensor-parallel=2" --dsc-moe="experts=4 ep-size=2" | FileCheck %s --check-prefix=DEDUP
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=4 tensor-parallel=2" --dsc-moe="experts=4 ep-size=2 duplicate-token-dropping=false" | FileCheck %s --check-prefix=PLAIN
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=4 tensor-parallel=2" --dsc-moe="experts=4 ep-size=2" --dsc-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=2 tensor-parallel=2" --dsc-moe="experts=4" | FileCheck %s --check-prefix=EP1
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=4 tensor-parallel=2" --dsc-moe="experts=4 ep-size=2" --dsc-autodiff --dsc-optimizer="grad-clip=1.0" | FileCheck %s --check-prefix=CLIP
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=8 tensor-parallel=2" --dsc-moe="experts=4 ep-size=2" --dsc-autodiff --dsc-optimizer="optimizer=adamw" --dsc-zero="stage=1" | FileCheck %s --check-prefix=ZERO
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=8 tensor-parallel=2" --dsc-moe="experts=4 ep-size=2" --dsc-autodiff --dsc-optimizer="optimizer=adamw grad-clip=1.0" --dsc-zero="stage=2" | FileCheck %s --check-prefix=ZCLIP

// DEDUP: dsc.state parameter @h.0.mlp.experts.c_fc.weight {init_from = "h.0.mlp.c_fc.weight", partition_blocks = 4 : i64, partition_group = 1 : i32, partition_of = array<i64: 4, 16, 4>} : tensor<2x8x4xf32>
// DEDUP: dsc.state parameter @h.0.mlp.experts.c_fc.bias {init_from = "h.0.mlp.c_fc.bias", partition_blocks = 4 : i64, partition_group = 1 : i32, partition_of = array<i64: 4, 16>} : tensor<2x8xf32>
// DEDUP: dsc.state parameter @h.0.mlp.experts.c_proj.weight {init_from = "h.0.mlp.c_proj.weight", partition_blocks = 16 : i64, partition_group = 1 : i32, partition_of = array<i64: 4, 4, 16>} : tensor<2x4x8xf32>
// DEDUP: dsc.state parameter @h.0.mlp.experts.c_proj.bias {init_from = "h.0.mlp.c_proj.bias", partition_group = 1 : i32, partition_of = array<i64: 4, 4>} : tensor<2x4xf32>
// Duplicate token dropping: this rank's half of every expert's 4 slots
// through the exchange (no communication to take it), the tensor group's
// halves gathered into the experts' input, their partial outputs
// reduce-scattered back into halves, exchanged back, and gathered (alike:
// the combine is the same on both ranks).
// DEDUP-LABEL: func.func
// DEDUP: %[[D:.*]] = dsc.moe_dispatch {{.*}} -> tensor<4x4x4xf32>
// DEDUP: %[[S:.*]] = dsc.reshape %[[D]] : tensor<4x4x4xf32> -> tensor<4x2x2x4xf32>
// DEDUP: %[[P:.*]] = dsc.permute %[[S]], [1, 0, 2, 3] : tensor<4x2x2x4xf32>
// DEDUP: %[[F:.*]] = dsc.reshape %[[P]] : tensor<2x4x2x4xf32> -> tensor<64xf32>
// DEDUP: %[[MINE:.*]] = dsc.local_shard %[[F]] over tensor : tensor<64xf32> -> tensor<32xf32>
// DEDUP: %[[M:.*]] = dsc.reshape %[[MINE]] : tensor<32xf32> -> tensor<4x2x4xf32>
// DEDUP: %[[R:.*]] = dsc.all_to_all %[[M]] over expert : tensor<4x2x4xf32>
// DEDUP: %[[RF:.*]] = dsc.reshape %[[R]] : tensor<4x2x4xf32> -> tensor<32xf32>
// DEDUP: %[[G:.*]] = dsc.all_gather %[[RF]] over tensor : tensor<32xf32> -> tensor<64xf32>
// DEDUP: dsc.permute %{{.*}}, [2, 1, 0, 3, 4] : tensor<2x2x2x2x4xf32>
// DEDUP: %[[IN:.*]] = dsc.reshape %{{.*}} : tensor<2x2x2x2x4xf32> -> tensor<2x8x4xf32>
// DEDUP-NOT: dsc.replicate %[[IN]]
// DEDUP: dsc.matmul %[[IN]], %{{.*}} transpose_rhs : tensor<2x8x4xf32>, tensor<2x8x4xf32>
// DEDUP: dsc.gelu tanh %{{.*}} : tensor<2x8x8xf32>
// DEDUP: %[[Y:.*]] = dsc.matmul %{{.*}}, %{{.*}} transpose_rhs : tensor<2x8x8xf32>, tensor<2x4x8xf32>
// DEDUP: dsc.permute %{{.*}}, [2, 1, 0, 3, 4] : tensor<2x2x2x2x4xf32>
// DEDUP: %[[SUM:.*]] = dsc.reduce_scatter %{{.*}} over tensor : tensor<64xf32> -> tensor<32xf32>
// DEDUP: dsc.replicate %{{.*}} : tensor<2x4xf32>
// DEDUP: dsc.add %{{.*}}, %{{.*}} : tensor<2x2x2x4xf32>, tensor<1x2x1x4xf32>
// DEDUP: %[[BACK:.*]] = dsc.all_to_all %{{.*}} over expert : tensor<4x2x4xf32>
// DEDUP: %[[BF:.*]] = dsc.reshape %[[BACK]] : tensor<4x2x4xf32> -> tensor<32xf32>
// DEDUP: dsc.all_gather %[[BF]] over tensor alike : tensor<32xf32> -> tensor<64xf32>
// DEDUP: dsc.permute %{{.*}}, [1, 0, 2, 3] : tensor<2x4x2x4xf32>
// DEDUP: %[[OUT:.*]] = dsc.reshape %{{.*}} : tensor<4x2x2x4xf32> -> tensor<4x4x4xf32>
// DEDUP: dsc.moe_combine %[[OUT]]
// The layers' l_aux join the loss as their mean over the data group (the
// tensor group's ranks route alike), as the loss itself is averaged.
// DEDUP: %[[AUX:.*]] = dsc.all_reduce %{{.*}} over data : tensor<f32>
// DEDUP-NEXT: %[[D2:.*]] = dsc.constant dense<2.000000e+00> : tensor<f32>
// DEDUP-NEXT: dsc.div %[[AUX]], %[[D2]]
// Three replaced blocks, two exchanges each, no tensor all-reduce left.
// DEDUP-NOT: dsc.all_reduce {{.*}} over tensor

// Without dropping: the whole dispatch through the exchange, Megatron's f
// (dsc.replicate) and g (an all-reduce over the tensor group), the bias
// after the sum.
// PLAIN-LABEL: func.func
// PLAIN: %[[D:.*]] = dsc.moe_dispatch {{.*}} -> tensor<4x4x4xf32>
// PLAIN: dsc.all_to_all %[[D]] over expert : tensor<4x4x4xf32>
// PLAIN: %[[LOCAL:.*]] = dsc.reshape %{{.*}} : tensor<2x2x4x4xf32> -> tensor<2x8x4xf32>
// PLAIN: %[[F:.*]] = dsc.replicate %[[LOCAL]] : tensor<2x8x4xf32>
// PLAIN: dsc.matmul %[[F]], %{{.*}} transpose_rhs : tensor<2x8x4xf32>, tensor<2x8x4xf32>
// PLAIN: %[[Y:.*]] = dsc.matmul %{{.*}}, %{{.*}} transpose_rhs : tensor<2x8x8xf32>, tensor<2x4x8xf32>
// PLAIN: %[[G:.*]] = dsc.all_reduce %[[Y]] over tensor : tensor<2x8x4xf32>
// PLAIN: dsc.add %[[G]], %{{.*}} : tensor<2x8x4xf32>, tensor<2x1x4xf32>
// PLAIN: dsc.all_to_all %{{.*}} over expert : tensor<4x4x4xf32>
// PLAIN-NOT: dsc.local_shard
// PLAIN-NOT: dsc.all_gather

// The backward, from the ops' rules: the alike gather's adjoint is this
// rank's shard (no communication), the reduce-scatter's an all-gather, the
// exchanges' exchanges, the gather's a reduce-scatter, the local shard's an
// all-gather. The experts' gradients are summed over the expert-data group
// (W / (P * T) = 1 rank here: none), the gate's over the data group.
// GRAD-COUNT-6: dsc.all_to_all %{{.*}} over expert
// GRAD: dsc.local_shard %{{.*}} over tensor : tensor<64xf32> -> tensor<32xf32>
// GRAD: dsc.all_to_all %{{.*}} over expert : tensor<4x2x4xf32>
// GRAD: dsc.all_gather %{{.*}} over tensor : tensor<32xf32> -> tensor<64xf32>
// GRAD: dsc.reduce_scatter %{{.*}} over tensor : tensor<64xf32> -> tensor<32xf32>
// GRAD: dsc.all_to_all %{{.*}} over expert : tensor<4x2x4xf32>
// GRAD: dsc.all_gather %{{.*}} over tensor : tensor<32xf32> -> tensor<64xf32>
// GRAD-NOT: over expert_data
// GRAD: dsc.all_reduce %{{.*}} over data : tensor<4x4xf32>
// GRAD-NOT: over expert_data

// Experts split over the tensor group alone (P = 1): tensor-group slices,
// no exchange, no dropping.
// EP1: dsc.state parameter @h.0.mlp.experts.c_fc.weight {init_from = "h.0.mlp.c_fc.weight", partition_blocks = 4 : i64, partition_group = 3 : i32, partition_of = array<i64: 4, 16, 4>} : tensor<4x8x4xf32>
// EP1: dsc.state parameter @h.0.mlp.experts.c_proj.bias {init_from = "h.0.mlp.c_proj.bias"} : tensor<4x4xf32>
// EP1-NOT: dsc.all_to_all
// EP1: dsc.replicate %{{.*}} : tensor<4x4x4xf32>
// EP1: dsc.all_reduce %{{.*}} over tensor : tensor<4x4x4xf32>

// Clipping sums the squares of the experts' slices over the expert group,
// then over the tensor group; c_proj's biases (whole on the tensor group)
// over the expert group alone.
// CLIP: %[[B:.*]] = dsc.sum_squares({{.*}} : tensor<2x4xf32>, tensor<2x4xf32>) : tensor<f32>
// CLIP: dsc.all_reduce %[[B]] over expert : tensor<f32>
// CLIP: %[[SQ:.*]] = dsc.sum_squares({{.*}} : tensor<2x8x4xf32>, tensor<2x8xf32>, tensor<2x4x8xf32>, {{.*}}) : tensor<f32>
// CLIP: %[[E:.*]] = dsc.all_reduce %[[SQ]] over expert : tensor<f32>
// CLIP: dsc.all_reduce %[[E]] over tensor : tensor<f32>

// ZeRO under TED (W = 8: data groups of 4, expert-data groups of 2): the
// gate's moments partitioned over the data group, each rank's experts of
// its slice (and the biases updated with them) over its expert-data group:
// 2 experts x 8 x 4 elements in shards of 32, a run of the slice's blocks
// (partition_blocks stays the slice's).
// ZERO: dsc.state optimizer @h.0.mlp.gate.weight.exp_avg {partition_group = 4 : i32, partition_of = array<i64: 4, 4>} : tensor<4xf32>
// ZERO: dsc.state optimizer @h.0.mlp.experts.c_fc.weight.exp_avg {partition_blocks = 4 : i64, partition_group = 2 : i32, partition_of = array<i64: 4, 16, 4>} : tensor<32xf32>
// ZERO: dsc.state optimizer @h.0.mlp.experts.c_proj.bias.exp_avg {partition_group = 2 : i32, partition_of = array<i64: 4, 4>} : tensor<4xf32>
// The experts' gradients summed over their expert-data group, then each
// rank's shard of them.
// ZERO: %[[G:.*]] = dsc.all_reduce %{{.*}} over expert_data : tensor<2x8x4xf32>
// ZERO: %[[F:.*]] = dsc.reshape %[[G]] : tensor<2x8x4xf32> -> tensor<64xf32>
// ZERO: dsc.local_shard %[[F]] over expert_data : tensor<64xf32> -> tensor<32xf32>

// Clipping at stage 2: each square counted once. The gate's shards
// (partial over the data group) and the unsplit experts' biases (partial
// over the expert-data group, then over the expert group: over the data
// group, whole on the tensor group) summed over the data group; the
// experts' slices (partial over the expert-data, expert and tensor groups)
// over the world, with no second sum over the tensor group.
// ZCLIP: %[[GATE:.*]] = dsc.sum_squares({{.*}} : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) : tensor<f32>
// ZCLIP: %[[BIAS:.*]] = dsc.sum_squares({{.*}} : tensor<4xf32>, tensor<4xf32>) : tensor<f32>
// ZCLIP: %[[GB:.*]] = dsc.add %[[GATE]], %[[BIAS]] : tensor<f32>, tensor<f32>
// ZCLIP: %[[D:.*]] = dsc.all_reduce %[[GB]] over data : tensor<f32>
// ZCLIP: %[[SL:.*]] = dsc.sum_squares({{.*}} : tensor<32xf32>, tensor<8xf32>, {{.*}}) : tensor<f32>
// ZCLIP: %[[W:.*]] = dsc.all_reduce %[[SL]] : tensor<f32>
// ZCLIP-NOT: over tensor : tensor<f32>
// ZCLIP: dsc.add %[[D]], %[[W]] : tensor<f32>, tensor<f32>
