// Megatron's split by --dsc-tensor-parallel, found by structure.
// Inputs/gpt2-one-block.mlir: GPT-2's first block (a fused query/key/value
// projection c_attn [96, 32] over 2 heads of 16, c_proj [32, 32]; an MLP
// c_fc [128, 32], c_proj [32, 128]) on 16 tokens of width 32, at T = 2.
// Inputs/two-mlp-blocks.mlir: two GELU/ReLU MLPs and a SwiGLU one.
// RUN: dsc-opt %S/Inputs/gpt2-one-block.mlir --dsc-data-parallel="world-size=2 tensor-parallel=2" --dsc-tensor-parallel | FileCheck %s
// RUN: dsc-opt %S/Inputs/gpt2-one-block.mlir --dsc-data-parallel="world-size=4 tensor-parallel=2" --dsc-tensor-parallel --dsc-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: dsc-opt %S/Inputs/gpt2-one-block.mlir --dsc-data-parallel="world-size=2 tensor-parallel=2" --dsc-tensor-parallel --dsc-autodiff | FileCheck %s --check-prefix=ONEDATA
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=2 tensor-parallel=2" --dsc-tensor-parallel | FileCheck %s --check-prefix=MLP
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --world-size=4 --tensor-parallel=2 --grad-clip=1.0 --loss-scaling | FileCheck %s --check-prefix=CLIP
// RUN: dsc-opt %S/Inputs/gpt2-one-block.mlir --dsc-data-parallel="world-size=2" --dsc-tensor-parallel | FileCheck %s --check-prefix=OFF

// The column-parallel weights keep their rows of this rank's heads: c_attn's
// [3 blocks (q, k, v), 2 ranks, 16 x 32]; the row-parallel ones their
// columns, one block per row; the row-parallel biases stay whole.
// CHECK: module attributes {dsc.tensor_parallel_size = 2 : i64, dsc.world_size = 2 : i64}
// CHECK: @transformer.h.0.ln_1.weight : tensor<32xf32>
// CHECK: @transformer.h.0.attn.c_attn.weight {partition_blocks = 3 : i64, partition_group = 3 : i32, partition_of = array<i64: 96, 32>} : tensor<48x32xf32>
// CHECK: @transformer.h.0.attn.c_attn.bias {partition_blocks = 3 : i64, partition_group = 3 : i32, partition_of = array<i64: 96>} : tensor<48xf32>
// CHECK: @transformer.h.0.attn.c_proj.weight {partition_blocks = 32 : i64, partition_group = 3 : i32, partition_of = array<i64: 32, 32>} : tensor<32x16xf32>
// CHECK: @transformer.h.0.attn.c_proj.bias : tensor<32xf32>
// CHECK: @transformer.h.0.mlp.c_fc.weight {partition_group = 3 : i32, partition_of = array<i64: 128, 32>} : tensor<64x32xf32>
// CHECK: @transformer.h.0.mlp.c_fc.bias {partition_group = 3 : i32, partition_of = array<i64: 128>} : tensor<64xf32>
// CHECK: @transformer.h.0.mlp.c_proj.weight {partition_blocks = 32 : i64, partition_group = 3 : i32, partition_of = array<i64: 32, 128>} : tensor<32x64xf32>
// CHECK: @transformer.h.0.mlp.c_proj.bias : tensor<32xf32>
// The embeddings and the tied head stay whole.
// CHECK: @transformer.ln_f.weight : tensor<32xf32>
// CHECK-LABEL: func.func @forward
// f where the attention block begins: its input enters each rank's heads.
// CHECK: %[[LN1:.*]] = dsc.reshape %{{.*}} : tensor<1x16x32xf32> -> tensor<16x32xf32>
// CHECK: %[[X:.*]] = dsc.replicate %[[LN1]] : tensor<16x32xf32>
// CHECK: %[[QKV:.*]] = dsc.linear %[[X]], %{{.*}}, %{{.*}} : tensor<16x32xf32>, tensor<48x32xf32>, tensor<48xf32>
// q, k and v: this rank's 16 features of each.
// CHECK: dsc.slice %{{.*}}, dim = 2, start = 0, end = 16, step = 1 : tensor<1x16x48xf32>
// CHECK: dsc.slice %{{.*}}, dim = 2, start = 16, end = 32, step = 1 : tensor<1x16x48xf32>
// CHECK: dsc.slice %{{.*}}, dim = 2, start = 32, end = 48, step = 1 : tensor<1x16x48xf32>
// One head per rank.
// CHECK: dsc.reshape %{{.*}} : tensor<1x16x16xf32> -> tensor<1x16x1x16xf32>
// CHECK: dsc.matmul %{{.*}}, %{{.*}} : tensor<1x16x16xf32>, tensor<1x16x16xf32>
// CHECK: dsc.softmax %{{.*}}, dim = 3 : tensor<1x1x16x16xf32>
// g where it ends: the partial products summed, then the bias once.
// CHECK: %[[P:.*]] = dsc.linear %{{.*}}, %{{.*}} : tensor<16x16xf32>, tensor<32x16xf32>
// CHECK: %[[S:.*]] = dsc.all_reduce %[[P]] over tensor : tensor<16x32xf32>
// CHECK: dsc.add %[[S]], %{{.*}} : tensor<16x32xf32>, tensor<32xf32>
// The feed-forward block, column-parallel c_fc (64 of 128 features), row-parallel c_proj.
// CHECK: %[[Y:.*]] = dsc.replicate %{{.*}} : tensor<16x32xf32>
// CHECK: dsc.linear %[[Y]], %{{.*}}, %{{.*}} : tensor<16x32xf32>, tensor<64x32xf32>, tensor<64xf32>
// CHECK: dsc.gelu tanh %{{.*}} : tensor<1x16x64xf32>
// CHECK: %[[Q:.*]] = dsc.linear %{{.*}}, %{{.*}} : tensor<16x64xf32>, tensor<32x64xf32>
// CHECK: dsc.all_reduce %[[Q]] over tensor : tensor<16x32xf32>
// CHECK-NOT: dsc.all_reduce
// CHECK-NOT: dsc.replicate
// CHECK: dsc.linear %{{.*}}, %{{.*}} : tensor<16x32xf32>, tensor<256x32xf32>
// CHECK: return

