// A 2-layer GPT-2-style model with its language-modelling loss, written by
// hand in the dsc dialect (nanoGPT's layout and parameter names). It is what
// `python3 -m dsc.export examples/models/gpt2.py --set size=tiny` will
// produce: vocab 64, context 8, width 32, 2 heads, MLP 128, batch 2.
// The LM head is tied to the token embedding: one parameter, two uses.
//
//   dsc-opt examples/gpt2_tiny.mlir --dsc-print-summary

dsc.state parameter @"transformer.wte.weight" : tensor<64x32xf32>
dsc.state parameter @"transformer.wpe.weight" : tensor<8x32xf32>
dsc.state parameter @"transformer.h.0.ln_1.weight" : tensor<32xf32>
dsc.state parameter @"transformer.h.0.ln_1.bias" : tensor<32xf32>
dsc.state parameter @"transformer.h.0.attn.c_attn.weight" : tensor<96x32xf32>
dsc.state parameter @"transformer.h.0.attn.c_attn.bias" : tensor<96xf32>
dsc.state parameter @"transformer.h.0.attn.c_proj.weight" : tensor<32x32xf32>
dsc.state parameter @"transformer.h.0.attn.c_proj.bias" : tensor<32xf32>
dsc.state parameter @"transformer.h.0.ln_2.weight" : tensor<32xf32>
dsc.state parameter @"transformer.h.0.ln_2.bias" : tensor<32xf32>
dsc.state parameter @"transformer.h.0.mlp.c_fc.weight" : tensor<128x32xf32>
dsc.state parameter @"transformer.h.0.mlp.c_fc.bias" : tensor<128xf32>
dsc.state parameter @"transformer.h.0.mlp.c_proj.weight" : tensor<32x128xf32>
dsc.state parameter @"transformer.h.0.mlp.c_proj.bias" : tensor<32xf32>
dsc.state parameter @"transformer.h.1.ln_1.weight" : tensor<32xf32>
dsc.state parameter @"transformer.h.1.ln_1.bias" : tensor<32xf32>
dsc.state parameter @"transformer.h.1.attn.c_attn.weight" : tensor<96x32xf32>
dsc.state parameter @"transformer.h.1.attn.c_attn.bias" : tensor<96xf32>
dsc.state parameter @"transformer.h.1.attn.c_proj.weight" : tensor<32x32xf32>
dsc.state parameter @"transformer.h.1.attn.c_proj.bias" : tensor<32xf32>
dsc.state parameter @"transformer.h.1.ln_2.weight" : tensor<32xf32>
dsc.state parameter @"transformer.h.1.ln_2.bias" : tensor<32xf32>
dsc.state parameter @"transformer.h.1.mlp.c_fc.weight" : tensor<128x32xf32>
dsc.state parameter @"transformer.h.1.mlp.c_fc.bias" : tensor<128xf32>
dsc.state parameter @"transformer.h.1.mlp.c_proj.weight" : tensor<32x128xf32>
dsc.state parameter @"transformer.h.1.mlp.c_proj.bias" : tensor<32xf32>
dsc.state parameter @"transformer.ln_f.weight" : tensor<32xf32>
dsc.state parameter @"transformer.ln_f.bias" : tensor<32xf32>

