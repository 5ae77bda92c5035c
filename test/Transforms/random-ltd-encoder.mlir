// RUN: dsc-opt %s --dsc-random-ltd="kept=4 layers=1" | FileCheck %s
// RUN: dsc-opt %s --dsc-random-ltd="kept=8 layers=1" > %t.full
// RUN: dsc-opt %s > %t.plain
// RUN: diff %t.plain %t.full

// An encoder (batch 2, 8 tokens, width 4, one head, no causal mask) whose
// blocks read, besides the hidden state, an additive padding mask computed
// from an input ([B, 1, T]: a key's column) and a shared attention bias
// ([1, T, T]). In the dropping block both are gathered by the step's
// indices: the bias (broadcast to the batch) along its rows and columns,
// the padding mask along its columns, so a kept query sees the kept keys
// with the mask's values between them.
// CHECK-LABEL: func.func @forward
// CHECK: %[[IDX:.*]] = dsc.random_ltd_indices %{{.*}}, length = 8, seed = 0 : tensor<2x4xi64>
// CHECK: %[[PAD:.*]] = dsc.reshape %{{.*}} : tensor<2x8xf32> -> tensor<2x1x8xf32>
// The first block at full length.
// CHECK: dsc.add %{{.*}}, %[[PAD]] : tensor<2x8x8xf32>, tensor<2x1x8xf32>
// The second: the hidden state, then the masks, gathered.
// CHECK: %[[XK:.*]] = dsc.gather %{{.*}}, dim = 1 : tensor<2x8x4xf32>, tensor<2x4x4xi64>
// CHECK: %[[BB:.*]] = dsc.broadcast %[[BIAS:.*]] : tensor<1x8x8xf32> -> tensor<2x8x8xf32>
// CHECK: %[[ROW:.*]] = dsc.reshape %[[IDX]] : tensor<2x4xi64> -> tensor<2x4x1xi64>
// CHECK: %[[ROWS:.*]] = dsc.broadcast %[[ROW]] : tensor<2x4x1xi64> -> tensor<2x4x8xi64>
// CHECK: %[[B1:.*]] = dsc.gather %[[BB]], %[[ROWS]], dim = 1 : tensor<2x8x8xf32>, tensor<2x4x8xi64>
// CHECK: %[[COL:.*]] = dsc.reshape %[[IDX]] : tensor<2x4xi64> -> tensor<2x1x4xi64>
// CHECK: %[[COLS:.*]] = dsc.broadcast %[[COL]] : tensor<2x1x4xi64> -> tensor<2x4x4xi64>
// CHECK: %[[B2:.*]] = dsc.gather %[[B1]], %[[COLS]], dim = 2 : tensor<2x4x8xf32>, tensor<2x4x4xi64>
// CHECK: %[[S1:.*]] = dsc.add %{{.*}}, %[[B2]] : tensor<2x4x4xf32>, tensor<2x4x4xf32>
// CHECK: %[[PCOL:.*]] = dsc.reshape %[[IDX]] : tensor<2x4xi64> -> tensor<2x1x4xi64>
// CHECK: %[[PCOLS:.*]] = dsc.broadcast %[[PCOL]] : tensor<2x1x4xi64> -> tensor<2x1x4xi64>
// CHECK: %[[PK:.*]] = dsc.gather %[[PAD]], %[[PCOLS]], dim = 2 : tensor<2x1x8xf32>, tensor<2x1x4xi64>
// CHECK: dsc.add %[[S1]], %[[PK]] : tensor<2x4x4xf32>, tensor<2x1x4xf32>
// CHECK: dsc.softmax %{{.*}}, dim = 2 : tensor<2x4x4xf32>
// CHECK: dsc.scatter_add
// CHECK: dsc.select
// The third block at full length again.
// CHECK: dsc.add %{{.*}}, %[[PAD]] : tensor<2x8x8xf32>, tensor<2x1x8xf32>
// CHECK: dsc.cross_entropy

dsc.state parameter @wte : tensor<16x4xf32>
dsc.state parameter @bias : tensor<1x8x8xf32>
dsc.state parameter @"h.0.attn.weight" : tensor<12x4xf32>
dsc.state parameter @"h.1.attn.weight" : tensor<12x4xf32>
dsc.state parameter @"h.2.attn.weight" : tensor<12x4xf32>

