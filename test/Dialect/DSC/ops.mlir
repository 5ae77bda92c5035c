// Round-trips every dsc op through the custom form, and through the generic
// form to check that printing and parsing agree.
// RUN: dsc-opt %s | dsc-opt | FileCheck %s
// RUN: dsc-opt %s --mlir-print-op-generic | dsc-opt | FileCheck %s

// CHECK: dsc.state parameter @h.0.attn.c_attn.weight : tensor<96x32xf32>
dsc.state parameter @"h.0.attn.c_attn.weight" : tensor<96x32xf32>
// CHECK: dsc.state buffer @h.0.attn.bias : tensor<1x1x8x8xf32>
dsc.state buffer @"h.0.attn.bias" : tensor<1x1x8x8xf32>
// CHECK: dsc.state parameter @scalar : tensor<bf16>
dsc.state parameter @scalar : tensor<bf16>
// CHECK: dsc.state optimizer @h.0.attn.c_attn.weight.exp_avg : tensor<96x32xf32>
dsc.state optimizer @"h.0.attn.c_attn.weight.exp_avg" : tensor<96x32xf32>
// CHECK: dsc.state teacher @teacher.h.0.attn.c_attn.weight : tensor<96x32xbf16>
dsc.state teacher @"teacher.h.0.attn.c_attn.weight" : tensor<96x32xbf16>
// CHECK: dsc.state master @h.0.attn.c_attn.weight.master : tensor<96x32xf32>
dsc.state master @"h.0.attn.c_attn.weight.master" : tensor<96x32xf32>

// CHECK-LABEL: func.func @state
// CHECK-SAME: (%{{.*}}: tensor<2x8xi64> {dsc.input = "tokens"}) -> (tensor<96x32xf32> {dsc.output = "w"})
func.func @state(%tokens: tensor<2x8xi64> {dsc.input = "tokens"})
    -> (tensor<96x32xf32> {dsc.output = "w"}) {
  // CHECK: dsc.load @h.0.attn.c_attn.weight : tensor<96x32xf32>
  %w = dsc.load @"h.0.attn.c_attn.weight" : tensor<96x32xf32>
  // CHECK: dsc.store %{{.*}} to @h.0.attn.c_attn.weight.exp_avg : tensor<96x32xf32>
  dsc.store %w to @"h.0.attn.c_attn.weight.exp_avg" : tensor<96x32xf32>
  // CHECK: dsc.load @scalar : tensor<bf16>
  %s = dsc.load @scalar : tensor<bf16>
  return %w : tensor<96x32xf32>
}

// CHECK-LABEL: func.func @constants
func.func @constants() -> (tensor<f32>, tensor<4xi64>, tensor<2x2xi1>) {
  // CHECK: dsc.constant dense<1.250000e-01> : tensor<f32>
  %a = dsc.constant dense<0.125> : tensor<f32>
  // CHECK: dsc.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
  %b = dsc.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
  // CHECK: dsc.constant dense<{{\[\[}}true, false], [true, true]]> : tensor<2x2xi1>
  %c = dsc.constant dense<[[true, false], [true, true]]> : tensor<2x2xi1>
  return %a, %b, %c : tensor<f32>, tensor<4xi64>, tensor<2x2xi1>
}