func.func @forward(%tokens: tensor<2x8xi64> {dsc.input = "tokens"},
                   %targets: tensor<2x8xi64> {dsc.input = "targets"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  // Token and learned position embeddings.
  %wte = dsc.load @"transformer.wte.weight" : tensor<64x32xf32>
  %wpe = dsc.load @"transformer.wpe.weight" : tensor<8x32xf32>
  %tok = dsc.embedding %wte, %tokens : tensor<64x32xf32>, tensor<2x8xi64>
  %positions = dsc.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi64>
  %pos = dsc.embedding %wpe, %positions : tensor<8x32xf32>, tensor<8xi64>
  %x0 = dsc.add %tok, %pos : tensor<2x8x32xf32>, tensor<8x32xf32>
  %scale = dsc.constant dense<0.25> : tensor<f32>

  // Block 0: x = x + attn(ln_1(x)); x = x + mlp(ln_2(x)).
  %b0_ln1w = dsc.load @"transformer.h.0.ln_1.weight" : tensor<32xf32>
  %b0_ln1b = dsc.load @"transformer.h.0.ln_1.bias" : tensor<32xf32>
  %b0_h = dsc.layer_norm %x0 weight(%b0_ln1w : tensor<32xf32>) bias(%b0_ln1b : tensor<32xf32>) : tensor<2x8x32xf32>
  %b0_attnw = dsc.load @"transformer.h.0.attn.c_attn.weight" : tensor<96x32xf32>
  %b0_attnb = dsc.load @"transformer.h.0.attn.c_attn.bias" : tensor<96xf32>
  %b0_qkv = dsc.linear %b0_h, %b0_attnw, %b0_attnb : tensor<2x8x32xf32>, tensor<96x32xf32>, tensor<96xf32>
  %b0_q = dsc.slice %b0_qkv, dim = 2, start = 0, end = 32, step = 1 : tensor<2x8x96xf32>
  %b0_q4 = dsc.reshape %b0_q : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %b0_qh = dsc.transpose %b0_q4, 1, 2 : tensor<2x8x2x16xf32>
  %b0_k = dsc.slice %b0_qkv, dim = 2, start = 32, end = 64, step = 1 : tensor<2x8x96xf32>
  %b0_k4 = dsc.reshape %b0_k : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %b0_kh = dsc.transpose %b0_k4, 1, 2 : tensor<2x8x2x16xf32>
  %b0_v = dsc.slice %b0_qkv, dim = 2, start = 64, end = 96, step = 1 : tensor<2x8x96xf32>
  %b0_v4 = dsc.reshape %b0_v : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %b0_vh = dsc.transpose %b0_v4, 1, 2 : tensor<2x8x2x16xf32>
  %b0_att = dsc.matmul %b0_qh, %b0_kh transpose_rhs : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
  %b0_atts = dsc.mul %b0_att, %scale : tensor<2x2x8x8xf32>, tensor<f32>
  %b0_attm = dsc.causal_mask %b0_atts : tensor<2x2x8x8xf32>
  %b0_attp = dsc.softmax %b0_attm, dim = 3 : tensor<2x2x8x8xf32>
  %b0_y = dsc.matmul %b0_attp, %b0_vh : tensor<2x2x8x8xf32>, tensor<2x2x8x16xf32>
  %b0_yt = dsc.transpose %b0_y, 1, 2 : tensor<2x2x8x16xf32>
  %b0_ym = dsc.reshape %b0_yt : tensor<2x8x2x16xf32> -> tensor<2x8x32xf32>
  %b0_projw = dsc.load @"transformer.h.0.attn.c_proj.weight" : tensor<32x32xf32>
  %b0_projb = dsc.load @"transformer.h.0.attn.c_proj.bias" : tensor<32xf32>
  %b0_proj = dsc.linear %b0_ym, %b0_projw, %b0_projb : tensor<2x8x32xf32>, tensor<32x32xf32>, tensor<32xf32>
  %b0_x1 = dsc.add %x0, %b0_proj : tensor<2x8x32xf32>, tensor<2x8x32xf32>
  %b0_ln2w = dsc.load @"transformer.h.0.ln_2.weight" : tensor<32xf32>
  %b0_ln2b = dsc.load @"transformer.h.0.ln_2.bias" : tensor<32xf32>
  %b0_h2 = dsc.layer_norm %b0_x1 weight(%b0_ln2w : tensor<32xf32>) bias(%b0_ln2b : tensor<32xf32>) : tensor<2x8x32xf32>
  %b0_fcw = dsc.load @"transformer.h.0.mlp.c_fc.weight" : tensor<128x32xf32>
  %b0_fcb = dsc.load @"transformer.h.0.mlp.c_fc.bias" : tensor<128xf32>
  %b0_fc = dsc.linear %b0_h2, %b0_fcw, %b0_fcb : tensor<2x8x32xf32>, tensor<128x32xf32>, tensor<128xf32>
  %b0_act = dsc.gelu tanh %b0_fc : tensor<2x8x128xf32>
  %b0_mpw = dsc.load @"transformer.h.0.mlp.c_proj.weight" : tensor<32x128xf32>
  %b0_mpb = dsc.load @"transformer.h.0.mlp.c_proj.bias" : tensor<32xf32>
  %b0_mlp = dsc.linear %b0_act, %b0_mpw, %b0_mpb : tensor<2x8x128xf32>, tensor<32x128xf32>, tensor<32xf32>
  %b0_x2 = dsc.add %b0_x1, %b0_mlp : tensor<2x8x32xf32>, tensor<2x8x32xf32>

  // Block 1: x = x + attn(ln_1(x)); x = x + mlp(ln_2(x)).
  %b1_ln1w = dsc.load @"transformer.h.1.ln_1.weight" : tensor<32xf32>
  %b1_ln1b = dsc.load @"transformer.h.1.ln_1.bias" : tensor<32xf32>
  %b1_h = dsc.layer_norm %b0_x2 weight(%b1_ln1w : tensor<32xf32>) bias(%b1_ln1b : tensor<32xf32>) : tensor<2x8x32xf32>
  %b1_attnw = dsc.load @"transformer.h.1.attn.c_attn.weight" : tensor<96x32xf32>
  %b1_attnb = dsc.load @"transformer.h.1.attn.c_attn.bias" : tensor<96xf32>
  %b1_qkv = dsc.linear %b1_h, %b1_attnw, %b1_attnb : tensor<2x8x32xf32>, tensor<96x32xf32>, tensor<96xf32>
  %b1_q = dsc.slice %b1_qkv, dim = 2, start = 0, end = 32, step = 1 : tensor<2x8x96xf32>
  %b1_q4 = dsc.reshape %b1_q : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %b1_qh = dsc.transpose %b1_q4, 1, 2 : tensor<2x8x2x16xf32>
  %b1_k = dsc.slice %b1_qkv, dim = 2, start = 32, end = 64, step = 1 : tensor<2x8x96xf32>
  %b1_k4 = dsc.reshape %b1_k : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %b1_kh = dsc.transpose %b1_k4, 1, 2 : tensor<2x8x2x16xf32>
  %b1_v = dsc.slice %b1_qkv, dim = 2, start = 64, end = 96, step = 1 : tensor<2x8x96xf32>
  %b1_v4 = dsc.reshape %b1_v : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %b1_vh = dsc.transpose %b1_v4, 1, 2 : tensor<2x8x2x16xf32>
  %b1_att = dsc.matmul %b1_qh, %b1_kh transpose_rhs : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
  %b1_atts = dsc.mul %b1_att, %scale : tensor<2x2x8x8xf32>, tensor<f32>
  %b1_attm = dsc.causal_mask %b1_atts : tensor<2x2x8x8xf32>
  %b1_attp = dsc.softmax %b1_attm, dim = 3 : tensor<2x2x8x8xf32>
  %b1_y = dsc.matmul %b1_attp, %b1_vh : tensor<2x2x8x8xf32>, tensor<2x2x8x16xf32>
  %b1_yt = dsc.transpose %b1_y, 1, 2 : tensor<2x2x8x16xf32>
  %b1_ym = dsc.reshape %b1_yt : tensor<2x8x2x16xf32> -> tensor<2x8x32xf32>
  %b1_projw = dsc.load @"transformer.h.1.attn.c_proj.weight" : tensor<32x32xf32>
  %b1_projb = dsc.load @"transformer.h.1.attn.c_proj.bias" : tensor<32xf32>
  %b1_proj = dsc.linear %b1_ym, %b1_projw, %b1_projb : tensor<2x8x32xf32>, tensor<32x32xf32>, tensor<32xf32>
  %b1_x1 = dsc.add %b0_x2, %b1_proj : tensor<2x8x32xf32>, tensor<2x8x32xf32>
  %b1_ln2w = dsc.load @"transformer.h.1.ln_2.weight" : tensor<32xf32>
  %b1_ln2b = dsc.load @"transformer.h.1.ln_2.bias" : tensor<32xf32>
  %b1_h2 = dsc.layer_norm %b1_x1 weight(%b1_ln2w : tensor<32xf32>) bias(%b1_ln2b : tensor<32xf32>) : tensor<2x8x32xf32>
  %b1_fcw = dsc.load @"transformer.h.1.mlp.c_fc.weight" : tensor<128x32xf32>
  %b1_fcb = dsc.load @"transformer.h.1.mlp.c_fc.bias" : tensor<128xf32>
  %b1_fc = dsc.linear %b1_h2, %b1_fcw, %b1_fcb : tensor<2x8x32xf32>, tensor<128x32xf32>, tensor<128xf32>
  %b1_act = dsc.gelu tanh %b1_fc : tensor<2x8x128xf32>
  %b1_mpw = dsc.load @"transformer.h.1.mlp.c_proj.weight" : tensor<32x128xf32>
  %b1_mpb = dsc.load @"transformer.h.1.mlp.c_proj.bias" : tensor<32xf32>
  %b1_mlp = dsc.linear %b1_act, %b1_mpw, %b1_mpb : tensor<2x8x128xf32>, tensor<32x128xf32>, tensor<32xf32>
  %b1_x2 = dsc.add %b1_x1, %b1_mlp : tensor<2x8x32xf32>, tensor<2x8x32xf32>

  // Final norm, tied LM head, mean cross-entropy over every target token.
  %lnfw = dsc.load @"transformer.ln_f.weight" : tensor<32xf32>
  %lnfb = dsc.load @"transformer.ln_f.bias" : tensor<32xf32>
  %hf = dsc.layer_norm %b1_x2 weight(%lnfw : tensor<32xf32>) bias(%lnfb : tensor<32xf32>) : tensor<2x8x32xf32>
  %logits = dsc.linear %hf, %wte : tensor<2x8x32xf32>, tensor<64x32xf32>
  %loss = dsc.cross_entropy %logits, %targets : tensor<2x8x64xf32>, tensor<2x8xi64>
  return %loss : tensor<f32>
}
