// RUN: dsc-opt %s --dsc-form-attention="drop-unread-buffers=true masked=true" --split-input-file | FileCheck %s
// RUN: dsc-opt %s --dsc-form-attention --split-input-file | FileCheck %s --check-prefix=KEEP

// KEEP: dsc.state buffer @h.0.attn.bias
// KEEP: dsc.attention

// GPT-2 as torch 1.13's exporter writes it: the heads flattened to [B*H]
// for both matmuls, k transposed then flattened, a scale constant, the
// causal mask; with drop-unread-buffers, the per-layer mask buffer it no
// longer reads is removed (and kept by default).
// CHECK-LABEL: module
// CHECK-NOT: dsc.state buffer @h.0.attn.bias
// CHECK: dsc.state buffer @kept
// CHECK-LABEL: func.func @gpt2_export
// CHECK: %[[Q:.*]] = dsc.transpose %{{.*}}, 1, 2 : tensor<2x8x2x16xf32>
// CHECK: %[[K:.*]] = dsc.transpose %{{.*}}, 1, 2 : tensor<2x8x2x16xf32>
// CHECK: %[[V:.*]] = dsc.transpose %{{.*}}, 1, 2 : tensor<2x8x2x16xf32>
// CHECK-NEXT: %[[O:.*]], %{{.*}} = dsc.attention %[[Q]], %[[K]], %[[V]] causal {scale = 2.500000e-01 : f64} : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x2x8x16xf32>, tensor<2x2x8xf32>
// CHECK-NEXT: %[[Y:.*]] = dsc.reshape %[[O]] : tensor<2x2x8x16xf32> -> tensor<4x8x16xf32>
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: dsc.softmax
dsc.state buffer @"h.0.attn.bias" : tensor<1x1x16x16xf32>
dsc.state buffer @kept : tensor<4xf32>
func.func @gpt2_export(%q3: tensor<2x8x32xf32>, %k3: tensor<2x8x32xf32>,
                       %v3: tensor<2x8x32xf32>) -> (tensor<4x8x16xf32>, tensor<4xf32>) {
  %kept = dsc.load @kept : tensor<4xf32>
  %q4 = dsc.reshape %q3 : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %qh = dsc.transpose %q4, 1, 2 : tensor<2x8x2x16xf32>
  %q = dsc.reshape %qh : tensor<2x2x8x16xf32> -> tensor<4x8x16xf32>
  %k4 = dsc.reshape %k3 : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %kh = dsc.transpose %k4, 1, 2 : tensor<2x8x2x16xf32>
  %kt = dsc.transpose %kh, 2, 3 : tensor<2x2x8x16xf32>
  %k = dsc.reshape %kt : tensor<2x2x16x8xf32> -> tensor<4x16x8xf32>
  %s3 = dsc.matmul %q, %k : tensor<4x8x16xf32>, tensor<4x16x8xf32>
  %s = dsc.reshape %s3 : tensor<4x8x8xf32> -> tensor<2x2x8x8xf32>
  %c = dsc.constant dense<0.25> : tensor<f32>
  %ss = dsc.mul %s, %c : tensor<2x2x8x8xf32>, tensor<f32>
  %m = dsc.causal_mask %ss : tensor<2x2x8x8xf32>
  %p = dsc.softmax %m, dim = 3 : tensor<2x2x8x8xf32>
  %p3 = dsc.reshape %p : tensor<2x2x8x8xf32> -> tensor<4x8x8xf32>
  %v4 = dsc.reshape %v3 : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %vh = dsc.transpose %v4, 1, 2 : tensor<2x8x2x16xf32>
  %v = dsc.reshape %vh : tensor<2x2x8x16xf32> -> tensor<4x8x16xf32>
  %y = dsc.matmul %p3, %v : tensor<4x8x8xf32>, tensor<4x8x16xf32>
  return %y, %kept : tensor<4x8x16xf32>, tensor<4xf32>
}

// -----

