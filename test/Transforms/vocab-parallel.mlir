// The vocabulary-parallel split of --dsc-tensor-parallel="vocab-parallel=1":
// Megatron's VocabParallelEmbedding and vocab_parallel_cross_entropy, found
// from the cross-entropy. Inputs/gpt2-one-block.mlir: the tiny GPT-2 (tied
// table wte [256, 32], head = wte) at T = 2; below, a model with an untied
// token table and a head with a bias, at T = 4.
// RUN: dsc-opt %S/Inputs/gpt2-one-block.mlir --dsc-data-parallel="world-size=2 tensor-parallel=2" --dsc-tensor-parallel="vocab-parallel=1" | FileCheck %s
// RUN: dsc-opt %S/Inputs/gpt2-one-block.mlir --dsc-data-parallel="world-size=2 tensor-parallel=2" --dsc-tensor-parallel="vocab-parallel=1" --dsc-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: dsc-opt %s --dsc-data-parallel="world-size=4 tensor-parallel=4" --dsc-tensor-parallel="vocab-parallel=1" | FileCheck %s --check-prefix=UNTIED
// RUN: dsc-opt %s --dsc-data-parallel="world-size=4 tensor-parallel=4" --dsc-tensor-parallel | FileCheck %s --check-prefix=OFF

// The tied table: this rank's 128 rows of 256; the position table stays whole.
// CHECK: @transformer.wte.weight {partition_group = 3 : i32, partition_of = array<i64: 256, 32>} : tensor<128x32xf32>
// CHECK: @transformer.wpe.weight : tensor<16x32xf32>
// CHECK-LABEL: func.func @forward
// The rank's first row: its element of [0, 128].
// CHECK: %[[STARTS:[0-9]+]] = dsc.constant dense<{{\[}}0, 128]> : tensor<2xi64>
// CHECK: %[[ROW0:.*]] = dsc.local_shard %[[STARTS]] over tensor : tensor<2xi64> -> tensor<1xi64>
// The lookup: ids outside the rank's rows are clamped into them, their rows
// masked out, and the ranks' lookups summed.
// CHECK: %[[WTE:.*]] = dsc.load @transformer.wte.weight : tensor<128x32xf32>
// CHECK: %[[LOCAL:.*]] = dsc.sub %arg0, %[[ROW0]] : tensor<1x16xi64>, tensor<1xi64>
// CHECK: %[[CLAMPED:.*]] = dsc.maximum %{{.*}}, %{{.*}} : tensor<1x16xi64>, tensor<i64>
// CHECK: %[[MINE:.*]] = dsc.compare eq, %[[CLAMPED]], %[[LOCAL]]
// CHECK: %[[ROWS:.*]] = dsc.embedding %[[WTE]], %[[CLAMPED]] : tensor<128x32xf32>, tensor<1x16xi64>
// CHECK: %[[MASK:.*]] = dsc.reshape %[[MINE]] : tensor<1x16xi1> -> tensor<1x16x1xi1>
// CHECK: %[[MASKED:.*]] = dsc.select %[[MASK]], %[[ROWS]], %{{.*}} : tensor<1x16x1xi1>, tensor<1x16x32xf32>, tensor<f32>
// CHECK: %[[TOKENS:.*]] = dsc.all_reduce %[[MASKED]] over tensor : tensor<1x16x32xf32>
// CHECK: dsc.add %[[TOKENS]], %{{.*}} : tensor<1x16x32xf32>, tensor<16x32xf32>
// The head: f, then the rank's 128 logits.
// CHECK: dsc.replicate
// CHECK: dsc.replicate
// CHECK: %[[X:.*]] = dsc.replicate %{{.*}} : tensor<16x32xf32>
// CHECK-NEXT: %[[Z:.*]] = dsc.linear %[[X]], %[[WTE]] : tensor<16x32xf32>, tensor<128x32xf32>
// CHECK: %[[Z2:.*]] = dsc.reshape %{{.*}} : tensor<1x16x128xf32> -> tensor<16x128xf32>
// The loss, from three all-reduces of one value per token.
// CHECK: %[[LMAX:.*]] = dsc.reduce_max %[[Z2]], dims = [1] keep_dims : tensor<16x128xf32>
// CHECK: %[[MAX:.*]] = dsc.all_reduce %[[LMAX]] over tensor maximum : tensor<16x1xf32>
// CHECK: %[[S:.*]] = dsc.sub %[[Z2]], %[[MAX]] : tensor<16x128xf32>, tensor<16x1xf32>
// CHECK: %[[E:.*]] = dsc.exp %[[S]]
// CHECK: %[[LSUM:.*]] = dsc.reduce_sum %[[E]], dims = [1] keep_dims : tensor<16x128xf32>
// CHECK: %[[SUM:.*]] = dsc.all_reduce %[[LSUM]] over tensor : tensor<16x1xf32>
// CHECK: %[[PICK:.*]] = dsc.gather %[[S]], %{{.*}}, dim = 1 : tensor<16x128xf32>, tensor<16x1xi64>
// CHECK: %[[LT:.*]] = dsc.select %{{.*}}, %[[PICK]], %{{.*}} : tensor<16x1xi1>, tensor<16x1xf32>, tensor<f32>
// CHECK: %[[T:.*]] = dsc.all_reduce %[[LT]] over tensor : tensor<16x1xf32>
// CHECK: %[[LOG:.*]] = dsc.log %[[SUM]]
// CHECK: dsc.sub %[[LOG]], %[[T]] : tensor<16x1xf32>, tensor<16x1xf32>
// Ignored targets (-1) count nothing; the mean divides by the others.
// CHECK: dsc.compare ne, %{{.*}}, %{{.*}} : tensor<16xi64>, tensor<i64>
// CHECK: dsc.reduce_sum %{{.*}}, dims = [0] : tensor<16xf32>
// CHECK: dsc.div
// CHECK-NOT: dsc.cross_entropy
// CHECK-NOT: dsc.all_gather