// Autodiff derives the conjugate: f's gradient is the all-reduce of the
// block input's cotangent, g's the identity; per block one sum of b*s*h
// forward and one backward. The loss and every gradient are summed over the
// data group (ranks 0, 2 and 1, 3 at W = 4), never over the world.
// GRAD-LABEL: func.func @forward
// GRAD-COUNT-2: dsc.all_reduce %{{.*}} over tensor : tensor<16x32xf32>
// GRAD: dsc.all_reduce %{{.*}} over data : tensor<f32>
// GRAD: dsc.all_reduce %{{.*}} over data : tensor<f32>
// GRAD-COUNT-2: dsc.all_reduce %{{.*}} over tensor : tensor<16x32xf32>
// GRAD: dsc.all_reduce %{{.*}} over data : tensor<256x32xf32>
// GRAD: dsc.all_reduce %{{.*}} over data : tensor<48x32xf32>
// GRAD: dsc.all_reduce %{{.*}} over data : tensor<32x16xf32>
// GRAD-NOT: dsc.all_reduce %{{[0-9]+}} :
// GRAD-NOT: over tensor
// GRAD: return

// A data group of one rank (W = T): nothing is summed over it.
// ONEDATA-COUNT-4: over tensor
// ONEDATA-NOT: dsc.all_reduce

// Feed-forward blocks as --dsc-moe finds them, SwiGLU's two column-parallel
// maps included.
// MLP: @h.0.mlp.c_fc.weight {partition_group = 3 : i32, partition_of = array<i64: 16, 4>} : tensor<8x4xf32>
// MLP: @h.0.mlp.c_proj.weight {partition_blocks = 4 : i64, partition_group = 3 : i32, partition_of = array<i64: 4, 16>} : tensor<4x8xf32>
// MLP: @h.2.mlp.gate_proj.weight {partition_group = 3 : i32, partition_of = array<i64: 16, 4>} : tensor<8x4xf32>
// MLP: @h.2.mlp.up_proj.weight {partition_group = 3 : i32, partition_of = array<i64: 16, 4>} : tensor<8x4xf32>
// MLP: @h.2.mlp.down_proj.weight {partition_blocks = 4 : i64, partition_group = 3 : i32, partition_of = array<i64: 4, 16>} : tensor<4x8xf32>
// MLP-COUNT-2: dsc.all_reduce %{{.*}} over tensor : tensor<8x4xf32>
// MLP: %[[X2:.*]] = dsc.replicate %{{.*}} : tensor<8x4xf32>
// MLP: dsc.linear %[[X2]], %{{.*}} : tensor<8x4xf32>, tensor<8x4xf32>
// MLP: dsc.linear %[[X2]], %{{.*}} : tensor<8x4xf32>, tensor<8x4xf32>
// MLP: dsc.mul %{{.*}}, %{{.*}} : tensor<8x8xf32>, tensor<8x8xf32>
// MLP: %[[D:.*]] = dsc.linear %{{.*}}, %{{.*}} : tensor<8x8xf32>, tensor<4x8xf32>
// MLP: dsc.all_reduce %[[D]] over tensor : tensor<8x4xf32>

// The optimizer's global norm and overflow check sum the slices' squares
// over the tensor group; the replicated tensors' are the same on its ranks.
// CLIP: %[[SLICES:.*]] = dsc.sum_squares(%{{.*}} : tensor<8x4xf32>, tensor<8xf32>, tensor<4x8xf32>, {{.*}}) scale(%{{.*}} : tensor<f32>) : tensor<f32>
// CLIP: dsc.all_reduce %[[SLICES]] over tensor : tensor<f32>

// Without a tensor-parallel size the pass leaves the graph as it is.
// OFF-NOT: partition
// OFF-NOT: dsc.replicate
