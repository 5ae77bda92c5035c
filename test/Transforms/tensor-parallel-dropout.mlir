// Dropout under --dsc-tensor-parallel at T = 2, on
// Inputs/gpt2-one-block-dropout.mlir (2 samples of 16 tokens, width 32, 2
// heads; dropouts after the embeddings, on the attention probabilities,
// after the attention and after the MLP). The attention block is split
// over the heads with its dropout on the rank's head, the r-th of 2
// contiguous parts of each sample: `part %r of 2`, r the rank's index in
// the tensor group. Under sequence parallelism the dropouts between the
// blocks run on the rank's 8 tokens of each sample, again as its part of
// each sample, with no gather before them. The gradients are the same
// dropouts, parts and all.
// RUN: dsc-opt %S/Inputs/gpt2-one-block-dropout.mlir --dsc-data-parallel="world-size=2 tensor-parallel=2" --dsc-tensor-parallel | FileCheck %s
// RUN: dsc-opt %S/Inputs/gpt2-one-block-dropout.mlir --dsc-data-parallel="world-size=2 tensor-parallel=2" --dsc-tensor-parallel="sequence-parallel=1" | FileCheck %s --check-prefix=SP
// RUN: dsc-opt %S/Inputs/gpt2-one-block-dropout.mlir --dsc-data-parallel="world-size=2 tensor-parallel=2" --dsc-tensor-parallel="sequence-parallel=1" --dsc-autodiff | FileCheck %s --check-prefix=GRAD
// A dropout of the probabilities that counts the whole batch as one sample
// draws across the ranks' heads: its block is left whole, without error.
// RUN: sed 's/samples = 2 : i64, seed = 1 : i64/samples = 1 : i64, seed = 1 : i64/' %S/Inputs/gpt2-one-block-dropout.mlir | dsc-opt --dsc-data-parallel="world-size=2 tensor-parallel=2" --dsc-tensor-parallel | FileCheck %s --check-prefix=WHOLE

// CHECK: @transformer.h.0.attn.c_attn.weight {partition_blocks = 3 : i64, partition_group = 3 : i32, partition_of = array<i64: 96, 32>} : tensor<48x32xf32>
// CHECK-LABEL: func.func @forward
// CHECK: %[[ALL:.*]] = dsc.constant dense<[0, 1]> : tensor<2xi64>
// CHECK: %[[R:.*]] = dsc.local_shard %[[ALL]] over tensor : tensor<2xi64> -> tensor<1xi64>
// CHECK: %[[KEY:.*]] = dsc.step_key
// CHECK: dsc.dropout %{{.*}}, %[[KEY]], p = 1.000000e-01, seed = 0, samples = 2 : tensor<2x16x32xf32>
// CHECK: %[[P:.*]] = dsc.softmax %{{.*}}, dim = 3 : tensor<2x1x16x16xf32>
// CHECK: %[[D:.*]] = dsc.dropout %[[P]], %[[KEY]], p = 1.000000e-01, seed = 1, samples = 2 part %[[R]] of 2 : tensor<2x1x16x16xf32>
// CHECK: dsc.reshape %[[D]] : tensor<2x1x16x16xf32> -> tensor<2x16x16xf32>
// CHECK: dsc.all_reduce %{{.*}} over tensor : tensor<32x32xf32>
// CHECK: dsc.dropout %{{.*}}, %[[KEY]], p = 1.000000e-01, seed = 2, samples = 2 : tensor<2x16x32xf32>
// CHECK: dsc.all_reduce %{{.*}} over tensor : tensor<32x32xf32>
// CHECK: dsc.dropout %{{.*}}, %[[KEY]], p = 1.000000e-01, seed = 3, samples = 2 : tensor<2x16x32xf32>

// The region starts at the embeddings' sum: the rank's shard of it is
// dropped out as its part of each sample, before the first norm.
// SP-LABEL: func.func @forward
// SP: %[[R:.*]] = dsc.local_shard %{{.*}} over tensor : tensor<2xi64> -> tensor<1xi64>
// SP: %[[SUM:.*]] = dsc.add
// SP: dsc.local_shard %{{.*}} over tensor : tensor<1024xf32> -> tensor<512xf32>
// SP: %[[X:.*]] = dsc.reshape %{{.*}} : tensor<512xf32> -> tensor<2x8x32xf32>
// SP-NOT: dsc.all_gather
// SP: %[[X1:.*]] = dsc.dropout %[[X]], %{{.*}}, p = 1.000000e-01, seed = 0, samples = 2 part %[[R]] of 2 : tensor<2x8x32xf32>
// SP: dsc.layer_norm %[[X1]] {{.*}} : tensor<2x8x32xf32>
// SP: dsc.all_gather %{{.*}} over tensor : tensor<512xf32> -> tensor<1024xf32>
// SP: dsc.dropout %{{.*}}, p = 1.000000e-01, seed = 1, samples = 2 part %[[R]] of 2 : tensor<2x1x16x16xf32>
// SP: dsc.reduce_scatter %{{.*}} over tensor : tensor<1024xf32> -> tensor<512xf32>
// SP-NOT: dsc.all_gather
// SP: dsc.dropout %{{.*}}, p = 1.000000e-01, seed = 2, samples = 2 part %[[R]] of 2 : tensor<2x8x32xf32>
// SP: dsc.all_gather %{{.*}} over tensor : tensor<512xf32> -> tensor<1024xf32>
// SP: dsc.reduce_scatter %{{.*}} over tensor : tensor<1024xf32> -> tensor<512xf32>
// SP-NOT: dsc.all_gather
// SP: dsc.dropout %{{.*}}, p = 1.000000e-01, seed = 3, samples = 2 part %[[R]] of 2 : tensor<2x8x32xf32>
// SP: dsc.all_gather %{{.*}} over tensor alike : tensor<512xf32> -> tensor<1024xf32>
// SP-NOT: dsc.dropout

// GRAD-LABEL: func.func @forward
// GRAD: %[[R:.*]] = dsc.local_shard %{{.*}} over tensor : tensor<2xi64> -> tensor<1xi64>
// GRAD-COUNT-4: dsc.dropout {{.*}} part %[[R]] of 2
// GRAD: dsc.dropout {{.*}} seed = 3, samples = 2 part %[[R]] of 2 : tensor<2x8x32xf32>
// GRAD: dsc.dropout {{.*}} seed = 2, samples = 2 part %[[R]] of 2 : tensor<2x8x32xf32>
// GRAD: dsc.dropout {{.*}} seed = 1, samples = 2 part %[[R]] of 2 : tensor<2x1x16x16xf32>
// GRAD: dsc.dropout {{.*}} seed = 0, samples = 2 part %[[R]] of 2 : tensor<2x8x32xf32>
// GRAD-NOT: dsc.dropout

// WHOLE: @transformer.h.0.attn.c_attn.weight : tensor<96x32xf32>
// WHOLE: @transformer.h.0.mlp.c_fc.weight {{.*}} : tensor<64x32xf32>
// WHOLE-LABEL: func.func @forward
// WHOLE: dsc.dropout %{{.*}}, p = 1.000000e-01, seed = 1, samples = 1 : tensor<2x2x16x16xf32>
// WHOLE-COUNT-1: dsc.all_reduce
// WHOLE-NOT: dsc.all_reduce
// WHOLE-NOT: part
