// GPT-2 (the tiny zoo model, dsc.export) cut to its first block: embedding,
// attention (2 heads of 16, fused query/key/value), a GELU MLP, the tied
// head and the cross-entropy; micro-batch 1, sequence 16, width 32.
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
  func.func @forward(%tokens: tensor<1x16xi64> {dsc.input = "tokens"}, %targets: tensor<1x16xi64> {dsc.input = "targets"}) -> (tensor<f32> {dsc.output = "loss"}) {
    %w1 = "dsc.load"() {state = @"transformer.wte.weight"} : () -> tensor<256x32xf32>
    %v2 = "dsc.embedding"(%w1, %tokens) : (tensor<256x32xf32>, tensor<1x16xi64>) -> tensor<1x16x32xf32>
    %w3 = "dsc.load"() {state = @"transformer.wpe.weight"} : () -> tensor<16x32xf32>
    %cst4 = "dsc.constant"() {value = dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]> : tensor<16xi64>} : () -> tensor<16xi64>
    %v5 = "dsc.embedding"(%w3, %cst4) : (tensor<16x32xf32>, tensor<16xi64>) -> tensor<16x32xf32>
    %v6 = "dsc.add"(%v2, %v5) : (tensor<1x16x32xf32>, tensor<16x32xf32>) -> tensor<1x16x32xf32>
    %w7 = "dsc.load"() {state = @"transformer.h.0.ln_1.weight"} : () -> tensor<32xf32>
    %w8 = "dsc.load"() {state = @"transformer.h.0.ln_1.bias"} : () -> tensor<32xf32>
    %v9 = "dsc.layer_norm"(%v6, %w7, %w8) {epsilon = 1.0e-05 : f64, normalized_rank = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<1x16x32xf32>
    %v10 = "dsc.reshape"(%v9) : (tensor<1x16x32xf32>) -> tensor<16x32xf32>
    %w11 = "dsc.load"() {state = @"transformer.h.0.attn.c_attn.weight"} : () -> tensor<96x32xf32>
    %w12 = "dsc.load"() {state = @"transformer.h.0.attn.c_attn.bias"} : () -> tensor<96xf32>
    %v13 = "dsc.linear"(%v10, %w11, %w12) : (tensor<16x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<16x96xf32>
    %v14 = "dsc.reshape"(%v13) : (tensor<16x96xf32>) -> tensor<1x16x96xf32>
    %v15 = "dsc.slice"(%v14) {dim = 2 : i64, end = 32 : i64, start = 0 : i64, step = 1 : i64} : (tensor<1x16x96xf32>) -> tensor<1x16x32xf32>
    %v16 = "dsc.slice"(%v14) {dim = 2 : i64, end = 64 : i64, start = 32 : i64, step = 1 : i64} : (tensor<1x16x96xf32>) -> tensor<1x16x32xf32>
    %v17 = "dsc.slice"(%v14) {dim = 2 : i64, end = 96 : i64, start = 64 : i64, step = 1 : i64} : (tensor<1x16x96xf32>) -> tensor<1x16x32xf32>
    %v18 = "dsc.reshape"(%v15) : (tensor<1x16x32xf32>) -> tensor<1x16x2x16xf32>
    %v19 = "dsc.transpose"(%v18) {dim0 = 1 : i64, dim1 = 2 : i64} : (tensor<1x16x2x16xf32>) -> tensor<1x2x16x16xf32>
    %v20 = "dsc.reshape"(%v19) : (tensor<1x2x16x16xf32>) -> tensor<2x16x16xf32>
    %v21 = "dsc.reshape"(%v16) : (tensor<1x16x32xf32>) -> tensor<1x16x2x16xf32>
    %v22 = "dsc.transpose"(%v21) {dim0 = 1 : i64, dim1 = 2 : i64} : (tensor<1x16x2x16xf32>) -> tensor<1x2x16x16xf32>
    %v23 = "dsc.transpose"(%v22) {dim0 = 2 : i64, dim1 = 3 : i64} : (tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
    %v24 = "dsc.reshape"(%v23) : (tensor<1x2x16x16xf32>) -> tensor<2x16x16xf32>
    %v25 = "dsc.matmul"(%v20, %v24) : (tensor<2x16x16xf32>, tensor<2x16x16xf32>) -> tensor<2x16x16xf32>
    %v26 = "dsc.reshape"(%v25) : (tensor<2x16x16xf32>) -> tensor<1x2x16x16xf32>
    %cst27 = "dsc.constant"() {value = dense<0.25> : tensor<f32>} : () -> tensor<f32>
    %v28 = "dsc.mul"(%v26, %cst27) : (tensor<1x2x16x16xf32>, tensor<f32>) -> tensor<1x2x16x16xf32>
    %v29 = "dsc.causal_mask"(%v28) : (tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
    %v30 = "dsc.softmax"(%v29) {dim = 3 : i64} : (tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
    %v31 = "dsc.reshape"(%v30) : (tensor<1x2x16x16xf32>) -> tensor<2x16x16xf32>
    %v32 = "dsc.reshape"(%v17) : (tensor<1x16x32xf32>) -> tensor<1x16x2x16xf32>
    %v33 = "dsc.transpose"(%v32) {dim0 = 1 : i64, dim1 = 2 : i64} : (tensor<1x16x2x16xf32>) -> tensor<1x2x16x16xf32>
    %v34 = "dsc.reshape"(%v33) : (tensor<1x2x16x16xf32>) -> tensor<2x16x16xf32>
    %v35 = "dsc.matmul"(%v31, %v34) : (tensor<2x16x16xf32>, tensor<2x16x16xf32>) -> tensor<2x16x16xf32>
    %v36 = "dsc.reshape"(%v35) : (tensor<2x16x16xf32>) -> tensor<1x2x16x16xf32>
    %v37 = "dsc.transpose"(%v36) {dim0 = 1 : i64, dim1 = 2 : i64} : (tensor<1x2x16x16xf32>) -> tensor<1x16x2x16xf32>
    %v38 = "dsc.reshape"(%v37) : (tensor<1x16x2x16xf32>) -> tensor<1x16x32xf32>
    %v39 = "dsc.reshape"(%v38) : (tensor<1x16x32xf32>) -> tensor<16x32xf32>
    %w40 = "dsc.load"() {state = @"transformer.h.0.attn.c_proj.weight"} : () -> tensor<32x32xf32>
    %w41 = "dsc.load"() {state = @"transformer.h.0.attn.c_proj.bias"} : () -> tensor<32xf32>
    %v42 = "dsc.linear"(%v39, %w40, %w41) : (tensor<16x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<16x32xf32>
    %v43 = "dsc.reshape"(%v42) : (tensor<16x32xf32>) -> tensor<1x16x32xf32>
    %v44 = "dsc.add"(%v6, %v43) : (tensor<1x16x32xf32>, tensor<1x16x32xf32>) -> tensor<1x16x32xf32>
    %w45 = "dsc.load"() {state = @"transformer.h.0.ln_2.weight"} : () -> tensor<32xf32>
    %w46 = "dsc.load"() {state = @"transformer.h.0.ln_2.bias"} : () -> tensor<32xf32>
    %v47 = "dsc.layer_norm"(%v44, %w45, %w46) {epsilon = 1.0e-05 : f64, normalized_rank = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<1x16x32xf32>
    %v48 = "dsc.reshape"(%v47) : (tensor<1x16x32xf32>) -> tensor<16x32xf32>
    %w49 = "dsc.load"() {state = @"transformer.h.0.mlp.c_fc.weight"} : () -> tensor<128x32xf32>
    %w50 = "dsc.load"() {state = @"transformer.h.0.mlp.c_fc.bias"} : () -> tensor<128xf32>
    %v51 = "dsc.linear"(%v48, %w49, %w50) : (tensor<16x32xf32>, tensor<128x32xf32>, tensor<128xf32>) -> tensor<16x128xf32>
    %v52 = "dsc.reshape"(%v51) : (tensor<16x128xf32>) -> tensor<1x16x128xf32>
    %v53 = "dsc.gelu"(%v52) {approximation = 1 : i32} : (tensor<1x16x128xf32>) -> tensor<1x16x128xf32>
    %v54 = "dsc.reshape"(%v53) : (tensor<1x16x128xf32>) -> tensor<16x128xf32>
    %w55 = "dsc.load"() {state = @"transformer.h.0.mlp.c_proj.weight"} : () -> tensor<32x128xf32>
    %w56 = "dsc.load"() {state = @"transformer.h.0.mlp.c_proj.bias"} : () -> tensor<32xf32>
    %v57 = "dsc.linear"(%v54, %w55, %w56) : (tensor<16x128xf32>, tensor<32x128xf32>, tensor<32xf32>) -> tensor<16x32xf32>
    %v58 = "dsc.reshape"(%v57) : (tensor<16x32xf32>) -> tensor<1x16x32xf32>
    %v59 = "dsc.add"(%v44, %v58) : (tensor<1x16x32xf32>, tensor<1x16x32xf32>) -> tensor<1x16x32xf32>
    %w113 = "dsc.load"() {state = @"transformer.ln_f.weight"} : () -> tensor<32xf32>
    %w114 = "dsc.load"() {state = @"transformer.ln_f.bias"} : () -> tensor<32xf32>
    %v115 = "dsc.layer_norm"(%v59, %w113, %w114) {epsilon = 1.0e-05 : f64, normalized_rank = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<1x16x32xf32>
    %v116 = "dsc.reshape"(%v115) : (tensor<1x16x32xf32>) -> tensor<16x32xf32>
    %v117 = "dsc.linear"(%v116, %w1) : (tensor<16x32xf32>, tensor<256x32xf32>) -> tensor<16x256xf32>
    %v118 = "dsc.reshape"(%v117) : (tensor<16x256xf32>) -> tensor<1x16x256xf32>
    %v119 = "dsc.reshape"(%v118) : (tensor<1x16x256xf32>) -> tensor<16x256xf32>
    %v120 = "dsc.reshape"(%targets) : (tensor<1x16xi64>) -> tensor<16xi64>
    %v121 = "dsc.cross_entropy"(%v119, %v120) {ignore_index = -1 : i64, reduction = 0 : i32} : (tensor<16x256xf32>, tensor<16xi64>) -> tensor<f32>
    func.return %v121 : tensor<f32>
  }
}