// CHECK-LABEL: func.func @linear_algebra
func.func @linear_algebra(%q: tensor<2x4x8x16xf32>, %k: tensor<4x8x16xf32>,
                          %x: tensor<2x8x32xf32>, %w: tensor<128x32xf32>,
                          %b: tensor<128xf32>, %table: tensor<256x32xf32>,
                          %ids: tensor<2x8xi32>) {
  // CHECK: dsc.matmul %{{.*}}, %{{.*}} transpose_rhs : tensor<2x4x8x16xf32>, tensor<4x8x16xf32>
  %s = dsc.matmul %q, %k transpose_rhs : tensor<2x4x8x16xf32>, tensor<4x8x16xf32>
  // CHECK: dsc.matmul %{{.*}}, %{{.*}} transpose_lhs : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  %t = dsc.matmul %q, %q transpose_lhs : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  // CHECK: dsc.matmul %{{.*}}, %{{.*}} : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>
  %u = dsc.matmul %s, %q : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>
  // CHECK: dsc.linear %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x8x32xf32>, tensor<128x32xf32>, tensor<128xf32>
  %y = dsc.linear %x, %w, %b : tensor<2x8x32xf32>, tensor<128x32xf32>, tensor<128xf32>
  // CHECK: dsc.linear %{{.*}}, %{{.*}} : tensor<2x8x32xf32>, tensor<128x32xf32>
  %z = dsc.linear %x, %w : tensor<2x8x32xf32>, tensor<128x32xf32>
  // CHECK: dsc.embedding %{{.*}}, %{{.*}} : tensor<256x32xf32>, tensor<2x8xi32>
  %e = dsc.embedding %table, %ids : tensor<256x32xf32>, tensor<2x8xi32>
  // CHECK: dsc.embedding %{{.*}}, %{{.*}} padding_idx = 0 : tensor<256x32xf32>, tensor<2x8xi32>
  %p = dsc.embedding %table, %ids padding_idx = 0 : tensor<256x32xf32>, tensor<2x8xi32>
  // The inferred result types flow into their users.
  // CHECK: dsc.add %{{.*}}, %{{.*}} : tensor<2x8x128xf32>, tensor<2x8x128xf32>
  %sum = dsc.add %y, %z : tensor<2x8x128xf32>, tensor<2x8x128xf32>
  // CHECK: dsc.matmul %{{.*}}, %{{.*}} : tensor<2x4x8x16xf32>, tensor<2x4x16x16xf32>
  %v = dsc.matmul %u, %t : tensor<2x4x8x16xf32>, tensor<2x4x16x16xf32>
  // CHECK: dsc.add %{{.*}}, %{{.*}} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  %use = dsc.add %v, %q : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return
}

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<2x8x32xf32>, %b: tensor<32xf32>,
                       %i: tensor<4xi64>, %j: tensor<1xi64>) {
  // CHECK: dsc.add %{{.*}}, %{{.*}} : tensor<2x8x32xf32>, tensor<32xf32>
  %0 = dsc.add %a, %b : tensor<2x8x32xf32>, tensor<32xf32>
  // CHECK: dsc.sub %{{.*}}, %{{.*}} : tensor<32xf32>, tensor<2x8x32xf32>
  %1 = dsc.sub %b, %a : tensor<32xf32>, tensor<2x8x32xf32>
  // CHECK: dsc.mul
  %2 = dsc.mul %a, %a : tensor<2x8x32xf32>, tensor<2x8x32xf32>
  // CHECK: dsc.div
  %3 = dsc.div %a, %b : tensor<2x8x32xf32>, tensor<32xf32>
  // CHECK: dsc.pow
  %4 = dsc.pow %a, %b : tensor<2x8x32xf32>, tensor<32xf32>
  // CHECK: dsc.maximum
  %5 = dsc.maximum %a, %b : tensor<2x8x32xf32>, tensor<32xf32>
  // CHECK: dsc.minimum %{{.*}}, %{{.*}} : tensor<4xi64>, tensor<1xi64>
  %6 = dsc.minimum %i, %j : tensor<4xi64>, tensor<1xi64>
  // CHECK: dsc.neg %{{.*}} : tensor<4xi64>
  %7 = dsc.neg %i : tensor<4xi64>
  // CHECK: dsc.relu %{{.*}} : tensor<2x8x32xf32>
  %8 = dsc.relu %a : tensor<2x8x32xf32>
  // CHECK: dsc.silu
  %9 = dsc.silu %a : tensor<2x8x32xf32>
  // CHECK: dsc.sigmoid
  %10 = dsc.sigmoid %a : tensor<2x8x32xf32>
  // CHECK: dsc.tanh
  %11 = dsc.tanh %a : tensor<2x8x32xf32>
  // CHECK: dsc.exp
  %12 = dsc.exp %a : tensor<2x8x32xf32>
  // CHECK: dsc.log
  %13 = dsc.log %a : tensor<2x8x32xf32>
  // CHECK: dsc.cos
  %cos = dsc.cos %a : tensor<2x8x32xf32>
  // CHECK: dsc.sin
  %sin = dsc.sin %a : tensor<2x8x32xf32>
  // CHECK: dsc.sqrt
  %14 = dsc.sqrt %a : tensor<2x8x32xf32>
  // CHECK: dsc.rsqrt
  %15 = dsc.rsqrt %a : tensor<2x8x32xf32>
  // CHECK: dsc.gelu erf %{{.*}} : tensor<2x8x32xf32>
  %16 = dsc.gelu erf %a : tensor<2x8x32xf32>
  // CHECK: dsc.gelu tanh %{{.*}} : tensor<2x8x32xf32>
  %17 = dsc.gelu tanh %a : tensor<2x8x32xf32>
  // CHECK: dsc.gelu_grad erf %{{.*}} : tensor<2x8x32xf32>
  %g0 = dsc.gelu_grad erf %a : tensor<2x8x32xf32>
  // CHECK: dsc.gelu_grad tanh %{{.*}} : tensor<2x8x32xf32>
  %g1 = dsc.gelu_grad tanh %a : tensor<2x8x32xf32>
  // CHECK: dsc.convert %{{.*}} : tensor<2x8x32xf32> to tensor<2x8x32xbf16>
  %18 = dsc.convert %a : tensor<2x8x32xf32> to tensor<2x8x32xbf16>
  // CHECK: dsc.convert %{{.*}} : tensor<4xi64> to tensor<4xf16>
  %19 = dsc.convert %i : tensor<4xi64> to tensor<4xf16>
  // CHECK: dsc.compare lt, %{{.*}}, %{{.*}} : tensor<4xi64>, tensor<1xi64>
  %20 = dsc.compare lt, %i, %j : tensor<4xi64>, tensor<1xi64>
  // CHECK: dsc.compare ge, %{{.*}}, %{{.*}} : tensor<2x8x32xf32>, tensor<32xf32>
  %21 = dsc.compare ge, %a, %b : tensor<2x8x32xf32>, tensor<32xf32>
  // CHECK: dsc.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x8x32xi1>, tensor<32xf32>, tensor<2x8x32xf32>
  %22 = dsc.select %21, %b, %a : tensor<2x8x32xi1>, tensor<32xf32>, tensor<2x8x32xf32>
  // CHECK: dsc.add %{{.*}}, %{{.*}} : tensor<2x8x32xf32>, tensor<2x8x32xf32>
  %23 = dsc.add %22, %0 : tensor<2x8x32xf32>, tensor<2x8x32xf32>
  return
}

