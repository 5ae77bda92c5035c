// The vocabulary-parallel embedding under sequence parallelism
// (--dsc-tensor-parallel="vocab-parallel=1 sequence-parallel=1"): the
// ranks' partial lookups are summed by a reduce-scatter along the sequence,
// so the sequence-split region begins at the lookup. On
// Inputs/gpt2-one-block-dropout.mlir (micro-batch 2, sequence 16, width 32)
// at T = 2 each rank receives its 8 of the 16 tokens of each sample; the
// position embedding is added and the dropout drawn on those 8. Below, a
// model whose embedding is also read whole keeps the all-reduce.
// RUN: dsc-opt %S/Inputs/gpt2-one-block-dropout.mlir --dsc-data-parallel="world-size=2 tensor-parallel=2" --dsc-tensor-parallel="vocab-parallel=1 sequence-parallel=1" | FileCheck %s
// RUN: dsc-opt %S/Inputs/gpt2-one-block-dropout.mlir --dsc-data-parallel="world-size=2 tensor-parallel=2" --dsc-tensor-parallel="vocab-parallel=1 sequence-parallel=1" --dsc-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: dsc-opt %s --dsc-data-parallel="world-size=2 tensor-parallel=2" --dsc-tensor-parallel="vocab-parallel=1 sequence-parallel=1" | FileCheck %s --check-prefix=WHOLE

// The masked lookup of the rank's 128 rows, [2, 16, 32] as [T, 2, 8, 32],
// reduce-scattered: no all-reduce, and nothing of the whole sequence after.
// CHECK-LABEL: func.func @forward
// CHECK: %[[INDICES:.*]] = dsc.constant dense<[0, 1]> : tensor<2xi64>
// CHECK-NEXT: %[[RANK:.*]] = dsc.local_shard %[[INDICES]] over tensor : tensor<2xi64> -> tensor<1xi64>
// CHECK: %[[ROWS:.*]] = dsc.embedding %{{.*}}, %{{.*}} : tensor<128x32xf32>, tensor<2x16xi64>
// CHECK: %[[MASKED:.*]] = dsc.select %{{.*}}, %[[ROWS]], %{{.*}} : tensor<2x16x1xi1>, tensor<2x16x32xf32>, tensor<f32>
// CHECK-NEXT: %[[P:.*]] = dsc.reshape %[[MASKED]] : tensor<2x16x32xf32> -> tensor<2x2x8x32xf32>
// CHECK-NEXT: %[[Q:.*]] = dsc.permute %[[P]], [1, 0, 2, 3] : tensor<2x2x8x32xf32>
// CHECK-NEXT: %[[F:.*]] = dsc.reshape %[[Q]] : tensor<2x2x8x32xf32> -> tensor<1024xf32>
// CHECK-NEXT: %[[RS:.*]] = dsc.reduce_scatter %[[F]] over tensor : tensor<1024xf32> -> tensor<512xf32>
// CHECK-NEXT: %[[TOK:.*]] = dsc.reshape %[[RS]] : tensor<512xf32> -> tensor<2x8x32xf32>
// The positions [16, 32], the same on every rank: the rank's 8 rows.
// CHECK: %[[POS:.*]] = dsc.embedding %{{.*}}, %{{.*}} : tensor<16x32xf32>, tensor<16xi64>
// CHECK-NEXT: %[[PF:.*]] = dsc.reshape %[[POS]] : tensor<16x32xf32> -> tensor<512xf32>
// CHECK-NEXT: %[[PM:.*]] = dsc.local_shard %[[PF]] over tensor : tensor<512xf32> -> tensor<256xf32>
// CHECK-NEXT: %[[MYPOS:.*]] = dsc.reshape %[[PM]] : tensor<256xf32> -> tensor<8x32xf32>
// CHECK-NEXT: %[[X:.*]] = dsc.add %[[TOK]], %[[MYPOS]] : tensor<2x8x32xf32>, tensor<8x32xf32>
// CHECK: %[[D:.*]] = dsc.dropout %[[X]], %{{.*}}, p = 1.000000e-01, seed = 0, samples = 2 part %[[RANK]] of 2 : tensor<2x8x32xf32>
// CHECK: dsc.layer_norm %[[D]] {{.*}} : tensor<2x8x32xf32>
// CHECK: dsc.all_gather %{{.*}} over tensor : tensor<512xf32> -> tensor<1024xf32>
// CHECK: dsc.linear %{{.*}}, %{{.*}}, %{{.*}} : tensor<32x32xf32>, tensor<48x32xf32>, tensor<48xf32>
// The residual reads the rank's tokens too.
// CHECK: dsc.reduce_scatter %{{.*}} over tensor : tensor<1024xf32> -> tensor<512xf32>
// CHECK: dsc.add %[[D]], %{{.*}} : tensor<2x8x32xf32>, tensor<2x8x32xf32>
// Over the tensor group the forward's all-reduces are only the loss's
// three of one value per token.
// CHECK-NOT: dsc.all_reduce %{{.*}} over tensor : tensor<{{.*}}x32xf32>
// CHECK: dsc.all_reduce %{{.*}} over tensor maximum : tensor<32x1xf32>
// CHECK: return

