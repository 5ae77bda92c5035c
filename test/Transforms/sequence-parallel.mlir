// Megatron's sequence parallelism by --dsc-tensor-parallel="sequence-parallel=1"
// on Inputs/gpt2-one-block.mlir (micro-batch 1, sequence 16, width 32) at
// T = 2: between the split blocks each rank holds 8 of the 16 tokens.
// RUN: dsc-opt %S/Inputs/gpt2-one-block.mlir --dsc-data-parallel="world-size=2 tensor-parallel=2" --dsc-tensor-parallel="sequence-parallel=1" | FileCheck %s
// RUN: dsc-opt %S/Inputs/gpt2-one-block.mlir --dsc-data-parallel="world-size=2 tensor-parallel=2" --dsc-tensor-parallel="sequence-parallel=1" --dsc-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: dsc-opt %S/Inputs/two-mlp-blocks.mlir --dsc-data-parallel="world-size=2 tensor-parallel=2" --dsc-tensor-parallel="sequence-parallel=1" | FileCheck %s --check-prefix=MLP
// RUN: dsc-opt %S/Inputs/gpt2-one-block.mlir --world-size=2 --tensor-parallel=2 --sequence-parallel --optimizer=sgd | FileCheck %s --check-prefix=FLAG
// RUN: dsc-opt %S/Inputs/gpt2-one-block.mlir --world-size=2 --sequence-parallel --optimizer=sgd 2>&1 | FileCheck %s --check-prefix=NOTP

// The region begins at the embeddings' sum: [1, 16, 32] as [T, 1, 8, 32],
// this rank's block; the first layer norm runs on its 8 tokens, its weight
// and bias entering through a replicate (their gradients are partial).
// CHECK-LABEL: func.func @forward
// CHECK: %[[EMB:.*]] = dsc.add %{{.*}}, %{{.*}} : tensor<1x16x32xf32>, tensor<16x32xf32>
// CHECK: %[[P:.*]] = dsc.reshape %[[EMB]] : tensor<1x16x32xf32> -> tensor<1x2x8x32xf32>
// CHECK: %[[F:.*]] = dsc.reshape %[[P]] : tensor<1x2x8x32xf32> -> tensor<512xf32>
// CHECK: %[[MINE:.*]] = dsc.local_shard %[[F]] over tensor : tensor<512xf32> -> tensor<256xf32>
// CHECK: %[[X:.*]] = dsc.reshape %[[MINE]] : tensor<256xf32> -> tensor<1x8x32xf32>
// CHECK: %[[W1:.*]] = dsc.replicate %{{.*}} : tensor<32xf32>
// CHECK: %[[B1:.*]] = dsc.replicate %{{.*}} : tensor<32xf32>
// CHECK: dsc.layer_norm %[[X]] weight(%[[W1]] : tensor<32xf32>) bias(%[[B1]] : tensor<32xf32>) : tensor<1x8x32xf32>
// The attention block's f is the all-gather of the sequence (not alike:
// each rank's heads use it for their own partial work).
// CHECK: %[[G:.*]] = dsc.all_gather %{{.*}} over tensor : tensor<256xf32> -> tensor<512xf32>
// CHECK-NOT: dsc.replicate
// CHECK: dsc.linear %{{.*}}, %{{.*}}, %{{.*}} : tensor<16x32xf32>, tensor<48x32xf32>, tensor<48xf32>
// Its g is the reduce-scatter of the partial products along the sequence;
// the bias is added to the rank's 8 tokens, and so is the residual.
// CHECK: %[[BIAS:.*]] = dsc.replicate %{{.*}} : tensor<32xf32>
// CHECK: dsc.linear %{{.*}}, %{{.*}} : tensor<16x16xf32>, tensor<32x16xf32>
// CHECK: dsc.reduce_scatter %{{.*}} over tensor : tensor<512xf32> -> tensor<256xf32>
// CHECK: dsc.add %{{.*}}, %[[BIAS]] : tensor<8x32xf32>, tensor<32xf32>
// CHECK: %[[H:.*]] = dsc.add %[[X]], %{{.*}} : tensor<1x8x32xf32>, tensor<1x8x32xf32>
// CHECK: dsc.layer_norm %[[H]] {{.*}} : tensor<1x8x32xf32>
// CHECK: dsc.all_gather %{{.*}} over tensor : tensor<256xf32> -> tensor<512xf32>
// CHECK: dsc.linear %{{.*}}, %{{.*}}, %{{.*}} : tensor<16x32xf32>, tensor<64x32xf32>, tensor<64xf32>
// CHECK: dsc.reduce_scatter %{{.*}} over tensor : tensor<512xf32> -> tensor<256xf32>
// The final layer norm too; the head reads the whole sequence, gathered
// alike (every rank computes the same logits and loss from it).
// CHECK: dsc.layer_norm %{{.*}} : tensor<1x8x32xf32>
// CHECK: %[[ALL:.*]] = dsc.all_gather %{{.*}} over tensor alike : tensor<256xf32> -> tensor<512xf32>
// CHECK: %[[R:.*]] = dsc.reshape %[[ALL]] : tensor<512xf32> -> tensor<2x1x8x32xf32>
// CHECK: %[[WHOLE:.*]] = dsc.reshape %[[R]] : tensor<2x1x8x32xf32> -> tensor<16x32xf32>
// CHECK: dsc.linear %[[WHOLE]], %{{.*}} : tensor<16x32xf32>, tensor<256x32xf32>
// CHECK-NOT: dsc.all_reduce
// CHECK: return