// CHECK-LABEL: func.func @norms_and_attention
func.func @norms_and_attention(%x: tensor<2x8x32xf32>, %g: tensor<32xf32>,
                               %s: tensor<2x4x8x8xf32>, %h: tensor<2x8x4x8xf16>,
                               %hw: tensor<4x8xf16>) {
  // CHECK: dsc.layer_norm %{{.*}} weight(%{{.*}} : tensor<32xf32>) bias(%{{.*}} : tensor<32xf32>) : tensor<2x8x32xf32>
  %0 = dsc.layer_norm %x weight(%g : tensor<32xf32>) bias(%g : tensor<32xf32>) : tensor<2x8x32xf32>
  // CHECK: dsc.layer_norm %{{.*}} {epsilon = 9.9999999999999995E-7 : f64} : tensor<2x8x32xf32>
  %1 = dsc.layer_norm %x {epsilon = 1.0e-6 : f64} : tensor<2x8x32xf32>
  // CHECK: dsc.layer_norm %{{.*}} bias(%{{.*}} : tensor<32xf32>) : tensor<2x8x32xf32>
  %2 = dsc.layer_norm %x bias(%g : tensor<32xf32>) : tensor<2x8x32xf32>
  // CHECK: dsc.layer_norm %{{.*}} weight(%{{.*}} : tensor<4x8xf16>) {normalized_rank = 2 : i64} : tensor<2x8x4x8xf16>
  %3 = dsc.layer_norm %h weight(%hw : tensor<4x8xf16>) {normalized_rank = 2 : i64} : tensor<2x8x4x8xf16>
  // CHECK: dsc.softmax %{{.*}}, dim = 3 : tensor<2x4x8x8xf32>
  %4 = dsc.softmax %s, dim = 3 : tensor<2x4x8x8xf32>
  // CHECK: dsc.log_softmax %{{.*}}, dim = 0 : tensor<2x4x8x8xf32>
  %5 = dsc.log_softmax %s, dim = 0 : tensor<2x4x8x8xf32>
  // CHECK: dsc.causal_mask %{{.*}} : tensor<2x4x8x8xf32>
  %6 = dsc.causal_mask %s : tensor<2x4x8x8xf32>
  // CHECK: dsc.causal_mask %{{.*}} {fill_value = -1.000000e+04 : f64} : tensor<2x4x8x8xf32>
  %7 = dsc.causal_mask %s {fill_value = -1.0e4 : f64} : tensor<2x4x8x8xf32>
  // CHECK: %[[KEY:.*]] = dsc.step_key : tensor<4xi64>
  %key = dsc.step_key : tensor<4xi64>
  // CHECK: dsc.dropout %{{.*}}, %[[KEY]], p = 1.000000e-01, seed = 1234, samples = 2 : tensor<2x8x32xf32>
  %8 = dsc.dropout %x, %key, p = 0.1, seed = 1234, samples = 2 : tensor<2x8x32xf32>
  // CHECK: dsc.dropout %{{.*}}, %[[KEY]], p = 0.000000e+00, seed = -7, samples = 16 : tensor<2x8x32xf32>
  %9 = dsc.dropout %x, %key, p = 0.0, seed = -7, samples = 16 : tensor<2x8x32xf32>
  // CHECK: dsc.random_ltd_indices %[[KEY]], length = 8, seed = 3 : tensor<2x4xi64>
  %10 = dsc.random_ltd_indices %key, length = 8, seed = 3 : tensor<2x4xi64>
  // CHECK: dsc.random_ltd_indices %[[KEY]], length = 8, seed = 0 : tensor<2x8xi64>
  %11 = dsc.random_ltd_indices %key, length = 8, seed = 0 : tensor<2x8xi64>
  // CHECK: dsc.random_uniform %[[KEY]], low = 0.000000e+00, high = 1.000000e+00, seed = 2, samples = 2 : tensor<16x4xf32>
  %12 = dsc.random_uniform %key, low = 0.0, high = 1.0, seed = 2, samples = 2 : tensor<16x4xf32>
  // CHECK: dsc.random_uniform %[[KEY]], low = 0.98999999999999999, high = 1.010000e+00, seed = 0, samples = 1 : tensor<f32>
  %13 = dsc.random_uniform %key, low = 0.99, high = 1.01, seed = 0, samples = 1 : tensor<f32>
  // A key's sample offset is printed when not 0, its default.
  // CHECK: %[[KEY3:.*]] = dsc.step_key sample_offset = 3 : tensor<4xi64>
  %key3 = dsc.step_key sample_offset = 3 : tensor<4xi64>
  // CHECK: dsc.dropout %{{.*}}, %[[KEY3]], p = 1.000000e-01
  %14 = dsc.dropout %x, %key3, p = 0.1, seed = 1234, samples = 2 : tensor<2x8x32xf32>
  // CHECK: dsc.step_key : tensor<4xi64>
  %key0 = dsc.step_key sample_offset = 0 : tensor<4xi64>
  return
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<2x8x32xf32>, %y: tensor<2x3x32xf32>,
                  %r: tensor<1x8xf32>) {
  // CHECK: dsc.reshape %{{.*}} : tensor<2x8x32xf32> -> tensor<2x8x4x8xf32>
  %0 = dsc.reshape %x : tensor<2x8x32xf32> -> tensor<2x8x4x8xf32>
  // CHECK: dsc.transpose %{{.*}}, 1, 2 : tensor<2x8x4x8xf32>
  %1 = dsc.transpose %0, 1, 2 : tensor<2x8x4x8xf32>
  // CHECK: dsc.permute %{{.*}}, [0, 2, 3, 1] : tensor<2x4x8x8xf32>
  %2 = dsc.permute %1, [0, 2, 3, 1] : tensor<2x4x8x8xf32>
  // CHECK: dsc.slice %{{.*}}, dim = 2, start = 0, end = 32, step = 3 : tensor<2x8x32xf32>
  %3 = dsc.slice %x, dim = 2, start = 0, end = 32, step = 3 : tensor<2x8x32xf32>
  // CHECK: dsc.reshape %{{.*}} : tensor<2x8x11xf32> -> tensor<176xf32>
  %4 = dsc.reshape %3 : tensor<2x8x11xf32> -> tensor<176xf32>
  // CHECK: dsc.slice %{{.*}}, dim = 0, start = 5, end = 5, step = 1 : tensor<176xf32>
  %5 = dsc.slice %4, dim = 0, start = 5, end = 5, step = 1 : tensor<176xf32>
  // CHECK: dsc.concat(%{{.*}}, %{{.*}}), dim = 1 : tensor<2x8x32xf32>, tensor<2x3x32xf32>
  %6 = dsc.concat(%x, %y), dim = 1 : tensor<2x8x32xf32>, tensor<2x3x32xf32>
  // CHECK: dsc.reshape %{{.*}} : tensor<2x11x32xf32> -> tensor<704xf32>
  %7 = dsc.reshape %6 : tensor<2x11x32xf32> -> tensor<704xf32>
  // CHECK: dsc.concat(%{{.*}}), dim = 0 : tensor<2x3x32xf32>
  %8 = dsc.concat(%y), dim = 0 : tensor<2x3x32xf32>
  // CHECK: dsc.broadcast %{{.*}} : tensor<1x8xf32> -> tensor<4x2x8xf32>
  %9 = dsc.broadcast %r : tensor<1x8xf32> -> tensor<4x2x8xf32>
  // CHECK: dsc.reshape %{{.*}} : tensor<2x8x32xf32> -> tensor<512xf32>
  %10 = dsc.reshape %x : tensor<2x8x32xf32> -> tensor<512xf32>
  return
}