// Heads kept 4-D, k read with transpose_rhs, the scale a division (HF
// style), an additive mask broadcast over heads, v given transposed, and a
// dropout with p = 0 on the probabilities.
// Without masked=true, masked chains stay as exported.
// KEEP-LABEL: func.func @additive_mask
// KEEP-NOT: dsc.attention
// KEEP: dsc.softmax
// KEEP-LABEL: func.func @boolean_mask
// KEEP-NOT: dsc.attention
// KEEP: dsc.softmax
// CHECK-LABEL: func.func @additive_mask
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x4x8x16xf32>, %[[K:[^:]*]]: tensor<2x4x12x16xf32>, %[[VT:[^:]*]]: tensor<2x4x24x12xf32>, %[[M:[^:]*]]: tensor<2x1x8x12xf32>)
// CHECK: %[[V:.*]] = dsc.transpose %[[VT]], 2, 3
// CHECK: %[[O:.*]], %{{.*}} = dsc.attention %[[Q]], %[[K]], %[[V]] mask(%[[M]] : tensor<2x1x8x12xf32>) {scale = 1.250000e-01 : f64}
// CHECK-NEXT: return %[[O]]
func.func @additive_mask(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x12x16xf32>,
                         %vt: tensor<2x4x24x12xf32>, %mask: tensor<2x1x8x12xf32>)
    -> tensor<2x4x8x24xf32> {
  %s = dsc.matmul %q, %k transpose_rhs : tensor<2x4x8x16xf32>, tensor<2x4x12x16xf32>
  %c = dsc.constant dense<8.0> : tensor<f32>
  %ss = dsc.div %s, %c : tensor<2x4x8x12xf32>, tensor<f32>
  %sm = dsc.add %mask, %ss : tensor<2x1x8x12xf32>, tensor<2x4x8x12xf32>
  %p = dsc.softmax %sm, dim = 3 : tensor<2x4x8x12xf32>
  %key = dsc.step_key : tensor<4xi64>
  %pd = dsc.dropout %p, %key, p = 0.0, seed = 3, samples = 2 : tensor<2x4x8x12xf32>
  %y = dsc.matmul %pd, %vt transpose_rhs : tensor<2x4x8x12xf32>, tensor<2x4x24x12xf32>
  return %y : tensor<2x4x8x24xf32>
}

// -----

// A boolean mask: select(keep, scores, -inf); no scale.
// CHECK-LABEL: func.func @boolean_mask
// CHECK: dsc.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%{{.*}} : tensor<2x1x1x8xi1>) {scale = 1.000000e+00 : f64}
// CHECK-NOT: dsc.select
func.func @boolean_mask(%q: tensor<2x2x8x16xf32>, %keep: tensor<2x1x1x8xi1>)
    -> tensor<2x2x8x16xf32> {
  %s = dsc.matmul %q, %q transpose_rhs : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
  %ninf = dsc.constant dense<0xFF800000> : tensor<f32>
  %sm = dsc.select %keep, %s, %ninf : tensor<2x1x1x8xi1>, tensor<2x2x8x8xf32>, tensor<f32>
  %p = dsc.softmax %sm, dim = 3 : tensor<2x2x8x8xf32>
  %y = dsc.matmul %p, %q : tensor<2x2x8x8xf32>, tensor<2x2x8x16xf32>
  return %y : tensor<2x2x8x16xf32>
}

// -----

// A finite causal fill far below the scores (HF's finfo.min) is -inf's
// equal when no row is fully hidden.
// CHECK-LABEL: func.func @finfo_min_fill
// CHECK: dsc.attention {{.*}} causal
func.func @finfo_min_fill(%q: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = dsc.matmul %q, %q transpose_rhs : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
  %m = dsc.causal_mask %s {fill_value = -3.4028234663852886e+38 : f64} : tensor<1x2x8x8xf32>
  %p = dsc.softmax %m, dim = 3 : tensor<1x2x8x8xf32>
  %y = dsc.matmul %p, %q : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>
  return %y : tensor<1x2x8x16xf32>
}

// -----

// Left alone: the probabilities are also an output (the op would not
// free them), and the mask buffer stays a state.
// CHECK-LABEL: module
// CHECK: dsc.state buffer @bias
// CHECK-LABEL: func.func @probabilities_read
// CHECK: dsc.softmax
// CHECK-NOT: dsc.attention
dsc.state buffer @bias : tensor<1x1x8x8xf32>
func.func @probabilities_read(%q: tensor<1x2x8x16xf32>)
    -> (tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>) {
  %s = dsc.matmul %q, %q transpose_rhs : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
  %m = dsc.causal_mask %s : tensor<1x2x8x8xf32>
  %p = dsc.softmax %m, dim = 3 : tensor<1x2x8x8xf32>
  %y = dsc.matmul %p, %q : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>
  return %y, %p : tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>
}