// Autodiff derives the conjugates: the alike gather's gradient is the
// rank's shard, the reduce-scatter's an all-gather, the f gather's a
// reduce-scatter, the region start's an all-gather; the norms' weights and
// biases and the row-parallel biases (7 vectors of 32) have their
// gradients summed over the tensor group.
// GRAD-LABEL: func.func @forward
// GRAD: dsc.cross_entropy
// GRAD: dsc.local_shard %{{.*}} over tensor : tensor<512xf32> -> tensor<256xf32>
// GRAD-COUNT-2: dsc.all_reduce %{{.*}} over tensor : tensor<32xf32>
// GRAD: dsc.all_gather %{{.*}} over tensor : tensor<256xf32> -> tensor<512xf32>
// GRAD: dsc.all_reduce %{{.*}} over tensor : tensor<32xf32>
// GRAD: dsc.reduce_scatter %{{.*}} over tensor : tensor<512xf32> -> tensor<256xf32>
// GRAD-COUNT-2: dsc.all_reduce %{{.*}} over tensor : tensor<32xf32>
// GRAD: dsc.all_gather %{{.*}} over tensor : tensor<256xf32> -> tensor<512xf32>
// GRAD: dsc.all_reduce %{{.*}} over tensor : tensor<32xf32>
// GRAD: dsc.reduce_scatter %{{.*}} over tensor : tensor<512xf32> -> tensor<256xf32>
// GRAD-COUNT-2: dsc.all_reduce %{{.*}} over tensor : tensor<32xf32>
// GRAD: dsc.all_gather %{{.*}} over tensor : tensor<256xf32> -> tensor<512xf32>
// GRAD-NOT: over tensor
// GRAD: return

// Two samples of 4 tokens as [8, 4] rows (Inputs/two-mlp-blocks.mlir): rank
// r's tokens are rows [r * 2, r * 2 + 2) of each sample, brought outermost
// before the collectives and back after them. The region begins at the
// graph's input.
// MLP-LABEL: func.func @forward
// MLP: %[[S:.*]] = dsc.reshape %arg0 : tensor<2x4x4xf32> -> tensor<2x2x2x4xf32>
// MLP: %[[T:.*]] = dsc.permute %[[S]], [1, 0, 2, 3] : tensor<2x2x2x4xf32>
// MLP: %[[U:.*]] = dsc.reshape %[[T]] : tensor<2x2x2x4xf32> -> tensor<32xf32>
// MLP: dsc.local_shard %[[U]] over tensor : tensor<32xf32> -> tensor<16xf32>
// MLP: %[[A:.*]] = dsc.all_gather %{{.*}} over tensor : tensor<16xf32> -> tensor<32xf32>
// MLP: %[[B:.*]] = dsc.reshape %[[A]] : tensor<32xf32> -> tensor<2x2x2x4xf32>
// MLP: %[[C:.*]] = dsc.permute %[[B]], [1, 0, 2, 3] : tensor<2x2x2x4xf32>
// MLP: %[[D:.*]] = dsc.reshape %[[C]] : tensor<2x2x2x4xf32> -> tensor<8x4xf32>
// MLP: dsc.linear %[[D]], %{{.*}}, %{{.*}} : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8xf32>
// MLP: %[[E:.*]] = dsc.permute %{{.*}}, [1, 0, 2, 3] : tensor<2x2x2x4xf32>
// MLP: %[[F:.*]] = dsc.reshape %[[E]] : tensor<2x2x2x4xf32> -> tensor<32xf32>
// MLP: dsc.reduce_scatter %[[F]] over tensor : tensor<32xf32> -> tensor<16xf32>
// MLP: dsc.add %{{.*}}, %{{.*}} : tensor<4x4xf32>, tensor<4x4xf32>

// The users' spelling reaches the pass.
// FLAG: dsc.reduce_scatter %{{.*}} over tensor
// FLAG: dsc.layer_norm %{{.*}} : tensor<1x8x32xf32>

// Without a tensor group it does nothing, and says so (as Megatron-LM).
// NOTP: gpt2-one-block.mlir:{{[0-9]+}}:1: warning: --dsc-tensor-parallel: sequence-parallel does nothing without a tensor group of more than one rank (tensor-parallel > 1)
// NOTP-NOT: over tensor