// The routing ops of a top-2 mixture-of-experts gate over 16 tokens and 4
// experts.
// CHECK-LABEL: func.func @routing
func.func @routing(%logits: tensor<16x4xf32>, %acc: tensor<4x8x32xf32>,
                   %idx: tensor<16x8x32xi64>, %src: tensor<16x8x32xf32>) {
  // CHECK: dsc.top_k %{{.*}}, k = 2, dim = 1 : tensor<16x4xf32>
  %v, %i = dsc.top_k %logits, k = 2, dim = 1 : tensor<16x4xf32>
  // CHECK: dsc.slice %{{.*}}, dim = 1, start = 0, end = 1, step = 1 : tensor<16x2xi64>
  %first = dsc.slice %i, dim = 1, start = 0, end = 1, step = 1 : tensor<16x2xi64>
  // CHECK: dsc.gather %{{.*}}, %{{.*}}, dim = 1 : tensor<16x4xf32>, tensor<16x1xi64>
  %g = dsc.gather %logits, %first, dim = 1 : tensor<16x4xf32>, tensor<16x1xi64>
  // CHECK: dsc.reshape %{{.*}} : tensor<16x1xi64> -> tensor<16xi64>
  %e = dsc.reshape %first : tensor<16x1xi64> -> tensor<16xi64>
  // CHECK: dsc.one_hot %{{.*}} : tensor<16xi64> -> tensor<16x4xi64>
  %mask = dsc.one_hot %e : tensor<16xi64> -> tensor<16x4xi64>
  // CHECK: dsc.one_hot %{{.*}} : tensor<16xi64> -> tensor<16x4xf32>
  %maskf = dsc.one_hot %e : tensor<16xi64> -> tensor<16x4xf32>
  // CHECK: dsc.cumsum %{{.*}}, dim = 0 : tensor<16x4xi64>
  %pos = dsc.cumsum %mask, dim = 0 : tensor<16x4xi64>
  // CHECK: dsc.scatter_add %{{.*}}, %{{.*}}, %{{.*}}, dim = 0 : tensor<4x8x32xf32>, tensor<16x8x32xi64>, tensor<16x8x32xf32>
  %r = dsc.scatter_add %acc, %idx, %src, dim = 0 : tensor<4x8x32xf32>, tensor<16x8x32xi64>, tensor<16x8x32xf32>
  // CHECK: dsc.top_k %{{.*}}, k = 1, dim = 0 : tensor<16x2xi64>
  %v1, %i1 = dsc.top_k %i, k = 1, dim = 0 : tensor<16x2xi64>
  // CHECK: dsc.add %{{.*}}, %{{.*}} : tensor<1x2xi64>, tensor<1x2xi64>
  %sum = dsc.add %v1, %i1 : tensor<1x2xi64>, tensor<1x2xi64>
  return
}

// CHECK-LABEL: func.func @reductions_and_loss
func.func @reductions_and_loss(%x: tensor<2x8x32xf32>, %t: tensor<2x8xi64>,
                               %n: tensor<4x3xi32>) {
  // CHECK: dsc.reduce_sum %{{.*}}, dims = [2] keep_dims : tensor<2x8x32xf32>
  %0 = dsc.reduce_sum %x, dims = [2] keep_dims : tensor<2x8x32xf32>
  // CHECK: dsc.reduce_mean %{{.*}}, dims = [0, 1, 2] : tensor<2x8x32xf32>
  %1 = dsc.reduce_mean %x, dims = [0, 1, 2] : tensor<2x8x32xf32>
  // CHECK: dsc.reduce_max %{{.*}}, dims = [1] : tensor<4x3xi32>
  %2 = dsc.reduce_max %n, dims = [1] : tensor<4x3xi32>
  // CHECK: dsc.add %{{.*}}, %{{.*}} : tensor<2x8x1xf32>, tensor<f32>
  %3 = dsc.add %0, %1 : tensor<2x8x1xf32>, tensor<f32>
  // CHECK: dsc.cross_entropy %{{.*}}, %{{.*}} : tensor<2x8x32xf32>, tensor<2x8xi64>
  %4 = dsc.cross_entropy %x, %t : tensor<2x8x32xf32>, tensor<2x8xi64>
  // CHECK: dsc.cross_entropy %{{.*}}, %{{.*}} ignore_index = 0 reduction = none : tensor<2x8x32xf32>, tensor<2x8xi64>
  %5 = dsc.cross_entropy %x, %t ignore_index = 0 reduction = none : tensor<2x8x32xf32>, tensor<2x8xi64>
  // CHECK: dsc.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} ignore_index = 0 : tensor<2x8x32xf32>, tensor<2x8xi64>, tensor<2x8xf32>
  %g = dsc.cross_entropy_grad %x, %t, %5 ignore_index = 0 : tensor<2x8x32xf32>, tensor<2x8xi64>, tensor<2x8xf32>
  // CHECK: dsc.cross_entropy %{{.*}}, %{{.*}} reduction = sum : tensor<2x8x32xf32>, tensor<2x8xi64>
  %6 = dsc.cross_entropy %x, %t reduction = sum : tensor<2x8x32xf32>, tensor<2x8xi64>
  // CHECK: dsc.add %{{.*}}, %{{.*}} : tensor<f32>, tensor<2x8xf32>
  %7 = dsc.add %4, %5 : tensor<f32>, tensor<2x8xf32>
  // CHECK: dsc.add %{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>
  %8 = dsc.add %6, %4 : tensor<f32>, tensor<f32>
  return
}

// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: tensor<f32>, %n: tensor<2xi64>) -> (tensor<f32>, tensor<2xi64>) {
  // CHECK: dsc.all_reduce %{{.*}} : tensor<f32>
  %0 = dsc.all_reduce %x : tensor<f32>
  // CHECK: dsc.all_reduce %{{.*}} : tensor<2xi64>
  %1 = dsc.all_reduce %n : tensor<2xi64>
  return %0, %1 : tensor<f32>, tensor<2xi64>
}

// Partitioned state and the collectives of ZeRO: shards of S elements of a
// whole of world-size * S.
// CHECK-LABEL: module attributes {dsc.world_size = 2 : i64}
module attributes {dsc.world_size = 2 : i64} {
  // CHECK: dsc.state optimizer @m {partition_of = array<i64: 3, 5>} : tensor<8xf32>
  dsc.state optimizer @m {partition_of = array<i64: 3, 5>} : tensor<8xf32>
  // CHECK-LABEL: func.func @partitioned
  func.func @partitioned(%whole: tensor<16xf32>) -> (tensor<16xf32>, tensor<8xf32>) {
    // CHECK: dsc.local_shard %{{.*}} : tensor<16xf32> -> tensor<8xf32>
    %0 = dsc.local_shard %whole : tensor<16xf32> -> tensor<8xf32>
    // CHECK: dsc.optimizer_boundary %{{.*}}, %{{.*}} : (tensor<16xf32>, tensor<8xf32>) -> (tensor<16xf32>, tensor<8xf32>)
    %sum:2 = dsc.optimizer_boundary %whole, %0 : (tensor<16xf32>, tensor<8xf32>) -> (tensor<16xf32>, tensor<8xf32>)
    // CHECK: dsc.reduce_scatter %{{.*}} : tensor<16xf32> -> tensor<8xf32>
    %1 = dsc.reduce_scatter %whole : tensor<16xf32> -> tensor<8xf32>
    // CHECK: dsc.all_gather %{{.*}} : tensor<8xf32> -> tensor<16xf32>
    %2 = dsc.all_gather %1 : tensor<8xf32> -> tensor<16xf32>
    // CHECK: dsc.load @m : tensor<8xf32>
    %3 = dsc.load @m : tensor<8xf32>
    return %2, %0 : tensor<16xf32>, tensor<8xf32>
  }
}

// ZeRO on an expert's states: the rank's experts (8 / P = 4 of them, 4x3
// each) partitioned over the D = 2 ranks of its expert-data group.
// CHECK-LABEL: module attributes {dsc.expert_parallel_size = 2 : i64, dsc.world_size = 4 : i64}
module attributes {dsc.world_size = 4 : i64, dsc.expert_parallel_size = 2 : i64} {
  // CHECK: dsc.state optimizer @e {partition_group = 2 : i32, partition_of = array<i64: 8, 4, 3>} : tensor<24xf32>
  dsc.state optimizer @e {partition_of = array<i64: 8, 4, 3>, partition_group = 2 : i32} : tensor<24xf32>
  // CHECK-LABEL: func.func @expert_shards
  func.func @expert_shards(%experts: tensor<48xf32>) -> tensor<48xf32> {
    // CHECK: dsc.local_shard %{{.*}} over expert_data : tensor<48xf32> -> tensor<24xf32>
    %0 = dsc.local_shard %experts over expert_data : tensor<48xf32> -> tensor<24xf32>
    // CHECK: dsc.reduce_scatter %{{.*}} over expert_data : tensor<48xf32> -> tensor<24xf32>
    %1 = dsc.reduce_scatter %experts over expert_data : tensor<48xf32> -> tensor<24xf32>
    %2 = dsc.add %0, %1 : tensor<24xf32>, tensor<24xf32>
    // CHECK: dsc.all_gather %{{.*}} over expert_data : tensor<24xf32> -> tensor<48xf32>
    %3 = dsc.all_gather %2 over expert_data : tensor<24xf32> -> tensor<48xf32>
    return %3 : tensor<48xf32>
  }
}

// Collectives over the groups of expert parallelism.
// CHECK-LABEL: module attributes {dsc.expert_parallel_size = 2 : i64, dsc.world_size = 4 : i64}
module attributes {dsc.world_size = 4 : i64, dsc.expert_parallel_size = 2 : i64} {
  // CHECK-LABEL: func.func @expert_groups
  func.func @expert_groups(%dispatched: tensor<4x3x8xf32>, %g: tensor<16xf32>)
      -> (tensor<4x3x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<4x3x8xf32>) {
    // CHECK: dsc.all_to_all %{{.*}} over expert : tensor<4x3x8xf32>
    %0 = dsc.all_to_all %dispatched over expert : tensor<4x3x8xf32>
    // CHECK: dsc.all_reduce %{{.*}} over expert_data : tensor<16xf32>
    %1 = dsc.all_reduce %g over expert_data : tensor<16xf32>
    // CHECK: dsc.reduce_scatter %{{.*}} over expert_data : tensor<16xf32> -> tensor<8xf32>
    %2 = dsc.reduce_scatter %g over expert_data : tensor<16xf32> -> tensor<8xf32>
    // CHECK: dsc.all_gather %{{.*}} over expert_data : tensor<8xf32> -> tensor<16xf32>
    %3 = dsc.all_gather %2 over expert_data : tensor<8xf32> -> tensor<16xf32>
    // CHECK: dsc.all_to_all %{{.*}} : tensor<4x3x8xf32>
    %4 = dsc.all_to_all %dispatched over world : tensor<4x3x8xf32>
    return %0, %1, %3, %4 : tensor<4x3x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<4x3x8xf32>
  }
}

