// A four-block causal transformer (batch 2, 8 tokens, width 4, one head)
// with learned positions and a tied head: three-blocks.mlir with one
// block more, enough for 2 model chunks on each of 2 pipeline ranks.
dsc.state parameter @wte : tensor<16x4xf32>
dsc.state parameter @wpe : tensor<8x4xf32>
dsc.state parameter @"h.0.ln.weight" : tensor<4xf32>
dsc.state parameter @"h.0.attn.weight" : tensor<12x4xf32>
dsc.state parameter @"h.0.mlp.weight" : tensor<4x4xf32>
dsc.state parameter @"h.1.ln.weight" : tensor<4xf32>
dsc.state parameter @"h.1.attn.weight" : tensor<12x4xf32>
dsc.state parameter @"h.1.mlp.weight" : tensor<4x4xf32>
dsc.state parameter @"h.2.ln.weight" : tensor<4xf32>
dsc.state parameter @"h.2.attn.weight" : tensor<12x4xf32>
dsc.state parameter @"h.2.mlp.weight" : tensor<4x4xf32>
dsc.state parameter @"h.3.ln.weight" : tensor<4xf32>
dsc.state parameter @"h.3.attn.weight" : tensor<12x4xf32>
dsc.state parameter @"h.3.mlp.weight" : tensor<4x4xf32>
dsc.state parameter @"ln_f.weight" : tensor<4xf32>