func.func @forward(%tokens: tensor<2x8xi64> {dsc.input = "tokens"},
                   %padding: tensor<2x8xf32> {dsc.input = "padding"},
                   %targets: tensor<2x8xi64> {dsc.input = "targets"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %wte = dsc.load @wte : tensor<16x4xf32>
  %x0 = dsc.embedding %wte, %tokens : tensor<16x4xf32>, tensor<2x8xi64>
  %pad = dsc.reshape %padding : tensor<2x8xf32> -> tensor<2x1x8xf32>
  %bias = dsc.load @bias : tensor<1x8x8xf32>
  %b0_w = dsc.load @"h.0.attn.weight" : tensor<12x4xf32>
  %b0_qkv = dsc.linear %x0, %b0_w : tensor<2x8x4xf32>, tensor<12x4xf32>
  %b0_q = dsc.slice %b0_qkv, dim = 2, start = 0, end = 4, step = 1 : tensor<2x8x12xf32>
  %b0_k = dsc.slice %b0_qkv, dim = 2, start = 4, end = 8, step = 1 : tensor<2x8x12xf32>
  %b0_v = dsc.slice %b0_qkv, dim = 2, start = 8, end = 12, step = 1 : tensor<2x8x12xf32>
  %b0_s = dsc.matmul %b0_q, %b0_k transpose_rhs : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %b0_b = dsc.add %b0_s, %bias : tensor<2x8x8xf32>, tensor<1x8x8xf32>
  %b0_m = dsc.add %b0_b, %pad : tensor<2x8x8xf32>, tensor<2x1x8xf32>
  %b0_p = dsc.softmax %b0_m, dim = 2 : tensor<2x8x8xf32>
  %b0_a = dsc.matmul %b0_p, %b0_v : tensor<2x8x8xf32>, tensor<2x8x4xf32>
  %x1 = dsc.add %x0, %b0_a : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %b1_w = dsc.load @"h.1.attn.weight" : tensor<12x4xf32>
  %b1_qkv = dsc.linear %x1, %b1_w : tensor<2x8x4xf32>, tensor<12x4xf32>
  %b1_q = dsc.slice %b1_qkv, dim = 2, start = 0, end = 4, step = 1 : tensor<2x8x12xf32>
  %b1_k = dsc.slice %b1_qkv, dim = 2, start = 4, end = 8, step = 1 : tensor<2x8x12xf32>
  %b1_v = dsc.slice %b1_qkv, dim = 2, start = 8, end = 12, step = 1 : tensor<2x8x12xf32>
  %b1_s = dsc.matmul %b1_q, %b1_k transpose_rhs : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %b1_b = dsc.add %b1_s, %bias : tensor<2x8x8xf32>, tensor<1x8x8xf32>
  %b1_m = dsc.add %b1_b, %pad : tensor<2x8x8xf32>, tensor<2x1x8xf32>
  %b1_p = dsc.softmax %b1_m, dim = 2 : tensor<2x8x8xf32>
  %b1_a = dsc.matmul %b1_p, %b1_v : tensor<2x8x8xf32>, tensor<2x8x4xf32>
  %x2 = dsc.add %x1, %b1_a : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %b2_w = dsc.load @"h.2.attn.weight" : tensor<12x4xf32>
  %b2_qkv = dsc.linear %x2, %b2_w : tensor<2x8x4xf32>, tensor<12x4xf32>
  %b2_q = dsc.slice %b2_qkv, dim = 2, start = 0, end = 4, step = 1 : tensor<2x8x12xf32>
  %b2_k = dsc.slice %b2_qkv, dim = 2, start = 4, end = 8, step = 1 : tensor<2x8x12xf32>
  %b2_v = dsc.slice %b2_qkv, dim = 2, start = 8, end = 12, step = 1 : tensor<2x8x12xf32>
  %b2_s = dsc.matmul %b2_q, %b2_k transpose_rhs : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %b2_b = dsc.add %b2_s, %bias : tensor<2x8x8xf32>, tensor<1x8x8xf32>
  %b2_m = dsc.add %b2_b, %pad : tensor<2x8x8xf32>, tensor<2x1x8xf32>
  %b2_p = dsc.softmax %b2_m, dim = 2 : tensor<2x8x8xf32>
  %b2_a = dsc.matmul %b2_p, %b2_v : tensor<2x8x8xf32>, tensor<2x8x4xf32>
  %x3 = dsc.add %x2, %b2_a : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %logits = dsc.linear %x3, %wte : tensor<2x8x4xf32>, tensor<16x4xf32>
  %loss = dsc.cross_entropy %logits, %targets : tensor<2x8x16xf32>, tensor<2x8xi64>
  return %loss : tensor<f32>
}