// Tensor parallelism's groups, its conjugate pair and a weight's slices.
// CHECK-LABEL: module attributes {dsc.tensor_parallel_size = 2 : i64, dsc.world_size = 4 : i64}
module attributes {dsc.world_size = 4 : i64, dsc.tensor_parallel_size = 2 : i64} {
  // CHECK: dsc.state parameter @attn.c_attn.weight {partition_blocks = 3 : i64, partition_group = 3 : i32, partition_of = array<i64: 96, 32>} : tensor<48x32xf32>
  dsc.state parameter @"attn.c_attn.weight" {partition_of = array<i64: 96, 32>, partition_group = 3 : i32, partition_blocks = 3 : i64} : tensor<48x32xf32>
  // CHECK: dsc.state parameter @attn.c_proj.weight {partition_blocks = 32 : i64, partition_group = 3 : i32, partition_of = array<i64: 32, 32>} : tensor<32x16xf32>
  dsc.state parameter @"attn.c_proj.weight" {partition_of = array<i64: 32, 32>, partition_group = 3 : i32, partition_blocks = 32 : i64} : tensor<32x16xf32>
  // CHECK-LABEL: func.func @tensor_groups
  func.func @tensor_groups(%x: tensor<8x32xf32>, %g: tensor<16xf32>)
      -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<16xf32>) {
    // CHECK: dsc.replicate %{{.*}} : tensor<8x32xf32>
    %0 = dsc.replicate %x over tensor : tensor<8x32xf32>
    // CHECK: dsc.all_reduce %{{.*}} over tensor : tensor<8x32xf32>
    %1 = dsc.all_reduce %0 over tensor : tensor<8x32xf32>
    // CHECK: dsc.all_reduce %{{.*}} over data : tensor<16xf32>
    %2 = dsc.all_reduce %g over data : tensor<16xf32>
    return %0, %1, %2 : tensor<8x32xf32>, tensor<8x32xf32>, tensor<16xf32>
  }
}

// Attention: causal, with a boolean and an additive mask, and its gradient.
// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x12x16xf32>,
                     %v: tensor<2x4x12x24xf32>, %keep: tensor<2x1x1x12xi1>,
                     %bias: tensor<8x12xf32>, %do: tensor<2x4x8x24xf32>)
    -> (tensor<2x4x8x24xf32>, tensor<2x4x8x24xf32>, tensor<2x4x8x24xf32>,
        tensor<2x4x8x16xf32>) {
  // CHECK: %[[O:.*]], %[[L:.*]] = dsc.attention %{{.*}}, %{{.*}}, %{{.*}} causal {scale = 2.500000e-01 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x12x16xf32>, tensor<2x4x12x24xf32> -> tensor<2x4x8x24xf32>, tensor<2x4x8xf32>
  %o, %lse = dsc.attention %q, %k, %v causal {scale = 0.25 : f64}
      : tensor<2x4x8x16xf32>, tensor<2x4x12x16xf32>, tensor<2x4x12x24xf32>
      -> tensor<2x4x8x24xf32>, tensor<2x4x8xf32>
  // CHECK: dsc.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%{{.*}} : tensor<2x1x1x12xi1>) {scale = 1.250000e-01 : f64}
  %o2, %lse2 = dsc.attention %q, %k, %v mask(%keep : tensor<2x1x1x12xi1>)
      {scale = 0.125 : f64}
      : tensor<2x4x8x16xf32>, tensor<2x4x12x16xf32>, tensor<2x4x12x24xf32>
      -> tensor<2x4x8x24xf32>, tensor<2x4x8xf32>
  // CHECK: dsc.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%{{.*}} : tensor<8x12xf32>) causal
  %o3, %lse3 = dsc.attention %q, %k, %v mask(%bias : tensor<8x12xf32>) causal
      {scale = 0.125 : f64}
      : tensor<2x4x8x16xf32>, tensor<2x4x12x16xf32>, tensor<2x4x12x24xf32>
      -> tensor<2x4x8x24xf32>, tensor<2x4x8xf32>
  // CHECK: dsc.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %[[O]], %{{.*}}, %[[L]] causal {scale = 2.500000e-01 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x12x16xf32>, tensor<2x4x12x24xf32>, tensor<2x4x8x24xf32>, tensor<2x4x8x24xf32>, tensor<2x4x8xf32>
  %dq, %dk, %dv = dsc.attention_grad %q, %k, %v, %o, %do, %lse causal
      {scale = 0.25 : f64}
      : tensor<2x4x8x16xf32>, tensor<2x4x12x16xf32>, tensor<2x4x12x24xf32>,
        tensor<2x4x8x24xf32>, tensor<2x4x8x24xf32>, tensor<2x4x8xf32>
  return %o, %o2, %o3, %dq : tensor<2x4x8x24xf32>, tensor<2x4x8x24xf32>,
      tensor<2x4x8x24xf32>, tensor<2x4x8x16xf32>
}

