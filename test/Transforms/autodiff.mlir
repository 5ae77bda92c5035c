// RUN: dsc-opt %s --dsc-autodiff --split-input-file | FileCheck %s

// Linear + cross-entropy: the loss, then one gradient per parameter in
// dsc.state order (buffers have none); a parameter the loss does not use
// gets zeros. The logits' gradient is one dsc.cross_entropy_grad, its
// scale the summed loss's dy on every row.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: -> (tensor<f32> {dsc.output = "loss"},
// CHECK-SAME: tensor<4x8xf32> {dsc.gradient_of = @fc.weight, dsc.output = "grad.fc.weight"},
// CHECK-SAME: tensor<4xf32> {dsc.gradient_of = @fc.bias, dsc.output = "grad.fc.bias"},
// CHECK-SAME: tensor<3xf32> {dsc.gradient_of = @unused, dsc.output = "grad.unused"})
// CHECK: %[[LOGITS:.*]] = dsc.linear %[[X:.*]], %{{.*}}, %{{.*}} :
// CHECK: %[[LOSS:.*]] = dsc.cross_entropy %[[LOGITS]], %[[Y:.*]] reduction = sum
// CHECK: %[[ONE:.*]] = dsc.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[SCALE:.*]] = dsc.broadcast %[[ONE]] : tensor<f32> -> tensor<2xf32>
// CHECK: %[[DLOGITS:.*]] = dsc.cross_entropy_grad %[[LOGITS]], %[[Y]], %[[SCALE]] : tensor<2x4xf32>, tensor<2xi64>, tensor<2xf32>
// CHECK: %[[DW:.*]] = dsc.matmul %[[DLOGITS]], %[[X]] transpose_lhs : tensor<2x4xf32>, tensor<2x8xf32>
// CHECK: %[[DB:.*]] = dsc.reduce_sum %[[DLOGITS]], dims = [0] : tensor<2x4xf32>
// CHECK: %[[ZERO:.*]] = dsc.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[DU:.*]] = dsc.broadcast %[[ZERO]] : tensor<f32> -> tensor<3xf32>
// CHECK: return %[[LOSS]], %[[DW]], %[[DB]], %[[DU]]
dsc.state parameter @"fc.weight" : tensor<4x8xf32>
dsc.state buffer @scale : tensor<f32>
dsc.state parameter @"fc.bias" : tensor<4xf32>
dsc.state parameter @unused : tensor<3xf32>
func.func @linear(%x: tensor<2x8xf32> {dsc.input = "x"}, %y: tensor<2xi64> {dsc.input = "y"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @"fc.weight" : tensor<4x8xf32>
  %b = dsc.load @"fc.bias" : tensor<4xf32>
  %logits = dsc.linear %x, %w, %b : tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>
  %loss = dsc.cross_entropy %logits, %y reduction = sum : tensor<2x4xf32>, tensor<2xi64>
  return %loss : tensor<f32>
}

// -----

// A tied parameter loaded twice: the cotangents of both loads add up.
// CHECK-LABEL: func.func @tied_loss
// CHECK: %[[A:.*]] = dsc.load @tied
// CHECK: %[[B:.*]] = dsc.load @tied
// CHECK: dsc.constant dense<1.000000e+00>
// CHECK: %[[DA:.*]] = dsc.mul %{{.*}}, %[[B]]
// CHECK: %[[DB:.*]] = dsc.mul %{{.*}}, %[[A]]
// CHECK: %[[SUM:.*]] = dsc.add %[[DB]], %[[DA]]
// CHECK: return %{{.*}}, %[[SUM]]
dsc.state parameter @tied : tensor<4xf32>
func.func @tied_loss() -> (tensor<f32> {dsc.output = "loss"}) {
  %a = dsc.load @tied : tensor<4xf32>
  %b = dsc.load @tied : tensor<4xf32>
  %p = dsc.mul %a, %b : tensor<4xf32>, tensor<4xf32>
  %loss = dsc.reduce_sum %p, dims = [0] : tensor<4xf32>
  return %loss : tensor<f32>
}

// -----

// Broadcasting: the cotangent of the [4] operand is summed over the rows.
// CHECK-LABEL: func.func @broadcast
// CHECK: %[[D1:.*]] = dsc.sub %{{.*}}, %{{.*}} : tensor<f32>, tensor<3x4xf32>
// CHECK: %[[DS:.*]] = dsc.mul %{{.*}}, %[[D1]] : tensor<3x4xf32>, tensor<3x4xf32>
// CHECK: %[[DB:.*]] = dsc.reduce_sum %[[DS]], dims = [0] : tensor<3x4xf32>
// CHECK: return %{{.*}}, %[[DB]] : tensor<f32>, tensor<4xf32>
dsc.state parameter @bias : tensor<4xf32>
func.func @broadcast(%x: tensor<3x4xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %b = dsc.load @bias : tensor<4xf32>
  %s = dsc.add %x, %b : tensor<3x4xf32>, tensor<4xf32>
  %t = dsc.tanh %s : tensor<3x4xf32>
  %loss = dsc.reduce_mean %t, dims = [0, 1] : tensor<3x4xf32>
  return %loss : tensor<f32>
}

// -----

// Activity: only values that depend on a parameter get cotangents, so a
// strided slice of an input (not differentiable) is no error.
// CHECK-LABEL: func.func @activity
// CHECK: %[[S:.*]] = dsc.slice %{{.*}} step = 2
// CHECK-NOT: dsc.slice
// CHECK-NOT: dsc.concat
// CHECK: %[[DW:.*]] = dsc.mul %{{.*}}, %[[S]]
// CHECK-NEXT: return %{{.*}}, %[[DW]]
dsc.state parameter @w : tensor<2x3xf32>
func.func @activity(%x: tensor<2x6xf32> {dsc.input = "x"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<2x3xf32>
  %s = dsc.slice %x, dim = 1, start = 0, end = 6, step = 2 : tensor<2x6xf32>
  %p = dsc.mul %s, %w : tensor<2x3xf32>, tensor<2x3xf32>
  %loss = dsc.reduce_sum %p, dims = [0, 1] : tensor<2x3xf32>
  return %loss : tensor<f32>
}

// -----

// matmul with transpose_rhs and a broadcast batch: d rhs = dC^T q, summed
// over the batch the rhs was broadcast along.
// CHECK-LABEL: func.func @matmul
// CHECK: %[[DC:.*]] = dsc.broadcast %{{.*}} -> tensor<2x5x4xf32>
// CHECK: %[[DK:.*]] = dsc.matmul %[[DC]], %[[Q:.*]] transpose_lhs : tensor<2x5x4xf32>, tensor<2x5x3xf32>
// CHECK: %[[SUM:.*]] = dsc.reduce_sum %[[DK]], dims = [0] : tensor<2x4x3xf32>
// CHECK: return %{{.*}}, %[[SUM]]
dsc.state parameter @k : tensor<4x3xf32>
func.func @matmul(%q: tensor<2x5x3xf32> {dsc.input = "q"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %k = dsc.load @k : tensor<4x3xf32>
  %s = dsc.matmul %q, %k transpose_rhs : tensor<2x5x3xf32>, tensor<4x3xf32>
  %loss = dsc.reduce_sum %s, dims = [0, 1, 2] : tensor<2x5x4xf32>
  return %loss : tensor<f32>
}

// -----

// gelu's derivative is dsc.gelu_grad; an embedding's is a scatter-add into
// zeros, with the padding row's cotangents masked out.
// CHECK-LABEL: func.func @embedding
// CHECK: %[[E:.*]] = dsc.embedding %{{.*}}, %[[T:.*]] padding_idx = 0
// CHECK: %[[D:.*]] = dsc.gelu_grad erf %[[E]] : tensor<2x3x4xf32>
// CHECK: %[[DE:.*]] = dsc.mul %{{.*}}, %[[D]]
// CHECK: %[[COL:.*]] = dsc.reshape %[[T]] : tensor<2x3xi64> -> tensor<6x1xi64>
// CHECK: %[[ROWS:.*]] = dsc.reshape %[[DE]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK: %[[PAD:.*]] = dsc.compare eq, %[[COL]], %{{.*}} : tensor<6x1xi64>, tensor<i64>
// CHECK: %[[MASKED:.*]] = dsc.select %[[PAD]], %{{.*}}, %[[ROWS]]
// CHECK: %[[IDX:.*]] = dsc.broadcast %[[COL]] : tensor<6x1xi64> -> tensor<6x4xi64>
// CHECK: %[[ZEROS:.*]] = dsc.broadcast %{{.*}} : tensor<f32> -> tensor<10x4xf32>
// CHECK: %[[DT:.*]] = dsc.scatter_add %[[ZEROS]], %[[IDX]], %[[MASKED]], dim = 0
// CHECK: return %{{.*}}, %[[DT]]
dsc.state parameter @table : tensor<10x4xf32>
func.func @embedding(%t: tensor<2x3xi64> {dsc.input = "tokens"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @table : tensor<10x4xf32>
  %e = dsc.embedding %w, %t padding_idx = 0 : tensor<10x4xf32>, tensor<2x3xi64>
  %g = dsc.gelu erf %e : tensor<2x3x4xf32>
  %loss = dsc.reduce_sum %g, dims = [0, 1, 2] : tensor<2x3x4xf32>
  return %loss : tensor<f32>
}

// -----

// A table used as an embedding and as the output projection (GPT-2's tied
// wte): the embedding's rows are scatter-added into the projection's
// gradient, with no table of zeros and no separate sum.
// CHECK-LABEL: func.func @tied_embedding
// CHECK: %[[DW:.*]] = dsc.matmul %{{.*}}, %{{.*}} transpose_lhs : tensor<3x8xf32>, tensor<3x4xf32>
// CHECK-NOT: tensor<f32> -> tensor<8x4xf32>
// CHECK: %[[DT:.*]] = dsc.scatter_add %[[DW]], %{{.*}}, %{{.*}}, dim = 0 : tensor<8x4xf32>, tensor<3x4xi64>, tensor<3x4xf32>
// CHECK-NOT: dsc.add
// CHECK: return %{{.*}}, %[[DT]]
dsc.state parameter @wte : tensor<8x4xf32>
func.func @tied_embedding(%ids: tensor<3xi64> {dsc.input = "ids"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @wte : tensor<8x4xf32>
  %h = dsc.embedding %w, %ids : tensor<8x4xf32>, tensor<3xi64>
  %logits = dsc.linear %h, %w : tensor<3x4xf32>, tensor<8x4xf32>
  %loss = dsc.cross_entropy %logits, %ids : tensor<3x8xf32>, tensor<3xi64>
  return %loss : tensor<f32>
}

// -----

// A scatter-add into zeros that is the cotangent of two values (an add
// passes it to both operands): folded into @p's other term, it stays for
// @q, whose gradient it is.
// CHECK-LABEL: func.func @shared_cotangent
// CHECK: %[[Z:.*]] = dsc.broadcast %{{.*}} : tensor<f32> -> tensor<8x4xf32>
// CHECK: %[[DQ:.*]] = dsc.scatter_add %[[Z]], %[[I:.*]], %[[S:.*]], dim = 0
// CHECK: %[[DP:.*]] = dsc.scatter_add %{{.*}}, %[[I]], %[[S]], dim = 0
// CHECK: return %{{.*}}, %[[DP]], %[[DQ]]
dsc.state parameter @p : tensor<8x4xf32>
dsc.state parameter @q : tensor<8x4xf32>
func.func @shared_cotangent(%ids: tensor<3xi64> {dsc.input = "ids"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %a = dsc.load @p : tensor<8x4xf32>
  %c = dsc.load @q : tensor<8x4xf32>
  %t = dsc.add %a, %c : tensor<8x4xf32>, tensor<8x4xf32>
  %h = dsc.embedding %t, %ids : tensor<8x4xf32>, tensor<3xi64>
  %logits = dsc.linear %h, %a : tensor<3x4xf32>, tensor<8x4xf32>
  %loss = dsc.cross_entropy %logits, %ids : tensor<3x8xf32>, tensor<3xi64>
  return %loss : tensor<f32>
}

// -----

// World size 2: every gradient is summed over the ranks; the all-reduce in
// the forward (the data-parallel loss) passes its cotangent through.
// CHECK-LABEL: func.func @data_parallel
// CHECK: %[[S:.*]] = dsc.all_reduce %{{.*}} : tensor<f32>
// CHECK: %[[N:.*]] = dsc.constant dense<2.000000e+00>
// CHECK: %[[LOSS:.*]] = dsc.div %[[S]], %[[N]]
// CHECK: %[[ONE:.*]] = dsc.constant dense<1.000000e+00>
// CHECK: %[[DS:.*]] = dsc.div %[[ONE]], %[[N]] : tensor<f32>, tensor<f32>
// CHECK-NOT: dsc.all_reduce %[[DS]]
// CHECK: %[[R:.*]] = dsc.reshape %[[DS]] : tensor<f32> -> tensor<1xf32>
// CHECK: %[[G:.*]] = dsc.broadcast %[[R]] : tensor<1xf32> -> tensor<4xf32>
// CHECK: %[[DG:.*]] = dsc.all_reduce %[[G]] : tensor<4xf32>
// CHECK: return %[[LOSS]], %[[DG]]
module attributes {dsc.world_size = 2 : i64} {
  dsc.state parameter @p : tensor<4xf32>
  func.func @data_parallel() -> (tensor<f32> {dsc.output = "loss"}) {
    %p = dsc.load @p : tensor<4xf32>
    %s = dsc.reduce_sum %p, dims = [0] : tensor<4xf32>
    %g = dsc.all_reduce %s : tensor<f32>
    %n = dsc.constant dense<2.0> : tensor<f32>
    %loss = dsc.div %g, %n : tensor<f32>, tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Dropout's cotangent goes through a dropout with the same key, p and seed
// (the same mask, drawn again); a causal mask's through a causal mask
// filling zeros.
// CHECK-LABEL: func.func @dropout
// CHECK: %[[K:.*]] = dsc.step_key
// CHECK: %[[D:.*]] = dsc.dropout %{{.*}}, %[[K]], p = 1.000000e-01, seed = 7, samples = 4
// CHECK: %[[DD:.*]] = dsc.dropout %{{.*}}, %[[K]], p = 1.000000e-01, seed = 7, samples = 4
// CHECK: dsc.causal_mask %[[DD]] {fill_value = 0.000000e+00 : f64}
dsc.state parameter @s : tensor<4x4xf32>
func.func @dropout() -> (tensor<f32> {dsc.output = "loss"}) {
  %s = dsc.load @s : tensor<4x4xf32>
  %m = dsc.causal_mask %s : tensor<4x4xf32>
  %key = dsc.step_key : tensor<4xi64>
  %d = dsc.dropout %m, %key, p = 0.1, seed = 7, samples = 4 : tensor<4x4xf32>
  %loss = dsc.reduce_max %d, dims = [0, 1] : tensor<4x4xf32>
  return %loss : tensor<f32>
}

// -----

// Graphs whose result is not a single "loss" are left alone.
// CHECK-LABEL: func.func @eval
// CHECK-SAME: -> (tensor<4xf32> {dsc.output = "y"})
// CHECK-NEXT: dsc.load
// CHECK-NEXT: dsc.mul
// CHECK-NEXT: return
dsc.state parameter @p : tensor<4xf32>
func.func @eval(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<4xf32> {dsc.output = "y"}) {
  %p = dsc.load @p : tensor<4xf32>
  %y = dsc.mul %x, %p : tensor<4xf32>, tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// cos and sin: d cos(x) = -sin(x) dy, d sin(x) = cos(x) dy.
// CHECK-LABEL: func.func @trig
// CHECK: %[[W:.*]] = dsc.load @t
// CHECK: %[[DY:.*]] = dsc.broadcast
// CHECK-NEXT: %[[COS:.*]] = dsc.cos %[[W]] : tensor<4xf32>
// CHECK-NEXT: %[[DSIN:.*]] = dsc.mul %[[DY]], %[[COS]]
// CHECK-NEXT: %[[NEG:.*]] = dsc.neg %[[DY]] : tensor<4xf32>
// CHECK-NEXT: %[[SIN:.*]] = dsc.sin %[[W]] : tensor<4xf32>
// CHECK-NEXT: %[[DCOS:.*]] = dsc.mul %[[NEG]], %[[SIN]]
// CHECK-NEXT: %[[SUM:.*]] = dsc.add %[[DSIN]], %[[DCOS]]
// CHECK: return %{{.*}}, %[[SUM]]
dsc.state parameter @t : tensor<4xf32>
func.func @trig() -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @t : tensor<4xf32>
  %c = dsc.cos %w : tensor<4xf32>
  %s = dsc.sin %w : tensor<4xf32>
  %a = dsc.add %c, %s : tensor<4xf32>, tensor<4xf32>
  %loss = dsc.reduce_sum %a, dims = [0] : tensor<4xf32>
  return %loss : tensor<f32>
}

// -----

// A mean cross-entropy's rows share dy / the number of counted targets;
// ignore_index carries over. With reduction = none each row's scale is its
// own dy.
// CHECK-LABEL: func.func @mean_loss
// CHECK: %[[COUNT:.*]] = dsc.reduce_sum
// CHECK: %[[SHARE:.*]] = dsc.div %{{.*}}, %[[COUNT]] : tensor<f32>, tensor<f32>
// CHECK: %[[SCALE:.*]] = dsc.broadcast %[[SHARE]] : tensor<f32> -> tensor<2x3xf32>
// CHECK: dsc.cross_entropy_grad %{{.*}}, %{{.*}}, %[[SCALE]] ignore_index = 0 : tensor<2x3x4xf32>, tensor<2x3xi64>, tensor<2x3xf32>
dsc.state parameter @w : tensor<2x3x4xf32>
func.func @mean_loss(%y: tensor<2x3xi64> {dsc.input = "y"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<2x3x4xf32>
  %loss = dsc.cross_entropy %w, %y ignore_index = 0 : tensor<2x3x4xf32>, tensor<2x3xi64>
  return %loss : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @per_token_loss
// CHECK: %[[TOK:.*]] = dsc.cross_entropy %[[W:.*]], %[[Y:.*]] reduction = none
// CHECK: %[[DSUM:.*]] = dsc.broadcast %{{.*}} : tensor<1xf32> -> tensor<3xf32>
// CHECK: dsc.cross_entropy_grad %[[W]], %[[Y]], %[[DSUM]] : tensor<3x4xf32>, tensor<3xi64>, tensor<3xf32>
dsc.state parameter @w : tensor<3x4xf32>
func.func @per_token_loss(%y: tensor<3xi64> {dsc.input = "y"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<3x4xf32>
  %tok = dsc.cross_entropy %w, %y reduction = none : tensor<3x4xf32>, tensor<3xi64>
  %loss = dsc.reduce_sum %tok, dims = [0] : tensor<3xf32>
  return %loss : tensor<f32>
}
