// GPT-2 tiny (dsc.export of examples/models/gpt2.py with dropout=0.1,
// layers=1, batch=2, seq=16): dropout after the embeddings (seed 0), on the
// attention probabilities [2, 2 heads, 16, 16] (seed 1), after the attention
// (seed 2) and after the MLP (seed 3); 2 samples of 16 tokens, width 32.
// Exported by dsc.export from gpt2.py (torch 1.13.0a0).
module {
  "dsc.state"() {role = 0 : i32, sym_name = "transformer.wte.weight", type = tensor<256x32xf32>} : () -> ()
  "dsc.state"() {role = 0 : i32, sym_name = "transformer.wpe.weight", type = tensor<16x32xf32>} : () -> ()
  "dsc.state"() {role = 0 : i32, sym_name = "transformer.h.0.ln_1.weight", type = tensor<32xf32>} : () -> ()
  "dsc.state"() {role = 0 : i32, sym_name = "transformer.h.0.ln_1.bias", type = tensor<32xf32>} : () -> ()
  "dsc.state"() {role = 0 : i32, sym_name = "transformer.h.0.attn.c_attn.weight", type = tensor<96x32xf32>} : () -> ()
  "dsc.state"() {role = 0 : i32, sym_name = "transformer.h.0.attn.c_attn.bias", type = tensor<96xf32>} : () -> ()
  "dsc.state"() {role = 0 : i32, sym_name = "transformer.h.0.attn.c_proj.weight", type = tensor<32x32xf32>} : () -> ()
  "dsc.state"() {role = 0 : i32, sym_name = "transformer.h.0.attn.c_proj.bias", type = tensor<32xf32>} : () -> ()
  "dsc.state"() {role = 0 : i32, sym_name = "transformer.h.0.ln_2.weight", type = tensor<32xf32>} : () -> ()
  "dsc.state"() {role = 0 : i32, sym_name = "transformer.h.0.ln_2.bias", type = tensor<32xf32>} : () -> ()
  "dsc.state"() {role = 0 : i32, sym_name = "transformer.h.0.mlp.c_fc.weight", type = tensor<128x32xf32>} : () -> ()
  "dsc.state"() {role = 0 : i32, sym_name = "transformer.h.0.mlp.c_fc.bias", type = tensor<128xf32>} : () -> ()
  "dsc.state"() {role = 0 : i32, sym_name = "transformer.h.0.mlp.c_proj.weight", type = tensor<32x128xf32>} : () -> ()
  "dsc.state"() {role = 0 : i32, sym_name = "transformer.h.0.mlp.c_proj.bias", type = tensor<32xf32>} : () -> ()
  "dsc.state"() {role = 0 : i32, sym_name = "transformer.ln_f.weight", type = tensor<32xf32>} : () -> ()
  "dsc.state"() {role = 0 : i32, sym_name = "transformer.ln_f.bias", type = tensor<32xf32>} : () -> ()
  "dsc.state"() {role = 1 : i32, sym_name = "transformer.h.0.attn.bias", type = tensor<1x1x16x16xf32>} : () -> ()
  func.func @forward(%tokens: tensor<2x16xi64> {dsc.input = "tokens"}, %targets: tensor<2x16xi64> {dsc.input = "targets"}) -> (tensor<f32> {dsc.output = "loss"}) {
    %w1 = "dsc.load"() {state = @"transformer.wte.weight"} : () -> tensor<256x32xf32>
    %v2 = "dsc.embedding"(%w1, %tokens) : (tensor<256x32xf32>, tensor<2x16xi64>) -> tensor<2x16x32xf32>
    %w3 = "dsc.load"() {state = @"transformer.wpe.weight"} : () -> tensor<16x32xf32>
    %cst4 = "dsc.constant"() {value = dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]> : tensor<16xi64>} : () -> tensor<16xi64>
    %v5 = "dsc.embedding"(%w3, %cst4) : (tensor<16x32xf32>, tensor<16xi64>) -> tensor<16x32xf32>
    %v6 = "dsc.add"(%v2, %v5) : (tensor<2x16x32xf32>, tensor<16x32xf32>) -> tensor<2x16x32xf32>
    %key7 = "dsc.step_key"() : () -> tensor<4xi64>
    %v8 = "dsc.dropout"(%v6, %key7) {p = 0.1 : f64, samples = 2 : i64, seed = 0 : i64} : (tensor<2x16x32xf32>, tensor<4xi64>) -> tensor<2x16x32xf32>
    %w9 = "dsc.load"() {state = @"transformer.h.0.ln_1.weight"} : () -> tensor<32xf32>
    %w10 = "dsc.load"() {state = @"transformer.h.0.ln_1.bias"} : () -> tensor<32xf32>
    %v11 = "dsc.layer_norm"(%v8, %w9, %w10) {epsilon = 1.0e-05 : f64, normalized_rank = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
    %v12 = "dsc.reshape"(%v11) : (tensor<2x16x32xf32>) -> tensor<32x32xf32>
    %w13 = "dsc.load"() {state = @"transformer.h.0.attn.c_attn.weight"} : () -> tensor<96x32xf32>
    %w14 = "dsc.load"() {state = @"transformer.h.0.attn.c_attn.bias"} : () -> tensor<96xf32>
    %v15 = "dsc.linear"(%v12, %w13, %w14) : (tensor<32x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<32x96xf32>
    %v16 = "dsc.reshape"(%v15) : (tensor<32x96xf32>) -> tensor<2x16x96xf32>
    %v17 = "dsc.slice"(%v16) {dim = 2 : i64, end = 32 : i64, start = 0 : i64, step = 1 : i64} : (tensor<2x16x96xf32>) -> tensor<2x16x32xf32>
    %v18 = "dsc.slice"(%v16) {dim = 2 : i64, end = 64 : i64, start = 32 : i64, step = 1 : i64} : (tensor<2x16x96xf32>) -> tensor<2x16x32xf32>
    %v19 = "dsc.slice"(%v16) {dim = 2 : i64, end = 96 : i64, start = 64 : i64, step = 1 : i64} : (tensor<2x16x96xf32>) -> tensor<2x16x32xf32>
    %v20 = "dsc.reshape"(%v17) : (tensor<2x16x32xf32>) -> tensor<2x16x2x16xf32>
    %v21 = "dsc.transpose"(%v20) {dim0 = 1 : i64, dim1 = 2 : i64} : (tensor<2x16x2x16xf32>) -> tensor<2x2x16x16xf32>
    %v22 = "dsc.reshape"(%v21) : (tensor<2x2x16x16xf32>) -> tensor<4x16x16xf32>
    %v23 = "dsc.reshape"(%v18) : (tensor<2x16x32xf32>) -> tensor<2x16x2x16xf32>
    %v24 = "dsc.transpose"(%v23) {dim0 = 1 : i64, dim1 = 2 : i64} : (tensor<2x16x2x16xf32>) -> tensor<2x2x16x16xf32>
    %v25 = "dsc.transpose"(%v24) {dim0 = 2 : i64, dim1 = 3 : i64} : (tensor<2x2x16x16xf32>) -> tensor<2x2x16x16xf32>
    %v26 = "dsc.reshape"(%v25) : (tensor<2x2x16x16xf32>) -> tensor<4x16x16xf32>
    %v27 = "dsc.matmul"(%v22, %v26) : (tensor<4x16x16xf32>, tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
    %v28 = "dsc.reshape"(%v27) : (tensor<4x16x16xf32>) -> tensor<2x2x16x16xf32>
    %cst29 = "dsc.constant"() {value = dense<0.25> : tensor<f32>} : () -> tensor<f32>
    %v30 = "dsc.mul"(%v28, %cst29) : (tensor<2x2x16x16xf32>, tensor<f32>) -> tensor<2x2x16x16xf32>
    %v31 = "dsc.causal_mask"(%v30) : (tensor<2x2x16x16xf32>) -> tensor<2x2x16x16xf32>
    %v32 = "dsc.softmax"(%v31) {dim = 3 : i64} : (tensor<2x2x16x16xf32>) -> tensor<2x2x16x16xf32>
    %v33 = "dsc.dropout"(%v32, %key7) {p = 0.1 : f64, samples = 2 : i64, seed = 1 : i64} : (tensor<2x2x16x16xf32>, tensor<4xi64>) -> tensor<2x2x16x16xf32>
    %v34 = "dsc.reshape"(%v33) : (tensor<2x2x16x16xf32>) -> tensor<4x16x16xf32>
    %v35 = "dsc.reshape"(%v19) : (tensor<2x16x32xf32>) -> tensor<2x16x2x16xf32>
    %v36 = "dsc.transpose"(%v35) {dim0 = 1 : i64, dim1 = 2 : i64} : (tensor<2x16x2x16xf32>) -> tensor<2x2x16x16xf32>
    %v37 = "dsc.reshape"(%v36) : (tensor<2x2x16x16xf32>) -> tensor<4x16x16xf32>
    %v38 = "dsc.matmul"(%v34, %v37) : (tensor<4x16x16xf32>, tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
    %v39 = "dsc.reshape"(%v38) : (tensor<4x16x16xf32>) -> tensor<2x2x16x16xf32>
    %v40 = "dsc.transpose"(%v39) {dim0 = 1 : i64, dim1 = 2 : i64} : (tensor<2x2x16x16xf32>) -> tensor<2x16x2x16xf32>
    %v41 = "dsc.reshape"(%v40) : (tensor<2x16x2x16xf32>) -> tensor<2x16x32xf32>
    %v42 = "dsc.reshape"(%v41) : (tensor<2x16x32xf32>) -> tensor<32x32xf32>
    %w43 = "dsc.load"() {state = @"transformer.h.0.attn.c_proj.weight"} : () -> tensor<32x32xf32>
    %w44 = "dsc.load"() {state = @"transformer.h.0.attn.c_proj.bias"} : () -> tensor<32xf32>
    %v45 = "dsc.linear"(%v42, %w43, %w44) : (tensor<32x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<32x32xf32>
    %v46 = "dsc.reshape"(%v45) : (tensor<32x32xf32>) -> tensor<2x16x32xf32>
    %v47 = "dsc.dropout"(%v46, %key7) {p = 0.1 : f64, samples = 2 : i64, seed = 2 : i64} : (tensor<2x16x32xf32>, tensor<4xi64>) -> tensor<2x16x32xf32>
    %v48 = "dsc.add"(%v8, %v47) : (tensor<2x16x32xf32>, tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
    %w49 = "dsc.load"() {state = @"transformer.h.0.ln_2.weight"} : () -> tensor<32xf32>
    %w50 = "dsc.load"() {state = @"transformer.h.0.ln_2.bias"} : () -> tensor<32xf32>
    %v51 = "dsc.layer_norm"(%v48, %w49, %w50) {epsilon = 1.0e-05 : f64, normalized_rank = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
    %v52 = "dsc.reshape"(%v51) : (tensor<2x16x32xf32>) -> tensor<32x32xf32>
    %w53 = "dsc.load"() {state = @"transformer.h.0.mlp.c_fc.weight"} : () -> tensor<128x32xf32>
    %w54 = "dsc.load"() {state = @"transformer.h.0.mlp.c_fc.bias"} : () -> tensor<128xf32>
    %v55 = "dsc.linear"(%v52, %w53, %w54) : (tensor<32x32xf32>, tensor<128x32xf32>, tensor<128xf32>) -> tensor<32x128xf32>
    %v56 = "dsc.reshape"(%v55) : (tensor<32x128xf32>) -> tensor<2x16x128xf32>
    %v57 = "dsc.gelu"(%v56) {approximation = 1 : i32} : (tensor<2x16x128xf32>) -> tensor<2x16x128xf32>
    %v58 = "dsc.reshape"(%v57) : (tensor<2x16x128xf32>) -> tensor<32x128xf32>
    %w59 = "dsc.load"() {state = @"transformer.h.0.mlp.c_proj.weight"} : () -> tensor<32x128xf32>
    %w60 = "dsc.load"() {state = @"transformer.h.0.mlp.c_proj.bias"} : () -> tensor<32xf32>
    %v61 = "dsc.linear"(%v58, %w59, %w60) : (tensor<32x128xf32>, tensor<32x128xf32>, tensor<32xf32>) -> tensor<32x32xf32>
    %v62 = "dsc.reshape"(%v61) : (tensor<32x32xf32>) -> tensor<2x16x32xf32>
    %v63 = "dsc.dropout"(%v62, %key7) {p = 0.1 : f64, samples = 2 : i64, seed = 3 : i64} : (tensor<2x16x32xf32>, tensor<4xi64>) -> tensor<2x16x32xf32>
    %v64 = "dsc.add"(%v48, %v63) : (tensor<2x16x32xf32>, tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
    %w65 = "dsc.load"() {state = @"transformer.ln_f.weight"} : () -> tensor<32xf32>
    %w66 = "dsc.load"() {state = @"transformer.ln_f.bias"} : () -> tensor<32xf32>
    %v67 = "dsc.layer_norm"(%v64, %w65, %w66) {epsilon = 1.0e-05 : f64, normalized_rank = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
    %v68 = "dsc.reshape"(%v67) : (tensor<2x16x32xf32>) -> tensor<32x32xf32>
    %v69 = "dsc.linear"(%v68, %w1) : (tensor<32x32xf32>, tensor<256x32xf32>) -> tensor<32x256xf32>
    %v70 = "dsc.reshape"(%v69) : (tensor<32x256xf32>) -> tensor<2x16x256xf32>
    %v71 = "dsc.reshape"(%v70) : (tensor<2x16x256xf32>) -> tensor<32x256xf32>
    %v72 = "dsc.reshape"(%targets) : (tensor<2x16xi64>) -> tensor<32xi64>
    %v73 = "dsc.cross_entropy"(%v71, %v72) {ignore_index = -1 : i64, reduction = 0 : i32} : (tensor<32x256xf32>, tensor<32xi64>) -> tensor<f32>
    func.return %v73 : tensor<f32>
  }
}