// The backward: the maximum passes nothing back; the target's logit its
// cotangent to the rank's own column (the gather's scatter), and the lookup
// scatters into the rank's rows of the tied table; the head input's
// cotangent is summed over the group (f), as each block's input's. Forward:
// the lookup's sum, the block's 2, the maximum, the sum and the target's
// logit; backward: the 3 f's, nothing else over tensor.
// GRAD-COUNT-3: dsc.all_reduce {{.*}} over tensor :
// GRAD: dsc.all_reduce {{.*}} over tensor maximum
// GRAD-COUNT-2: dsc.all_reduce {{.*}} over tensor :
// GRAD: dsc.scatter_add {{.*}}, dim = 1 : tensor<16x128xf32>, tensor<16x1xi64>, tensor<16x1xf32>
// GRAD-COUNT-3: dsc.all_reduce {{.*}} over tensor :
// GRAD-NOT: dsc.all_reduce
// GRAD: dsc.scatter_add {{.*}}, dim = 0 : tensor<128x32xf32>, tensor<16x32xi64>, tensor<16x32xf32>
// GRAD-NOT: dsc.all_reduce
// GRAD: return

// An untied token table of 64 rows looked up from the input ids is split
// with the head (and its bias): 16 rows per rank.
// UNTIED: @tokens {partition_group = 3 : i32, partition_of = array<i64: 64, 8>} : tensor<16x8xf32>
// UNTIED: @head {partition_group = 3 : i32, partition_of = array<i64: 64, 8>} : tensor<16x8xf32>
// UNTIED: @head_bias {partition_group = 3 : i32, partition_of = array<i64: 64>} : tensor<16xf32>
// UNTIED: dsc.constant dense<[0, 16, 32, 48]> : tensor<4xi64>
// UNTIED: dsc.embedding %{{.*}}, %{{.*}} : tensor<16x8xf32>, tensor<2x4xi64>
// UNTIED: dsc.linear %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x8xf32>, tensor<16x8xf32>, tensor<16xf32>
// UNTIED: dsc.all_reduce %{{.*}} over tensor maximum : tensor<8x1xf32>
// The sum reduction keeps no division.
// UNTIED: dsc.reduce_sum %{{.*}}, dims = [0] : tensor<8xf32>
// UNTIED-NOT: dsc.div
// UNTIED: return

// Without the option the tables and the loss stay whole.
// OFF: @tokens : tensor<64x8xf32>
// OFF: dsc.cross_entropy

module {
  dsc.state parameter @tokens : tensor<64x8xf32>
  dsc.state parameter @head : tensor<64x8xf32>
  dsc.state parameter @head_bias : tensor<64xf32>
  dsc.state parameter @w1 : tensor<16x8xf32>
  dsc.state parameter @w2 : tensor<8x16xf32>
  func.func @forward(%ids: tensor<2x4xi64> {dsc.input = "tokens"}, %t: tensor<2x4xi64> {dsc.input = "targets"}) -> (tensor<f32> {dsc.output = "loss"}) {
    %table = dsc.load @tokens : tensor<64x8xf32>
    %h = dsc.embedding %table, %ids : tensor<64x8xf32>, tensor<2x4xi64>
    %x = dsc.reshape %h : tensor<2x4x8xf32> -> tensor<8x8xf32>
    %a = dsc.load @w1 : tensor<16x8xf32>
    %b = dsc.load @w2 : tensor<8x16xf32>
    %u = dsc.linear %x, %a : tensor<8x8xf32>, tensor<16x8xf32>
    %g = dsc.relu %u : tensor<8x16xf32>
    %v = dsc.linear %g, %b : tensor<8x16xf32>, tensor<8x16xf32>
    %w = dsc.load @head : tensor<64x8xf32>
    %c = dsc.load @head_bias : tensor<64xf32>
    %z = dsc.linear %v, %w, %c : tensor<8x8xf32>, tensor<64x8xf32>, tensor<64xf32>
    %tt = dsc.reshape %t : tensor<2x4xi64> -> tensor<8xi64>
    %loss = dsc.cross_entropy %z, %tt reduction = sum : tensor<8x64xf32>, tensor<8xi64>
    return %loss : tensor<f32>
  }
}