// CHECK-LABEL: func.func @mixture_of_experts
func.func @mixture_of_experts(%x: tensor<16x32xf32>, %experts: tensor<16x2xi64>,
                              %priority: tensor<16x2xf32>, %gates: tensor<16x2xf32>)
    -> (tensor<16x32xf32>, tensor<16x2xf32>) {
  // CHECK: %[[S:.*]], %{{.*}} = dsc.moe_slots %{{.*}}, capacity = 5 : tensor<16x2xi64> -> tensor<16x2xi64>, tensor<4xi64>
  %slots, %counts = dsc.moe_slots %experts, capacity = 5
      : tensor<16x2xi64> -> tensor<16x2xi64>, tensor<4xi64>
  // CHECK: dsc.moe_slots %{{.*}} priority %{{.*}}, capacity = 3 : tensor<16x2xi64>, tensor<16x2xf32> -> tensor<16x2xi64>, tensor<8xi64>
  %s2, %c2 = dsc.moe_slots %experts priority %priority, capacity = 3
      : tensor<16x2xi64>, tensor<16x2xf32> -> tensor<16x2xi64>, tensor<8xi64>
  // CHECK: %[[D:.*]] = dsc.moe_dispatch %{{.*}}, %[[S]] : tensor<16x32xf32>, tensor<16x2xi64> -> tensor<4x5x32xf32>
  %d = dsc.moe_dispatch %x, %slots : tensor<16x32xf32>, tensor<16x2xi64> -> tensor<4x5x32xf32>
  // CHECK: dsc.moe_dispatch %{{.*}}, %[[S]], %{{.*}} : tensor<16x32xf32>, tensor<16x2xi64>, tensor<16x2xf32> -> tensor<4x5x32xf32>
  %dw = dsc.moe_dispatch %x, %slots, %gates
      : tensor<16x32xf32>, tensor<16x2xi64>, tensor<16x2xf32> -> tensor<4x5x32xf32>
  // CHECK: dsc.moe_combine %[[D]], %[[S]], %{{.*}} : tensor<4x5x32xf32>, tensor<16x2xi64>, tensor<16x2xf32> -> tensor<16x32xf32>
  %y = dsc.moe_combine %d, %slots, %gates
      : tensor<4x5x32xf32>, tensor<16x2xi64>, tensor<16x2xf32> -> tensor<16x32xf32>
  // CHECK: dsc.moe_combine %{{.*}}, %[[S]] : tensor<4x5x32xf32>, tensor<16x2xi64> -> tensor<16x32xf32>
  %y1 = dsc.moe_combine %dw, %slots : tensor<4x5x32xf32>, tensor<16x2xi64> -> tensor<16x32xf32>
  // CHECK: dsc.moe_route_dot %{{.*}}, %[[D]], %[[S]] : tensor<16x32xf32>, tensor<4x5x32xf32>, tensor<16x2xi64> -> tensor<16x2xf32>
  %g = dsc.moe_route_dot %y1, %d, %slots
      : tensor<16x32xf32>, tensor<4x5x32xf32>, tensor<16x2xi64> -> tensor<16x2xf32>
  return %y, %g : tensor<16x32xf32>, tensor<16x2xf32>
}

// Multi-tensor optimizer updates and the sum of squares of many tensors.
// CHECK-LABEL: func.func @optimizer
func.func @optimizer(%w: tensor<4x8xf32>, %b: tensor<8xf32>, %gw: tensor<4x8xbf16>,
                     %gb: tensor<8xbf16>, %cw: tensor<4x8xbf16>, %cb: tensor<8xbf16>,
                     %s: tensor<f32>, %skip: tensor<i1>)
    -> (tensor<4x8xf32>, tensor<8xbf16>, tensor<8xf32>, tensor<f32>) {
  // CHECK: %{{.*}}:2, %{{.*}}:2, %{{.*}}:2, %{{.*}}:2 = dsc.adam_update params(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32>) grads(%{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<8xbf16>) exp_avgs({{.*}}) exp_avg_sqs({{.*}}) copies() lr(%{{.*}} : tensor<f32>) step(%{{.*}} : tensor<f32>) unscale(%{{.*}} : tensor<f32>) clip_coef(%{{.*}} : tensor<f32>) {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, decoupled, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64} -> (tensor<4x8xf32>, tensor<8xf32>), (tensor<4x8xf32>, tensor<8xf32>), (tensor<4x8xf32>, tensor<8xf32>) copies(tensor<4x8xbf16>, tensor<8xbf16>)
  %a:8 = dsc.adam_update params(%w, %b : tensor<4x8xf32>, tensor<8xf32>)
      grads(%gw, %gb : tensor<4x8xbf16>, tensor<8xbf16>)
      exp_avgs(%w, %b : tensor<4x8xf32>, tensor<8xf32>)
      exp_avg_sqs(%w, %b : tensor<4x8xf32>, tensor<8xf32>) copies()
      lr(%s : tensor<f32>) step(%s : tensor<f32>) unscale(%s : tensor<f32>)
      clip_coef(%s : tensor<f32>)
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.01, decoupled}
      -> (tensor<4x8xf32>, tensor<8xf32>), (tensor<4x8xf32>, tensor<8xf32>),
         (tensor<4x8xf32>, tensor<8xf32>) copies(tensor<4x8xbf16>, tensor<8xbf16>)
  // A step that may be skipped reads the old 16-bit copies.
  // CHECK: dsc.adam_update {{.*}} copies(%{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<8xbf16>) {{.*}} skip(%{{.*}} : tensor<i1>) {{.*}}constant_lr = 1.000000e-01
  %k:8 = dsc.adam_update params(%w, %b : tensor<4x8xf32>, tensor<8xf32>)
      grads(%gw, %gb : tensor<4x8xbf16>, tensor<8xbf16>)
      exp_avgs(%w, %b : tensor<4x8xf32>, tensor<8xf32>)
      exp_avg_sqs(%w, %b : tensor<4x8xf32>, tensor<8xf32>)
      copies(%cw, %cb : tensor<4x8xbf16>, tensor<8xbf16>)
      lr(%s : tensor<f32>) step(%s : tensor<f32>) skip(%skip : tensor<i1>)
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0, constant_lr = 0.1}
      -> (tensor<4x8xf32>, tensor<8xf32>), (tensor<4x8xf32>, tensor<8xf32>),
         (tensor<4x8xf32>, tensor<8xf32>) copies(tensor<4x8xbf16>, tensor<8xbf16>)
  // CHECK: dsc.sgd_update params(%{{.*}} : tensor<8xf32>) grads(%{{.*}} : tensor<8xf32>) momentum_buffers(%{{.*}} : tensor<8xf32>) copies() lr(%{{.*}} : tensor<f32>) {momentum = 9.000000e-01 : f64, weight_decay = 0.000000e+00 : f64} -> (tensor<8xf32>) momentum_buffers(tensor<8xf32>)
  %p, %buf = dsc.sgd_update params(%b : tensor<8xf32>) grads(%b : tensor<8xf32>)
      momentum_buffers(%b : tensor<8xf32>) copies() lr(%s : tensor<f32>)
      {momentum = 0.9, weight_decay = 0.0} -> (tensor<8xf32>) momentum_buffers(tensor<8xf32>)
  // CHECK: dsc.sgd_update params(%{{.*}} : tensor<8xf32>) grads(%{{.*}} : tensor<8xf32>) momentum_buffers() copies() lr(%{{.*}} : tensor<f32>) {momentum = 0.000000e+00 : f64, weight_decay = 0.000000e+00 : f64} -> (tensor<8xf32>)
  %q = dsc.sgd_update params(%b : tensor<8xf32>) grads(%b : tensor<8xf32>)
      momentum_buffers() copies() lr(%s : tensor<f32>)
      {momentum = 0.0, weight_decay = 0.0} -> (tensor<8xf32>)
  // SGD without momentum writing 16-bit copies (the result groups are named).
  // CHECK: %{{.*}}, %{{.*}} = dsc.sgd_update params(%{{.*}} : tensor<8xf32>) grads(%{{.*}} : tensor<8xbf16>) momentum_buffers() copies(%{{.*}} : tensor<8xbf16>) lr(%{{.*}} : tensor<f32>) skip(%{{.*}} : tensor<i1>) {momentum = 0.000000e+00 : f64, weight_decay = 0.000000e+00 : f64} -> (tensor<8xf32>) copies(tensor<8xbf16>)
  %r, %rc = dsc.sgd_update params(%b : tensor<8xf32>) grads(%gb : tensor<8xbf16>)
      momentum_buffers() copies(%cb : tensor<8xbf16>) lr(%s : tensor<f32>)
      skip(%skip : tensor<i1>) {momentum = 0.0, weight_decay = 0.0}
      -> (tensor<8xf32>) copies(tensor<8xbf16>)
  // CHECK: dsc.sum_squares(%{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<8xbf16>) scale(%{{.*}} : tensor<f32>) : tensor<f32>
  %n = dsc.sum_squares(%gw, %gb : tensor<4x8xbf16>, tensor<8xbf16>) scale(%s : tensor<f32>) : tensor<f32>
  // CHECK: dsc.sum_squares(%{{.*}} : tensor<8xf32>) : tensor<f32>
  %m = dsc.sum_squares(%b : tensor<8xf32>) : tensor<f32>
  return %a#0, %k#7, %buf, %n : tensor<4x8xf32>, tensor<8xbf16>, tensor<8xf32>, tensor<f32>
}