func.func @forward(%tokens: tensor<2x8xi64> {dsc.input = "tokens"},
                   %targets: tensor<2x8xi64> {dsc.input = "targets"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %wte = dsc.load @wte : tensor<16x4xf32>
  %tok = dsc.embedding %wte, %tokens : tensor<16x4xf32>, tensor<2x8xi64>
  %wpe = dsc.load @wpe : tensor<8x4xf32>
  %positions = dsc.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi64>
  %pos = dsc.embedding %wpe, %positions : tensor<8x4xf32>, tensor<8xi64>
  %x0 = dsc.add %tok, %pos : tensor<2x8x4xf32>, tensor<8x4xf32>
  %b0_w = dsc.load @"h.0.ln.weight" : tensor<4xf32>
  %b0_n = dsc.layer_norm %x0 weight(%b0_w : tensor<4xf32>) : tensor<2x8x4xf32>
  %b0_qw = dsc.load @"h.0.attn.weight" : tensor<12x4xf32>
  %b0_qkv = dsc.linear %b0_n, %b0_qw : tensor<2x8x4xf32>, tensor<12x4xf32>
  %b0_q = dsc.slice %b0_qkv, dim = 2, start = 0, end = 4, step = 1 : tensor<2x8x12xf32>
  %b0_k = dsc.slice %b0_qkv, dim = 2, start = 4, end = 8, step = 1 : tensor<2x8x12xf32>
  %b0_v = dsc.slice %b0_qkv, dim = 2, start = 8, end = 12, step = 1 : tensor<2x8x12xf32>
  %b0_s = dsc.matmul %b0_q, %b0_k transpose_rhs : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %b0_m = dsc.causal_mask %b0_s : tensor<2x8x8xf32>
  %b0_p = dsc.softmax %b0_m, dim = 2 : tensor<2x8x8xf32>
  %b0_a = dsc.matmul %b0_p, %b0_v : tensor<2x8x8xf32>, tensor<2x8x4xf32>
  %b0_f = dsc.reshape %b0_a : tensor<2x8x4xf32> -> tensor<16x4xf32>
  %b0_ow = dsc.load @"h.0.mlp.weight" : tensor<4x4xf32>
  %b0_o = dsc.linear %b0_f, %b0_ow : tensor<16x4xf32>, tensor<4x4xf32>
  %b0_r = dsc.reshape %b0_o : tensor<16x4xf32> -> tensor<2x8x4xf32>
  %x1 = dsc.add %x0, %b0_r : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %b1_w = dsc.load @"h.1.ln.weight" : tensor<4xf32>
  %b1_n = dsc.layer_norm %x1 weight(%b1_w : tensor<4xf32>) : tensor<2x8x4xf32>
  %b1_qw = dsc.load @"h.1.attn.weight" : tensor<12x4xf32>
  %b1_qkv = dsc.linear %b1_n, %b1_qw : tensor<2x8x4xf32>, tensor<12x4xf32>
  %b1_q = dsc.slice %b1_qkv, dim = 2, start = 0, end = 4, step = 1 : tensor<2x8x12xf32>
  %b1_k = dsc.slice %b1_qkv, dim = 2, start = 4, end = 8, step = 1 : tensor<2x8x12xf32>
  %b1_v = dsc.slice %b1_qkv, dim = 2, start = 8, end = 12, step = 1 : tensor<2x8x12xf32>
  %b1_s = dsc.matmul %b1_q, %b1_k transpose_rhs : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %b1_m = dsc.causal_mask %b1_s : tensor<2x8x8xf32>
  %b1_p = dsc.softmax %b1_m, dim = 2 : tensor<2x8x8xf32>
  %b1_a = dsc.matmul %b1_p, %b1_v : tensor<2x8x8xf32>, tensor<2x8x4xf32>
  %b1_f = dsc.reshape %b1_a : tensor<2x8x4xf32> -> tensor<16x4xf32>
  %b1_ow = dsc.load @"h.1.mlp.weight" : tensor<4x4xf32>
  %b1_o = dsc.linear %b1_f, %b1_ow : tensor<16x4xf32>, tensor<4x4xf32>
  %b1_r = dsc.reshape %b1_o : tensor<16x4xf32> -> tensor<2x8x4xf32>
  %x2 = dsc.add %x1, %b1_r : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %b2_w = dsc.load @"h.2.ln.weight" : tensor<4xf32>
  %b2_n = dsc.layer_norm %x2 weight(%b2_w : tensor<4xf32>) : tensor<2x8x4xf32>
  %b2_qw = dsc.load @"h.2.attn.weight" : tensor<12x4xf32>
  %b2_qkv = dsc.linear %b2_n, %b2_qw : tensor<2x8x4xf32>, tensor<12x4xf32>
  %b2_q = dsc.slice %b2_qkv, dim = 2, start = 0, end = 4, step = 1 : tensor<2x8x12xf32>
  %b2_k = dsc.slice %b2_qkv, dim = 2, start = 4, end = 8, step = 1 : tensor<2x8x12xf32>
  %b2_v = dsc.slice %b2_qkv, dim = 2, start = 8, end = 12, step = 1 : tensor<2x8x12xf32>
  %b2_s = dsc.matmul %b2_q, %b2_k transpose_rhs : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %b2_m = dsc.causal_mask %b2_s : tensor<2x8x8xf32>
  %b2_p = dsc.softmax %b2_m, dim = 2 : tensor<2x8x8xf32>
  %b2_a = dsc.matmul %b2_p, %b2_v : tensor<2x8x8xf32>, tensor<2x8x4xf32>
  %b2_f = dsc.reshape %b2_a : tensor<2x8x4xf32> -> tensor<16x4xf32>
  %b2_ow = dsc.load @"h.2.mlp.weight" : tensor<4x4xf32>
  %b2_o = dsc.linear %b2_f, %b2_ow : tensor<16x4xf32>, tensor<4x4xf32>
  %b2_r = dsc.reshape %b2_o : tensor<16x4xf32> -> tensor<2x8x4xf32>
  %x3 = dsc.add %x2, %b2_r : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %b3_w = dsc.load @"h.3.ln.weight" : tensor<4xf32>
  %b3_n = dsc.layer_norm %x3 weight(%b3_w : tensor<4xf32>) : tensor<2x8x4xf32>
  %b3_qw = dsc.load @"h.3.attn.weight" : tensor<12x4xf32>
  %b3_qkv = dsc.linear %b3_n, %b3_qw : tensor<2x8x4xf32>, tensor<12x4xf32>
  %b3_q = dsc.slice %b3_qkv, dim = 2, start = 0, end = 4, step = 1 : tensor<2x8x12xf32>
  %b3_k = dsc.slice %b3_qkv, dim = 2, start = 4, end = 8, step = 1 : tensor<2x8x12xf32>
  %b3_v = dsc.slice %b3_qkv, dim = 2, start = 8, end = 12, step = 1 : tensor<2x8x12xf32>
  %b3_s = dsc.matmul %b3_q, %b3_k transpose_rhs : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %b3_m = dsc.causal_mask %b3_s : tensor<2x8x8xf32>
  %b3_p = dsc.softmax %b3_m, dim = 2 : tensor<2x8x8xf32>
  %b3_a = dsc.matmul %b3_p, %b3_v : tensor<2x8x8xf32>, tensor<2x8x4xf32>
  %b3_f = dsc.reshape %b3_a : tensor<2x8x4xf32> -> tensor<16x4xf32>
  %b3_ow = dsc.load @"h.3.mlp.weight" : tensor<4x4xf32>
  %b3_o = dsc.linear %b3_f, %b3_ow : tensor<16x4xf32>, tensor<4x4xf32>
  %b3_r = dsc.reshape %b3_o : tensor<16x4xf32> -> tensor<2x8x4xf32>
  %x4 = dsc.add %x3, %b3_r : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %lnf = dsc.load @"ln_f.weight" : tensor<4xf32>
  %h = dsc.layer_norm %x4 weight(%lnf : tensor<4xf32>) : tensor<2x8x4xf32>
  %logits = dsc.linear %h, %wte : tensor<2x8x4xf32>, tensor<16x4xf32>
  %loss = dsc.cross_entropy %logits, %targets : tensor<2x8x16xf32>, tensor<2x8xi64>
  return %loss : tensor<f32>
}