// Autodiff: the positions' cotangent, each rank's 8 rows, is gathered
// before it scatters into the position table; the lookup's, the gradient of
// the reduce-scatter, is the all-gather of the tokens' cotangents before it
// scatters into the rank's rows of the token table.
// GRAD-LABEL: func.func @forward
// GRAD: dsc.dropout %{{.*}} part %{{.*}} of 2 : tensor<2x8x32xf32>
// GRAD: %[[DPOS:.*]] = dsc.reduce_sum %{{.*}}, dims = [0] : tensor<2x8x32xf32>
// GRAD: %[[DPOSF:.*]] = dsc.reshape %[[DPOS]] : tensor<8x32xf32> -> tensor<256xf32>
// GRAD: dsc.all_gather %[[DPOSF]] over tensor : tensor<256xf32> -> tensor<512xf32>
// GRAD: dsc.scatter_add %{{.*}} : tensor<16x32xf32>, tensor<16x32xi64>, tensor<16x32xf32>
// GRAD: dsc.all_gather %{{.*}} over tensor : tensor<512xf32> -> tensor<1024xf32>
// GRAD-NOT: over tensor
// GRAD: dsc.scatter_add %{{.*}} : tensor<128x32xf32>, tensor<32x32xi64>, tensor<32x32xf32>
// GRAD: return

// A reader of the whole sequence (the mean over it of the token
// embeddings): the sum stays an all-reduce and the region begins after the
// positions are added, with the rank's local shard of the whole.
// WHOLE-LABEL: func.func @forward
// WHOLE: %[[SUM:.*]] = dsc.all_reduce %{{.*}} over tensor : tensor<2x4x4xf32>
// WHOLE: %[[X:.*]] = dsc.add %[[SUM]], %{{.*}} : tensor<2x4x4xf32>, tensor<4x4xf32>
// WHOLE: %[[XP:.*]] = dsc.reshape %[[X]] : tensor<2x4x4xf32> -> tensor<2x2x2x4xf32>
// WHOLE: dsc.local_shard %{{.*}} over tensor : tensor<32xf32> -> tensor<16xf32>
// WHOLE: dsc.reduce_mean %[[SUM]], dims = [1] : tensor<2x4x4xf32>
// WHOLE-NOT: dsc.reduce_scatter %{{.*}} : tensor<32xf32> -> tensor<16xf32>
// WHOLE: return
dsc.state parameter @wte : tensor<8x4xf32>
dsc.state parameter @wpe : tensor<4x4xf32>
dsc.state parameter @"h.0.mlp.c_fc.weight" : tensor<16x4xf32>
dsc.state parameter @"h.0.mlp.c_proj.weight" : tensor<4x16xf32>
func.func @forward(%tokens: tensor<2x4xi64> {dsc.input = "tokens"},
                   %targets: tensor<2x4xi64> {dsc.input = "targets"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %wte = dsc.load @wte : tensor<8x4xf32>
  %emb = dsc.embedding %wte, %tokens : tensor<8x4xf32>, tensor<2x4xi64>
  %wpe = dsc.load @wpe : tensor<4x4xf32>
  %ids = dsc.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
  %pos = dsc.embedding %wpe, %ids : tensor<4x4xf32>, tensor<4xi64>
  %x = dsc.add %emb, %pos : tensor<2x4x4xf32>, tensor<4x4xf32>
  %x0 = dsc.reshape %x : tensor<2x4x4xf32> -> tensor<8x4xf32>
  %w0 = dsc.load @"h.0.mlp.c_fc.weight" : tensor<16x4xf32>
  %h0 = dsc.linear %x0, %w0 : tensor<8x4xf32>, tensor<16x4xf32>
  %g0 = dsc.gelu tanh %h0 : tensor<8x16xf32>
  %p0 = dsc.load @"h.0.mlp.c_proj.weight" : tensor<4x16xf32>
  %y0 = dsc.linear %g0, %p0 : tensor<8x16xf32>, tensor<4x16xf32>
  %x1 = dsc.add %x0, %y0 : tensor<8x4xf32>, tensor<8x4xf32>
  %logits = dsc.linear %x1, %wte : tensor<8x4xf32>, tensor<8x4xf32>
  %t = dsc.reshape %targets : tensor<2x4xi64> -> tensor<8xi64>
  %ce = dsc.cross_entropy %logits, %t : tensor<8x8xf32>, tensor<8xi64>
  %avg = dsc.reduce_mean %emb, dims = [1] : tensor<2x4x4xf32>
  %reg = dsc.reduce_mean %avg, dims = [0, 1] : tensor<2x4xf32>
  %loss = dsc.add %ce, %reg : tensor<f32>, tensor<f32>
  return %loss : tensor<f32>
}