// -----

// Left alone: the scores feed something else too.
// CHECK-LABEL: func.func @scores_read
// CHECK-NOT: dsc.attention
func.func @scores_read(%q: tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>) {
  %s = dsc.matmul %q, %q transpose_rhs : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
  %p = dsc.softmax %s, dim = 3 : tensor<1x2x8x8xf32>
  %y = dsc.matmul %p, %q : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>
  return %y, %s : tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>
}

// -----

// Left alone: a softmax over the queries, not the keys.
// CHECK-LABEL: func.func @softmax_over_queries
// CHECK-NOT: dsc.attention
func.func @softmax_over_queries(%q: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = dsc.matmul %q, %q transpose_rhs : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
  %p = dsc.softmax %s, dim = 2 : tensor<1x2x8x8xf32>
  %y = dsc.matmul %p, %q : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>
  return %y : tensor<1x2x8x16xf32>
}

// -----

// Left alone: a causal mask over more queries than keys hides whole rows
// (NaN in PyTorch, 0 from dsc.attention).
// CHECK-LABEL: func.func @causal_rows_hidden
// CHECK-NOT: dsc.attention
func.func @causal_rows_hidden(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x4x16xf32>)
    -> tensor<1x2x8x16xf32> {
  %s = dsc.matmul %q, %k transpose_rhs : tensor<1x2x8x16xf32>, tensor<1x2x4x16xf32>
  %m = dsc.causal_mask %s : tensor<1x2x8x4xf32>
  %p = dsc.softmax %m, dim = 3 : tensor<1x2x8x4xf32>
  %y = dsc.matmul %p, %k : tensor<1x2x8x4xf32>, tensor<1x2x4x16xf32>
  return %y : tensor<1x2x8x16xf32>
}

// -----

// Left alone: a causal fill that does not hide (-1e4 is a finite logit).
// CHECK-LABEL: func.func @causal_fill_visible
// CHECK-NOT: dsc.attention
func.func @causal_fill_visible(%q: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = dsc.matmul %q, %q transpose_rhs : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
  %m = dsc.causal_mask %s {fill_value = -1.0e4 : f64} : tensor<1x2x8x8xf32>
  %p = dsc.softmax %m, dim = 3 : tensor<1x2x8x8xf32>
  %y = dsc.matmul %p, %q : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>
  return %y : tensor<1x2x8x16xf32>
}

// -----

// Left alone: dropout on the probabilities (its mask needs them).
// CHECK-LABEL: func.func @attention_dropout
// CHECK-NOT: dsc.attention
func.func @attention_dropout(%q: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = dsc.matmul %q, %q transpose_rhs : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
  %p = dsc.softmax %s, dim = 3 : tensor<1x2x8x8xf32>
  %key = dsc.step_key : tensor<4xi64>
  %pd = dsc.dropout %p, %key, p = 0.1, seed = 3, samples = 1 : tensor<1x2x8x8xf32>
  %y = dsc.matmul %pd, %q : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>
  return %y : tensor<1x2x8x16xf32>
}

// -----

// Left alone: a scale that is not one constant value.
// CHECK-LABEL: func.func @scale_per_head
// CHECK-NOT: dsc.attention
func.func @scale_per_head(%q: tensor<1x2x8x16xf32>, %c: tensor<1x2x1x1xf32>) -> tensor<1x2x8x16xf32> {
  %s = dsc.matmul %q, %q transpose_rhs : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
  %ss = dsc.mul %s, %c : tensor<1x2x8x8xf32>, tensor<1x2x1x1xf32>
  %p = dsc.softmax %ss, dim = 3 : tensor<1x2x8x8xf32>
  %y = dsc.matmul %p, %q : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>
  return %y : tensor<1x2x8x16xf32>
}

// -----

// Left alone: the heads are broadcast in the product (k shared by heads).
// CHECK-LABEL: func.func @broadcast_keys
// CHECK-NOT: dsc.attention
func.func @broadcast_keys(%q: tensor<1x2x8x16xf32>, %k: tensor<1x1x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = dsc.matmul %q, %k transpose_rhs : tensor<1x2x8x16xf32>, tensor<1x1x8x16xf32>
  %p = dsc.softmax %s, dim = 3 : tensor<1x2x8x8xf32>
  %y = dsc.matmul %p, %q : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>
  return %y : tensor<1x2x8x16xf32>
}