// -----

// Memory tiers (ZeRO-Offload): a state on the host, and the copies that
// bring the update's inputs there and its 16-bit result back.
// CHECK: dsc.state master @w.master on host : tensor<8xf32>
dsc.state master @"w.master" on host : tensor<8xf32>
// CHECK: dsc.state optimizer @w.exp_avg on host : tensor<8xf32>
dsc.state optimizer @"w.exp_avg" on host : tensor<8xf32>
// CHECK: dsc.state parameter @w : tensor<8xbf16>
dsc.state parameter @w on device : tensor<8xbf16>
// CHECK-LABEL: func.func @tiers
func.func @tiers(%g: tensor<8xbf16>) -> tensor<8xbf16> {
  // CHECK: dsc.transfer %{{.*}} to host : tensor<8xbf16>
  %h = dsc.transfer %g to host : tensor<8xbf16>
  // CHECK: dsc.transfer %{{.*}} to device : tensor<8xbf16>
  %d = dsc.transfer %h to device : tensor<8xbf16>
  return %d : tensor<8xbf16>
}

// Pipeline parallelism's transfers between neighbouring stages, and the
// pipeline group (the mesh's outermost dimension).
// CHECK-LABEL: module attributes {dsc.pipeline_parallel_size = 2 : i64, dsc.world_size = 4 : i64}
module attributes {dsc.pipeline_parallel_size = 2 : i64, dsc.world_size = 4 : i64} {
  // CHECK-LABEL: func.func @pipeline_transfers
  func.func @pipeline_transfers(%x: tensor<2x8xf32>, %loss: tensor<f32>)
      -> (tensor<f32>, tensor<2x8xf32>, tensor<f32>) {
    // CHECK: dsc.pipeline_send %{{.*}} to next micro_batch 1 : tensor<2x8xf32>
    %z = dsc.pipeline_send %x to next micro_batch 1 : tensor<2x8xf32>
    // CHECK: dsc.pipeline_recv from previous micro_batch 0 : tensor<2x8xf32>
    %y = dsc.pipeline_recv from previous micro_batch 0 : tensor<2x8xf32>
    // CHECK: dsc.all_reduce %{{.*}} over pipeline : tensor<f32>
    %t = dsc.all_reduce %loss over pipeline : tensor<f32>
    return %z, %y, %t : tensor<f32>, tensor<2x8xf32>, tensor<f32>
  }
}

// A sum over some stages of the pipeline group: a weight tied between the
// first and the last of 4 stages.
// CHECK-LABEL: module attributes {dsc.pipeline_parallel_size = 4 : i64, dsc.pipeline_stage = 3 : i64, dsc.world_size = 4 : i64}
module attributes {dsc.pipeline_parallel_size = 4 : i64, dsc.pipeline_stage = 3 : i64, dsc.world_size = 4 : i64} {
  // CHECK-LABEL: func.func @tied_stages
  func.func @tied_stages(%g: tensor<16x4xf32>) -> tensor<16x4xf32> {
    // CHECK: dsc.all_reduce %{{.*}} over pipeline stages [0, 3] : tensor<16x4xf32>
    %s = dsc.all_reduce %g over pipeline stages [0, 3] : tensor<16x4xf32>
    return %s : tensor<16x4xf32>
  }
}

// A dropout of a rank's part of each sample: half of each of 2 samples.
// CHECK-LABEL: func.func @dropout_part
func.func @dropout_part(%x: tensor<2x4x32xf32>, %key: tensor<4xi64>, %r: tensor<1xi64>) -> tensor<2x4x32xf32> {
  // CHECK: dsc.dropout %{{.*}}, %{{.*}}, p = 1.000000e-01, seed = 3, samples = 2 part %{{.*}} of 2 : tensor<2x4x32xf32>
  %d = dsc.dropout %x, %key, p = 0.1, seed = 3, samples = 2 part %r of 2 : tensor<2x4x32xf32>
  return %d : tensor<2x4x32xf32>
}
