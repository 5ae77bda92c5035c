// Every verifier rule of the dsc dialect, one case per split.
// RUN: dsc-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// Graph inputs and outputs
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'dsc.input' must be a non-empty string, got 3 : i64}}
func.func @input_not_string(%x: tensor<2xf32> {dsc.input = 3}) {
  return
}

// -----

// expected-error @+1 {{'dsc.input' must be a non-empty string}}
func.func @input_empty(%x: tensor<2xf32> {dsc.input = ""}) {
  return
}

// -----

// expected-error @+1 {{'dsc.output' must be a non-empty string}}
func.func @output_not_string() -> (tensor<f32> {dsc.output = unit}) {
  %0 = dsc.constant dense<0.0> : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{graph input name "x" is used by arguments 0 and 1}}
func.func @duplicate_input(%a: tensor<2xf32> {dsc.input = "x"},
                           %b: tensor<2xf32> {dsc.input = "x"}) {
  return
}

// -----

// expected-error @+1 {{graph output name "loss" is used by results 0 and 1}}
func.func @duplicate_output(%a: tensor<f32>)
    -> (tensor<f32> {dsc.output = "loss"}, tensor<f32> {dsc.output = "loss"}) {
  return %a, %a : tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{unknown dsc argument attribute 'dsc.inptu'}}
func.func @unknown_arg_attr(%x: tensor<2xf32> {dsc.inptu = "x"}) {
  return
}

// -----

// expected-error @+1 {{unknown dsc result attribute 'dsc.outptu'}}
func.func @unknown_result_attr(%a: tensor<f32>) -> (tensor<f32> {dsc.outptu = "l"}) {
  return %a : tensor<f32>
}

//===----------------------------------------------------------------------===//
// dsc.state / dsc.load
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{'dsc.state' op attribute 'type' failed to satisfy constraint: type attribute of statically shaped tensor}}
dsc.state parameter @dynamic : tensor<?x4xf32>

// -----

// expected-error @+1 {{'dsc.state' op attribute 'type' failed to satisfy constraint}}
dsc.state parameter @int8 : tensor<4xi8>

// -----

// expected-error @+1 {{'dsc.state' op @huge of type 'tensor<4611686018427387904x4xf32>' has more elements or bytes than fit in int64}}
dsc.state parameter @huge : tensor<4611686018427387904x4xf32>

// -----

func.func @state_in_function() {
  // expected-error @+1 {{'dsc.state' op expects parent op 'builtin.module'}}
  dsc.state parameter @w : tensor<4xf32>
  return
}

// -----

func.func @load_undeclared() {
  // expected-error @+1 {{'dsc.load' op reads @missing, which is not declared}}
  %0 = dsc.load @missing : tensor<4xf32>
  return
}

// -----

func.func @not_state() {
  // expected-error @+1 {{'dsc.load' op reads @not_state, which is a 'func.func', not a 'dsc.state'}}
  %0 = dsc.load @not_state : tensor<4xf32>
  return
}

// -----

dsc.state parameter @w : tensor<4x8xf32>
func.func @load_wrong_type() {
  // expected-error @+1 {{'dsc.load' op result type 'tensor<8x4xf32>' differs from the declared type 'tensor<4x8xf32>' of @w}}
  %0 = dsc.load @w : tensor<8x4xf32>
  return
}

// -----

func.func @store_undeclared(%v: tensor<4xf32>) {
  // expected-error @+1 {{'dsc.store' op writes @missing, which is not declared}}
  dsc.store %v to @missing : tensor<4xf32>
  return
}

// -----

func.func @store_not_state(%v: tensor<4xf32>) {
  // expected-error @+1 {{'dsc.store' op writes @store_not_state, which is a 'func.func', not a 'dsc.state'}}
  dsc.store %v to @store_not_state : tensor<4xf32>
  return
}

// -----

dsc.state parameter @w : tensor<4x8xf32>
func.func @store_wrong_type(%v: tensor<8x4xf32>) {
  // expected-error @+1 {{'dsc.store' op value type 'tensor<8x4xf32>' differs from the declared type 'tensor<4x8xf32>' of @w}}
  dsc.store %v to @w : tensor<8x4xf32>
  return
}

// -----

dsc.state optimizer @m : tensor<4xf32>
func.func @store_twice(%v: tensor<4xf32>) {
  dsc.store %v to @m : tensor<4xf32>
  // expected-error @+1 {{'dsc.store' op writes @m a second time; a state is written at most once per graph}}
  dsc.store %v to @m : tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Sizes and element types shared by every op
//===----------------------------------------------------------------------===//

// -----

func.func @size_overflow(%x: tensor<4611686018427387904x2xf32>) {
  // expected-error @+1 {{'dsc.relu' op operand #0 of type 'tensor<4611686018427387904x2xf32>' has more elements or bytes than fit in int64}}
  %0 = dsc.relu %x : tensor<4611686018427387904x2xf32>
  return
}

// -----

func.func @count_overflow(%x: tensor<4294967296x4294967296xi1>) {
  // expected-error @+1 {{has more elements or bytes than fit in int64}}
  %0 = dsc.reshape %x : tensor<4294967296x4294967296xi1> -> tensor<4294967296x4294967296xi1>
  return
}

// -----

func.func @dynamic_operand(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'dsc.relu' op operand #0 must be statically shaped tensor}}
  %0 = dsc.relu %x : tensor<?x4xf32>
  return
}

// -----

func.func @unsupported_constant() {
  // expected-error @+1 {{'dsc.constant' op result #0 must be statically shaped tensor of}}
  %0 = dsc.constant dense<1> : tensor<2xi8>
  return
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// -----

func.func @no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+1 {{operand shapes [2x3] and [4x3] do not broadcast (dimensions must be equal or 1)}}
  %0 = dsc.add %a, %b : tensor<2x3xf32>, tensor<4x3xf32>
  return
}

// -----

func.func @mixed_elements(%a: tensor<3xf32>, %b: tensor<3xf16>) {
  // expected-error @+1 {{'dsc.mul' op requires the same element type for all operands and results}}
  %0 = dsc.mul %a, %b : tensor<3xf32>, tensor<3xf16>
  return
}

// -----

func.func @integer_pow(%a: tensor<3xi64>) {
  // expected-error @+1 {{'dsc.pow' op operand #0 must be statically shaped tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = dsc.pow %a, %a : tensor<3xi64>, tensor<3xi64>
  return
}

// -----

func.func @bool_arithmetic(%a: tensor<3xi1>) {
  // expected-error @+1 {{'dsc.add' op operand #0 must be statically shaped tensor of}}
  %0 = dsc.add %a, %a : tensor<3xi1>, tensor<3xi1>
  return
}

// -----

func.func @relu_int(%a: tensor<3xi64>) {
  // expected-error @+1 {{'dsc.relu' op operand #0 must be statically shaped tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = dsc.relu %a : tensor<3xi64>
  return
}
// -----

func.func @silu_int(%a: tensor<3xi64>) {
  // expected-error @+1 {{'dsc.silu' op operand #0 must be statically shaped tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = dsc.silu %a : tensor<3xi64>
  return
}
// -----

func.func @sigmoid_int(%a: tensor<3xi64>) {
  // expected-error @+1 {{'dsc.sigmoid' op operand #0 must be statically shaped tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = dsc.sigmoid %a : tensor<3xi64>
  return
}
// -----

func.func @tanh_int(%a: tensor<3xi64>) {
  // expected-error @+1 {{'dsc.tanh' op operand #0 must be statically shaped tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = dsc.tanh %a : tensor<3xi64>
  return
}
// -----

func.func @exp_int(%a: tensor<3xi64>) {
  // expected-error @+1 {{'dsc.exp' op operand #0 must be statically shaped tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = dsc.exp %a : tensor<3xi64>
  return
}
// -----

func.func @log_int(%a: tensor<3xi64>) {
  // expected-error @+1 {{'dsc.log' op operand #0 must be statically shaped tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = dsc.log %a : tensor<3xi64>
  return
}
// -----

func.func @sqrt_int(%a: tensor<3xi64>) {
  // expected-error @+1 {{'dsc.sqrt' op operand #0 must be statically shaped tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = dsc.sqrt %a : tensor<3xi64>
  return
}
// -----

func.func @rsqrt_int(%a: tensor<3xi64>) {
  // expected-error @+1 {{'dsc.rsqrt' op operand #0 must be statically shaped tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = dsc.rsqrt %a : tensor<3xi64>
  return
}
// -----

func.func @gelu_int(%a: tensor<3xi32>) {
  // expected-error @+1 {{'dsc.gelu' op operand #0 must be statically shaped tensor of 64-bit float}}
  %0 = dsc.gelu erf %a : tensor<3xi32>
  return
}

// -----

func.func @gelu_form(%a: tensor<3xf32>) {
  // expected-error @+1 {{custom op 'dsc.gelu' expected string or keyword containing one of the following enum values for attribute 'approximation' [erf, tanh]}}
  %0 = dsc.gelu fast %a : tensor<3xf32>
  return
}

// -----

func.func @gelu_grad_int(%a: tensor<3xi32>) {
  // expected-error @+1 {{'dsc.gelu_grad' op operand #0 must be statically shaped tensor of 64-bit float}}
  %0 = dsc.gelu_grad tanh %a : tensor<3xi32>
  return
}

// -----

func.func @gelu_grad_type(%a: tensor<3xf32>) {
  // expected-error @+1 {{'dsc.gelu_grad' op requires the same type for all operands and results}}
  %0 = "dsc.gelu_grad"(%a) <{approximation = 0 : i32}> : (tensor<3xf32>) -> tensor<3xf64>
  return
}

// -----

func.func @neg_bool(%a: tensor<3xi1>) {
  // expected-error @+1 {{'dsc.neg' op operand #0 must be statically shaped tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type or 64-bit signless integer or 32-bit signless integer values}}
  %0 = dsc.neg %a : tensor<3xi1>
  return
}
// -----

func.func @sub_shapes(%a: tensor<5xi32>, %b: tensor<2x3xi32>) {
  // expected-error @+1 {{operand shapes [5] and [2x3] do not broadcast}}
  %0 = dsc.sub %a, %b : tensor<5xi32>, tensor<2x3xi32>
  return
}
// -----

func.func @div_shapes(%a: tensor<5xi32>, %b: tensor<2x3xi32>) {
  // expected-error @+1 {{operand shapes [5] and [2x3] do not broadcast}}
  %0 = dsc.div %a, %b : tensor<5xi32>, tensor<2x3xi32>
  return
}
// -----

func.func @maximum_shapes(%a: tensor<5xi32>, %b: tensor<2x3xi32>) {
  // expected-error @+1 {{operand shapes [5] and [2x3] do not broadcast}}
  %0 = dsc.maximum %a, %b : tensor<5xi32>, tensor<2x3xi32>
  return
}
// -----

func.func @minimum_shapes(%a: tensor<5xi32>, %b: tensor<2x3xi32>) {
  // expected-error @+1 {{operand shapes [5] and [2x3] do not broadcast}}
  %0 = dsc.minimum %a, %b : tensor<5xi32>, tensor<2x3xi32>
  return
}
// -----

func.func @convert_unsupported(%a: tensor<3xf32>) {
  // expected-error @+1 {{'dsc.convert' op result #0 must be statically shaped tensor of}}
  %0 = dsc.convert %a : tensor<3xf32> to tensor<3xi16>
  return
}

// -----

func.func @convert_shape(%a: tensor<3xf32>) {
  // expected-error @+1 {{'dsc.convert' op changes the shape from [3] to [4]; only the element type may change}}
  %0 = dsc.convert %a : tensor<3xf32> to tensor<4xbf16>
  return
}

// -----

func.func @compare_types(%a: tensor<3xf32>, %b: tensor<3xi64>) {
  // expected-error @+1 {{'dsc.compare' op compares different element types 'f32' and 'i64'}}
  %0 = dsc.compare eq, %a, %b : tensor<3xf32>, tensor<3xi64>
  return
}

// -----

func.func @compare_shapes(%a: tensor<3xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{operand shapes [3] and [2] do not broadcast}}
  %0 = dsc.compare eq, %a, %b : tensor<3xf32>, tensor<2xf32>
  return
}

// -----

func.func @select_types(%c: tensor<3xi1>, %a: tensor<3xf32>, %b: tensor<3xf16>) {
  // expected-error @+1 {{'dsc.select' op chooses between different element types 'f32' and 'f16'}}
  %0 = dsc.select %c, %a, %b : tensor<3xi1>, tensor<3xf32>, tensor<3xf16>
  return
}

// -----

func.func @select_condition(%c: tensor<3xf32>, %a: tensor<3xf32>) {
  // expected-error @+1 {{'dsc.select' op operand #0 must be statically shaped tensor of 1-bit signless integer values}}
  %0 = dsc.select %c, %a, %a : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
  return
}

// -----

func.func @select_shapes(%c: tensor<4xi1>, %a: tensor<3xf32>) {
  // expected-error @+1 {{operand shapes [4] and [3] do not broadcast}}
  %0 = dsc.select %c, %a, %a : tensor<4xi1>, tensor<3xf32>, tensor<3xf32>
  return
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

// -----

func.func @matmul_rank(%a: tensor<8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{'dsc.matmul' op operands must have rank >= 2, got 1 and 2}}
  %0 = dsc.matmul %a, %b : tensor<8xf32>, tensor<8x4xf32>
  return
}

// -----

func.func @matmul_contracting(%a: tensor<2x8x16xf32>, %b: tensor<2x8x16xf32>) {
  // expected-error @+1 {{'dsc.matmul' op contracting dimensions differ: lhs has 16, rhs has 8}}
  %0 = dsc.matmul %a, %b : tensor<2x8x16xf32>, tensor<2x8x16xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<3x8x16xf32>, %b: tensor<2x16x4xf32>) {
  // expected-error @+1 {{'dsc.matmul' op batch dimensions [3] and [2] do not broadcast}}
  %0 = dsc.matmul %a, %b : tensor<3x8x16xf32>, tensor<2x16x4xf32>
  return
}

// -----

func.func @matmul_types(%a: tensor<8x16xf32>, %b: tensor<16x4xbf16>) {
  // expected-error @+1 {{'dsc.matmul' op multiplies different element types 'f32' and 'bf16'}}
  %0 = dsc.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xbf16>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<2x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'dsc.linear' op weight must be [out_features, in_features], got rank 1}}
  %0 = dsc.linear %x, %w : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @linear_features(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{'dsc.linear' op input has 8 features but the weight expects 4}}
  %0 = dsc.linear %x, %w : tensor<2x8xf32>, tensor<8x4xf32>
  return
}

// -----

func.func @linear_bias(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'dsc.linear' op bias must be 'tensor<4xf32>', got 'tensor<8xf32>'}}
  %0 = dsc.linear %x, %w, %b : tensor<2x8xf32>, tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @linear_types(%x: tensor<2x8xf32>, %w: tensor<4x8xf16>) {
  // expected-error @+1 {{'dsc.linear' op weight element type 'f16' differs from the input's 'f32'}}
  %0 = dsc.linear %x, %w : tensor<2x8xf32>, tensor<4x8xf16>
  return
}

// -----

func.func @linear_scalar(%x: tensor<f32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'dsc.linear' op input must have rank >= 1}}
  %0 = dsc.linear %x, %w : tensor<f32>, tensor<4x8xf32>
  return
}

// -----

func.func @embedding_table(%t: tensor<4x8x2xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{'dsc.embedding' op table must be [num_embeddings, embedding_dim], got rank 3}}
  %0 = dsc.embedding %t, %i : tensor<4x8x2xf32>, tensor<3xi64>
  return
}

// -----

func.func @embedding_padding(%t: tensor<4x8xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{'dsc.embedding' op padding_idx 4 is not a row of a table with 4 rows}}
  %0 = dsc.embedding %t, %i padding_idx = 4 : tensor<4x8xf32>, tensor<3xi64>
  return
}

// -----

func.func @embedding_float_indices(%t: tensor<4x8xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{'dsc.embedding' op operand #1 must be statically shaped tensor of 64-bit signless integer or 32-bit signless integer values}}
  %0 = dsc.embedding %t, %i : tensor<4x8xf32>, tensor<3xf32>
  return
}

//===----------------------------------------------------------------------===//
// Normalization and attention
//===----------------------------------------------------------------------===//

// -----

func.func @ln_rank(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'dsc.layer_norm' op normalized_rank 3 must be between 1 and the input rank 2}}
  %0 = dsc.layer_norm %x {normalized_rank = 3 : i64} : tensor<2x8xf32>
  return
}

// -----

func.func @ln_epsilon(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'dsc.layer_norm' op epsilon must be finite and >= 0, got -1.0}}
  %0 = dsc.layer_norm %x {epsilon = -1.0 : f64} : tensor<2x8xf32>
  return
}

// -----

func.func @ln_weight(%x: tensor<2x8xf32>, %w: tensor<2x8xf32>) {
  // expected-error @+1 {{'dsc.layer_norm' op weight must have the normalized shape 'tensor<8xf32>', got 'tensor<2x8xf32>'}}
  %0 = dsc.layer_norm %x weight(%w : tensor<2x8xf32>) : tensor<2x8xf32>
  return
}

// -----

func.func @ln_bias(%x: tensor<2x8xf32>, %b: tensor<8xbf16>) {
  // expected-error @+1 {{'dsc.layer_norm' op bias must have the normalized shape 'tensor<8xf32>', got 'tensor<8xbf16>'}}
  %0 = dsc.layer_norm %x bias(%b : tensor<8xbf16>) : tensor<2x8xf32>
  return
}

// -----

func.func @softmax_dim(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'dsc.softmax' op dim 2 is out of range for rank 2}}
  %0 = dsc.softmax %x, dim = 2 : tensor<2x8xf32>
  return
}

// -----

func.func @log_softmax_negative_dim(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'dsc.log_softmax' op dim -1 is out of range for rank 2}}
  %0 = dsc.log_softmax %x, dim = -1 : tensor<2x8xf32>
  return
}

// -----

func.func @mask_rank(%x: tensor<8xf32>) {
  // expected-error @+1 {{'dsc.causal_mask' op needs scores of rank >= 2 ([..., queries, keys]), got rank 1}}
  %0 = dsc.causal_mask %x : tensor<8xf32>
  return
}

// -----

func.func @mask_nan(%x: tensor<8x8xf32>) {
  // expected-error @+1 {{'dsc.causal_mask' op fill_value must not be NaN}}
  %0 = dsc.causal_mask %x {fill_value = 0x7FF8000000000000 : f64} : tensor<8x8xf32>
  return
}

// -----

func.func @dropout_one(%x: tensor<8xf32>, %key: tensor<4xi64>) {
  // expected-error @+1 {{'dsc.dropout' op p must be in [0, 1), got 1.0}}
  %0 = dsc.dropout %x, %key, p = 1.0, seed = 0, samples = 1 : tensor<8xf32>
  return
}

// -----

func.func @dropout_negative(%x: tensor<8xf32>, %key: tensor<4xi64>) {
  // expected-error @+1 {{'dsc.dropout' op p must be in [0, 1), got -5.000000e-01}}
  %0 = dsc.dropout %x, %key, p = -0.5, seed = 0, samples = 1 : tensor<8xf32>
  return
}

// -----

func.func @dropout_samples(%x: tensor<8xf32>, %key: tensor<4xi64>) {
  // expected-error @+1 {{'dsc.dropout' op samples must be >= 1 and divide the input's 8 elements, got 3}}
  %0 = dsc.dropout %x, %key, p = 0.5, seed = 0, samples = 3 : tensor<8xf32>
  return
}

// -----

func.func @dropout_key(%x: tensor<8xf32>, %key: tensor<3xi64>) {
  // expected-error @+1 {{'dsc.dropout' op operand #1 must be tensor<4xi64>, but got 'tensor<3xi64>'}}
  %0 = "dsc.dropout"(%x, %key) {p = 0.5 : f64, seed = 0 : i64, samples = 1 : i64} : (tensor<8xf32>, tensor<3xi64>) -> tensor<8xf32>
  return
}

// -----

func.func @dropout_parts_without_part(%x: tensor<8xf32>, %key: tensor<4xi64>) {
  // expected-error @+1 {{'dsc.dropout' op takes the index of its part (`part %r of G`) exactly when it is one of G > 1 parts}}
  %0 = "dsc.dropout"(%x, %key) {p = 0.5 : f64, seed = 0 : i64, samples = 1 : i64, parts = 2 : i64} : (tensor<8xf32>, tensor<4xi64>) -> tensor<8xf32>
  return
}

// -----

func.func @dropout_part_of_one(%x: tensor<8xf32>, %key: tensor<4xi64>, %r: tensor<1xi64>) {
  // expected-error @+1 {{'dsc.dropout' op takes the index of its part (`part %r of G`) exactly when it is one of G > 1 parts}}
  %0 = dsc.dropout %x, %key, p = 0.5, seed = 0, samples = 1 part %r of 1 : tensor<8xf32>
  return
}

// -----

func.func @dropout_parts_zero(%x: tensor<8xf32>, %key: tensor<4xi64>, %r: tensor<1xi64>) {
  // expected-error @+1 {{'dsc.dropout' op parts must be >= 1, got 0}}
  %0 = dsc.dropout %x, %key, p = 0.5, seed = 0, samples = 1 part %r of 0 : tensor<8xf32>
  return
}

// -----

func.func @dropout_part_type(%x: tensor<8xf32>, %key: tensor<4xi64>, %r: tensor<2xi64>) {
  // expected-error @+1 {{'dsc.dropout' op operand #2 must be tensor<1xi64>, but got 'tensor<2xi64>'}}
  %0 = "dsc.dropout"(%x, %key, %r) {p = 0.5 : f64, seed = 0 : i64, samples = 1 : i64, parts = 2 : i64} : (tensor<8xf32>, tensor<4xi64>, tensor<2xi64>) -> tensor<8xf32>
  return
}

// -----

func.func @random_ltd_indices_rank(%key: tensor<4xi64>) {
  // expected-error @+1 {{'dsc.random_ltd_indices' op result must be [samples, kept], got rank 1}}
  %0 = dsc.random_ltd_indices %key, length = 8, seed = 0 : tensor<4xi64>
  return
}

// -----

func.func @random_ltd_indices_kept(%key: tensor<4xi64>) {
  // expected-error @+1 {{'dsc.random_ltd_indices' op kept length must lie in [1, length = 8], got 9}}
  %0 = dsc.random_ltd_indices %key, length = 8, seed = 0 : tensor<2x9xi64>
  return
}

// -----

func.func @random_ltd_indices_key(%key: tensor<2xi64>) {
  // expected-error @+1 {{'dsc.random_ltd_indices' op operand #0 must be tensor<4xi64>, but got 'tensor<2xi64>'}}
  %0 = "dsc.random_ltd_indices"(%key) {length = 8 : i64, seed = 0 : i64} : (tensor<2xi64>) -> tensor<2x4xi64>
  return
}

// -----

func.func @random_uniform_bounds(%key: tensor<4xi64>) {
  // expected-error @+1 {{'dsc.random_uniform' op needs finite low < high, got [1.000000e+00, 1.000000e+00]}}
  %0 = dsc.random_uniform %key, low = 1.0, high = 1.0, seed = 0, samples = 1 : tensor<4xf32>
  return
}

// -----

func.func @random_uniform_infinite(%key: tensor<4xi64>) {
  // expected-error @+1 {{'dsc.random_uniform' op needs finite low < high, got [0.000000e+00, INF]}}
  %0 = dsc.random_uniform %key, low = 0.0, high = 0x7FF0000000000000, seed = 0, samples = 1 : tensor<4xf32>
  return
}

// -----

func.func @random_uniform_samples(%key: tensor<4xi64>) {
  // expected-error @+1 {{'dsc.random_uniform' op samples must be >= 1 and divide the result's 6 elements, got 4}}
  %0 = dsc.random_uniform %key, low = 0.0, high = 1.0, seed = 0, samples = 4 : tensor<2x3xf32>
  return
}

// -----

func.func @random_uniform_type(%key: tensor<4xi64>) {
  // expected-error @+1 {{'dsc.random_uniform' op result #0 must be statically shaped tensor of 32-bit float values, but got 'tensor<4xbf16>'}}
  %0 = dsc.random_uniform %key, low = 0.0, high = 1.0, seed = 0, samples = 1 : tensor<4xbf16>
  return
}

// -----

func.func @step_key_type() {
  // expected-error @+1 {{'dsc.step_key' op result #0 must be tensor<4xi64>, but got 'tensor<4xi32>'}}
  %0 = dsc.step_key : tensor<4xi32>
  return
}

// -----

func.func @step_key_negative_offset() {
  // expected-error @+1 {{'dsc.step_key' op sample_offset must be >= 0, got -2}}
  %0 = dsc.step_key sample_offset = -2 : tensor<4xi64>
  return
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

// -----

func.func @reshape_count(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'dsc.reshape' op changes the element count from 16 to 15}}
  %0 = dsc.reshape %x : tensor<2x8xf32> -> tensor<3x5xf32>
  return
}

// -----

func.func @reshape_type(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'dsc.reshape' op changes the element type from 'f32' to 'f16'; use dsc.convert}}
  %0 = dsc.reshape %x : tensor<2x8xf32> -> tensor<16xf16>
  return
}

// -----

func.func @transpose_dim(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'dsc.transpose' op dim1 2 is out of range for rank 2 (expected 0 <= dim1 < 2)}}
  %0 = dsc.transpose %x, 0, 2 : tensor<2x8xf32>
  return
}

// -----

func.func @permute_length(%x: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'dsc.permute' op permutation has 2 entries but the input has rank 3}}
  %0 = dsc.permute %x, [1, 0] : tensor<2x8x4xf32>
  return
}

// -----

func.func @permute_repeat(%x: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'dsc.permute' op permutation repeats dimension 1}}
  %0 = dsc.permute %x, [1, 0, 1] : tensor<2x8x4xf32>
  return
}

// -----

func.func @permute_range(%x: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'dsc.permute' op permutation entry -1 is out of range for rank 3}}
  %0 = dsc.permute %x, [0, 1, -1] : tensor<2x8x4xf32>
  return
}

// -----

func.func @slice_dim(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'dsc.slice' op dim 2 is out of range for rank 2}}
  %0 = dsc.slice %x, dim = 2, start = 0, end = 1, step = 1 : tensor<2x8xf32>
  return
}

// -----

func.func @slice_reversed(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'dsc.slice' op bounds [5, 3) must satisfy 0 <= start <= end <= 8}}
  %0 = dsc.slice %x, dim = 1, start = 5, end = 3, step = 1 : tensor<2x8xf32>
  return
}

// -----

func.func @slice_past_end(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'dsc.slice' op bounds [0, 9) must satisfy 0 <= start <= end <= 8}}
  %0 = dsc.slice %x, dim = 1, start = 0, end = 9, step = 1 : tensor<2x8xf32>
  return
}

// -----

func.func @slice_step(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'dsc.slice' op step must be >= 1, got 0}}
  %0 = dsc.slice %x, dim = 1, start = 0, end = 8, step = 0 : tensor<2x8xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<2x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'dsc.concat' op input #1 has rank 1, input #0 has rank 2}}
  %0 = dsc.concat(%a, %b), dim = 0 : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @concat_sizes(%a: tensor<2x8xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{'dsc.concat' op input #1 has size 4 in dimension 1, input #0 has 8 (only dimension 0 may differ)}}
  %0 = dsc.concat(%a, %b), dim = 0 : tensor<2x8xf32>, tensor<3x4xf32>
  return
}

// -----

func.func @concat_dim(%a: tensor<2x8xf32>) {
  // expected-error @+1 {{'dsc.concat' op dim 2 is out of range for rank 2}}
  %0 = dsc.concat(%a, %a), dim = 2 : tensor<2x8xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @concat_types(%a: tensor<2x8xf32>, %b: tensor<2x8xf16>) {
  // expected-error @+1 {{'dsc.concat' op requires the same element type for all operands and results}}
  %0 = dsc.concat(%a, %b), dim = 0 : tensor<2x8xf32>, tensor<2x8xf16>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+1 {{'dsc.concat' op expected 1 or more operands, but found 0}}
  %0 = "dsc.concat"() <{dim = 0 : i64}> : () -> tensor<2xf32>
  return
}

// -----

func.func @concat_overflow(%a: tensor<4611686018427387904xi1>) {
  // expected-error @+1 {{'dsc.concat' op concatenated size overflows int64}}
  %0 = dsc.concat(%a, %a), dim = 0 : tensor<4611686018427387904xi1>, tensor<4611686018427387904xi1>
  return
}

// -----

func.func @broadcast_rank(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'dsc.broadcast' op cannot broadcast rank 2 to the smaller rank 1}}
  %0 = dsc.broadcast %x : tensor<2x8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @broadcast_size(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'dsc.broadcast' op input dimension 0 of size 2 cannot broadcast to size 4 (must be equal or 1)}}
  %0 = dsc.broadcast %x : tensor<2x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_type(%x: tensor<1x8xf32>) {
  // expected-error @+1 {{'dsc.broadcast' op changes the element type from 'f32' to 'bf16'}}
  %0 = dsc.broadcast %x : tensor<1x8xf32> -> tensor<4x8xbf16>
  return
}

//===----------------------------------------------------------------------===//
// Indexing and routing
//===----------------------------------------------------------------------===//

// -----

func.func @gather_rank(%x: tensor<16x4xf32>, %i: tensor<16xi64>) {
  // expected-error @+1 {{'dsc.gather' op index has rank 1, the input has rank 2}}
  %0 = dsc.gather %x, %i, dim = 1 : tensor<16x4xf32>, tensor<16xi64>
  return
}

// -----

func.func @gather_size(%x: tensor<16x4xf32>, %i: tensor<17x1xi64>) {
  // expected-error @+1 {{'dsc.gather' op index size 17 in dimension 0 exceeds the input's 16}}
  %0 = dsc.gather %x, %i, dim = 1 : tensor<16x4xf32>, tensor<17x1xi64>
  return
}

// -----

func.func @gather_dim(%x: tensor<16x4xf32>, %i: tensor<16x1xi64>) {
  // expected-error @+1 {{'dsc.gather' op dim 2 is out of range for rank 2}}
  %0 = dsc.gather %x, %i, dim = 2 : tensor<16x4xf32>, tensor<16x1xi64>
  return
}

// -----

func.func @scatter_rank(%x: tensor<4x8xf32>, %i: tensor<16xi64>, %s: tensor<16xf32>) {
  // expected-error @+1 {{'dsc.scatter_add' op input, index and src must have one rank, got 2, 1 and 1}}
  %0 = dsc.scatter_add %x, %i, %s, dim = 0 : tensor<4x8xf32>, tensor<16xi64>, tensor<16xf32>
  return
}

// -----

func.func @scatter_dim(%x: tensor<4x8xf32>, %i: tensor<4x8xi64>, %s: tensor<4x8xf32>) {
  // expected-error @+1 {{'dsc.scatter_add' op dim 5 is out of range for rank 2}}
  %0 = dsc.scatter_add %x, %i, %s, dim = 5 : tensor<4x8xf32>, tensor<4x8xi64>, tensor<4x8xf32>
  return
}

// -----

func.func @scatter_types(%x: tensor<4x8xf32>, %i: tensor<4x8xi64>, %s: tensor<4x8xf16>) {
  // expected-error @+1 {{'dsc.scatter_add' op adds 'f16' values into a 'f32' tensor}}
  %0 = dsc.scatter_add %x, %i, %s, dim = 0 : tensor<4x8xf32>, tensor<4x8xi64>, tensor<4x8xf16>
  return
}

// -----

func.func @scatter_src(%x: tensor<4x8xf32>, %i: tensor<4x8xi64>, %s: tensor<4x7xf32>) {
  // expected-error @+1 {{'dsc.scatter_add' op index size 8 in dimension 1 exceeds src's 7}}
  %0 = dsc.scatter_add %x, %i, %s, dim = 0 : tensor<4x8xf32>, tensor<4x8xi64>, tensor<4x7xf32>
  return
}

// -----

func.func @scatter_input(%x: tensor<4x8xf32>, %i: tensor<16x9xi64>, %s: tensor<16x9xf32>) {
  // expected-error @+1 {{'dsc.scatter_add' op index size 9 in dimension 1 exceeds the input's 8}}
  %0 = dsc.scatter_add %x, %i, %s, dim = 0 : tensor<4x8xf32>, tensor<16x9xi64>, tensor<16x9xf32>
  return
}

// -----

func.func @topk_k(%x: tensor<16x4xf32>) {
  // expected-error @+1 {{'dsc.top_k' op k 5 must be between 1 and the size 4 of dimension 1}}
  %v, %i = dsc.top_k %x, k = 5, dim = 1 : tensor<16x4xf32>
  return
}

// -----

func.func @topk_zero(%x: tensor<16x4xf32>) {
  // expected-error @+1 {{'dsc.top_k' op k 0 must be between 1 and the size 4 of dimension 1}}
  %v, %i = dsc.top_k %x, k = 0, dim = 1 : tensor<16x4xf32>
  return
}

// -----

func.func @topk_dim(%x: tensor<16x4xf32>) {
  // expected-error @+1 {{'dsc.top_k' op dim 2 is out of range for rank 2}}
  %v, %i = dsc.top_k %x, k = 1, dim = 2 : tensor<16x4xf32>
  return
}

// -----

func.func @cumsum_dim(%x: tensor<16x4xi64>) {
  // expected-error @+1 {{'dsc.cumsum' op dim 2 is out of range for rank 2}}
  %0 = dsc.cumsum %x, dim = 2 : tensor<16x4xi64>
  return
}

// -----

func.func @one_hot_shape(%i: tensor<16xi64>) {
  // expected-error @+1 {{'dsc.one_hot' op result shape must be the indices' shape plus a class dimension, got 'tensor<8x4xf32>' for indices 'tensor<16xi64>'}}
  %0 = dsc.one_hot %i : tensor<16xi64> -> tensor<8x4xf32>
  return
}

// -----

func.func @one_hot_classes(%i: tensor<16xi64>) {
  // expected-error @+1 {{'dsc.one_hot' op needs at least one class}}
  %0 = dsc.one_hot %i : tensor<16xi64> -> tensor<16x0xf32>
  return
}

//===----------------------------------------------------------------------===//
// Reductions and losses
//===----------------------------------------------------------------------===//

// -----

func.func @reduce_empty(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{dims must not be empty (list every dimension to reduce them all)}}
  %0 = dsc.reduce_sum %x, dims = [] : tensor<2x8xf32>
  return
}

// -----

func.func @reduce_range(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{reduced dimension 2 is out of range for rank 2}}
  %0 = dsc.reduce_max %x, dims = [2] : tensor<2x8xf32>
  return
}

// -----

func.func @reduce_order(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{dims must be strictly increasing}}
  %0 = dsc.reduce_mean %x, dims = [1, 0] : tensor<2x8xf32>
  return
}

// -----

func.func @reduce_mean_int(%x: tensor<2x8xi64>) {
  // expected-error @+1 {{'dsc.reduce_mean' op operand #0 must be statically shaped tensor of 64-bit float}}
  %0 = dsc.reduce_mean %x, dims = [1] : tensor<2x8xi64>
  return
}

// -----

func.func @ce_targets(%l: tensor<2x8x32xf32>, %t: tensor<16xi64>) {
  // expected-error @+1 {{'dsc.cross_entropy' op targets must have the logits' shape without the class dimension, [2x8], got [16]}}
  %0 = dsc.cross_entropy %l, %t : tensor<2x8x32xf32>, tensor<16xi64>
  return
}

// -----

func.func @ce_scalar(%l: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'dsc.cross_entropy' op logits must have a class dimension (rank >= 1)}}
  %0 = dsc.cross_entropy %l, %t : tensor<f32>, tensor<i64>
  return
}

// -----

func.func @ce_float_targets(%l: tensor<2x8xf32>, %t: tensor<2xf32>) {
  // expected-error @+1 {{'dsc.cross_entropy' op operand #1 must be statically shaped tensor of 64-bit signless integer or 32-bit signless integer values}}
  %0 = dsc.cross_entropy %l, %t : tensor<2x8xf32>, tensor<2xf32>
  return
}

// -----

func.func @ce_grad_targets(%l: tensor<2x8x32xf32>, %t: tensor<16xi64>, %s: tensor<16xf32>) {
  // expected-error @+1 {{'dsc.cross_entropy_grad' op targets must have the logits' shape without the class dimension, [2x8], got [16]}}
  %0 = dsc.cross_entropy_grad %l, %t, %s : tensor<2x8x32xf32>, tensor<16xi64>, tensor<16xf32>
  return
}

// -----

func.func @ce_grad_scale(%l: tensor<2x8xf32>, %t: tensor<2xi64>, %s: tensor<f32>) {
  // expected-error @+1 {{'dsc.cross_entropy_grad' op scale must be [2] of the logits' element type, got 'tensor<f32>'}}
  %0 = dsc.cross_entropy_grad %l, %t, %s : tensor<2x8xf32>, tensor<2xi64>, tensor<f32>
  return
}

// -----

func.func @ce_grad_scale_type(%l: tensor<2x8xf32>, %t: tensor<2xi64>, %s: tensor<2xbf16>) {
  // expected-error @+1 {{'dsc.cross_entropy_grad' op scale must be [2] of the logits' element type, got 'tensor<2xbf16>'}}
  %0 = dsc.cross_entropy_grad %l, %t, %s : tensor<2x8xf32>, tensor<2xi64>, tensor<2xbf16>
  return
}

// -----

func.func @ce_grad_scalar(%l: tensor<f32>, %t: tensor<i64>, %s: tensor<i64>) {
  // expected-error @+1 {{'dsc.cross_entropy_grad' op operand #2 must be statically shaped tensor of}}
  %0 = dsc.cross_entropy_grad %l, %t, %s : tensor<f32>, tensor<i64>, tensor<i64>
  return
}

//===----------------------------------------------------------------------===//
// Generic form: required attributes are checked before shape inference
//===----------------------------------------------------------------------===//

// -----

func.func @generic_missing_attr(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'dsc.transpose' op requires attribute 'dim0'}}
  %0 = "dsc.transpose"(%x) <{dim1 = 0 : i64}> : (tensor<2x8xf32>) -> tensor<8x2xf32>
  return
}

// -----

func.func @generic_wrong_result(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'dsc.transpose' op inferred type(s) 'tensor<8x2xf32>' are incompatible with return type(s) of operation 'tensor<2x8xf32>'}}
  // expected-error @+1 {{'dsc.transpose' op failed to infer returned types}}
  %0 = "dsc.transpose"(%x) <{dim0 = 0 : i64, dim1 = 1 : i64}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @all_reduce_bool(%x: tensor<2xi1>) {
  // expected-error @+1 {{'dsc.all_reduce' op operand #0 must be statically shaped tensor of}}
  %0 = dsc.all_reduce %x : tensor<2xi1>
  return
}

// -----

func.func @all_reduce_type(%x: tensor<2xf32>) {
  // expected-error @+1 {{'dsc.all_reduce' op requires the same type for all operands and results}}
  %0 = "dsc.all_reduce"(%x) : (tensor<2xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @cos_int(%a: tensor<3xi64>) {
  // expected-error @+1 {{'dsc.cos' op operand #0 must be statically shaped tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = dsc.cos %a : tensor<3xi64>
  return
}

// -----

func.func @all_gather_without_world_size(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dsc.all_gather' op needs the number of ranks: the enclosing module has no 'dsc.world_size' (run --dsc-data-parallel first)}}
  %0 = dsc.all_gather %x : tensor<4xf32> -> tensor<8xf32>
  return
}

// -----

func.func @sin_type(%a: tensor<3xf32>) {
  // expected-error @+1 {{'dsc.sin' op requires the same type for all operands and results}}
  %0 = "dsc.sin"(%a) : (tensor<3xf32>) -> tensor<3xf64>
  return
}

// -----

module attributes {dsc.world_size = 2 : i64} {
  func.func @all_gather_ratio(%x: tensor<4xf32>) {
    // expected-error @+1 {{'dsc.all_gather' op relates a whole of 12 elements to shards of 4, but its world group has 2 ranks (the whole must be the group's size times the shard)}}
    %0 = dsc.all_gather %x : tensor<4xf32> -> tensor<12xf32>
    return
  }
}

// -----

module attributes {dsc.world_size = 4 : i64, dsc.expert_parallel_size = 2 : i64} {
  func.func @all_gather_expert_data_ratio(%x: tensor<4xf32>) {
    // expected-error @+1 {{'dsc.all_gather' op relates a whole of 16 elements to shards of 4, but its expert_data group has 2 ranks (the whole must be the group's size times the shard)}}
    %0 = dsc.all_gather %x over expert_data : tensor<4xf32> -> tensor<16xf32>
    return
  }
}

// -----

module attributes {dsc.world_size = 4 : i64, dsc.expert_parallel_size = 3 : i64} {
  func.func @expert_parallel_size_not_dividing(%x: tensor<6x2xf32>) {
    // expected-error @+1 {{'dsc.all_to_all' op dsc.expert_parallel_size 3 does not divide dsc.world_size 4}}
    %0 = dsc.all_to_all %x over expert : tensor<6x2xf32>
    return
  }
}

// -----

module attributes {dsc.world_size = 4 : i64, dsc.expert_parallel_size = 4 : i64} {
  func.func @all_to_all_blocks(%x: tensor<6x2xf32>) {
    // expected-error @+1 {{'dsc.all_to_all' op exchanges one block of its leading dimension with each of the 4 ranks of its expert group, but its operand is 'tensor<6x2xf32>'}}
    %0 = dsc.all_to_all %x over expert : tensor<6x2xf32>
    return
  }
}

// -----

module attributes {dsc.world_size = 2 : i64} {
  func.func @all_to_all_scalar(%x: tensor<f32>) {
    // expected-error @+1 {{'dsc.all_to_all' op exchanges one block of its leading dimension with each of the 2 ranks of its world group, but its operand is 'tensor<f32>'}}
    %0 = dsc.all_to_all %x : tensor<f32>
    return
  }
}

// -----

func.func @all_reduce_group_without_world_size(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dsc.all_reduce' op needs the number of ranks: the enclosing module has no 'dsc.world_size' (run --dsc-data-parallel first)}}
  %0 = dsc.all_reduce %x over expert_data : tensor<4xf32>
  return
}

// -----

module attributes {dsc.world_size = 2 : i64} {
  func.func @reduce_scatter_rank(%x: tensor<2x4xf32>) {
    // expected-error @+1 {{'dsc.reduce_scatter' op moves flat tensors (rank 1), got 'tensor<4xf32>' and 'tensor<2x4xf32>'}}
    %0 = dsc.reduce_scatter %x : tensor<2x4xf32> -> tensor<4xf32>
    return
  }
}

// -----

module attributes {dsc.world_size = 2 : i64} {
  func.func @reduce_scatter_element_type(%x: tensor<8xf32>) {
    // expected-error @+1 {{'dsc.reduce_scatter' op requires the same element type for all operands and results}}
    %0 = dsc.reduce_scatter %x : tensor<8xf32> -> tensor<4xf64>
    return
  }
}

// -----

module attributes {dsc.world_size = 4 : i64} {
  func.func @local_shard_ratio(%x: tensor<8xf32>) {
    // expected-error @+1 {{'dsc.local_shard' op relates a whole of 8 elements to shards of 4, but its world group has 4 ranks}}
    %0 = dsc.local_shard %x : tensor<8xf32> -> tensor<4xf32>
    return
  }
}

// -----

module attributes {dsc.world_size = 2 : i64} {
  // expected-error @+1 {{'dsc.state' op @m partitions 'tensor<3x5xf32>' over 2 ranks, so it must be 'tensor<8xf32>', not 'tensor<15xf32>'}}
  dsc.state optimizer @m {partition_of = array<i64: 3, 5>} : tensor<15xf32>
}

// -----

// expected-error @+1 {{'dsc.state' op @m is partitioned, but the module has no positive 'dsc.world_size'}}
dsc.state optimizer @m {partition_of = array<i64: 4>} : tensor<2xf32>


// -----

// expected-error @+1 {{'dsc.state' op @w.m is a master weight: it must be a float tensor named '<parameter>.master'}}
dsc.state master @w.m : tensor<4xf32>

// -----

// expected-error @+1 {{'dsc.state' op @w.master is a master weight: it must be a float tensor named '<parameter>.master'}}
dsc.state master @w.master : tensor<4xi64>

// -----

// dsc-run reads a teacher's weight from the teacher's file under the name
// after the prefix (--dsc-distill).
// expected-error @+1 {{'dsc.state' op @wte.weight is a teacher's weight: it must be named 'teacher.<name in the teacher's model>'}}
dsc.state teacher @wte.weight : tensor<4xf32>

// -----

// expected-error @+1 {{'dsc.state' op @teacher. is a teacher's weight: it must be named 'teacher.<name in the teacher's model>'}}
dsc.state teacher @"teacher." : tensor<4xf32>

// -----

// A teacher's weights are frozen.
dsc.state teacher @teacher.w : tensor<4xf32>
func.func @store_teacher(%v: tensor<4xf32>) {
  // expected-error @+1 {{'dsc.store' op writes @teacher.w, a teacher's weight, which is frozen}}
  dsc.store %v to @teacher.w : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{'dsc.state' op @teacher.w has an init rule, which only parameters and their master weights take}}
dsc.state teacher @teacher.w {init_from = "w"} : tensor<2x4xf32>

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

// -----

func.func @attention_rank(%q: tensor<4x8x16xf32>, %k: tensor<2x4x8x16xf32>) {
  // expected-error @+1 {{'dsc.attention' op needs a rank-4 query ([batch, heads, tokens, head_dim]), got 'tensor<4x8x16xf32>'}}
  %o, %l = dsc.attention %q, %k, %k {scale = 0.25 : f64}
      : tensor<4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
      -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_element_types(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xbf16>) {
  // expected-error @+1 {{'dsc.attention' op needs query, key and value of one element type, got 'f32', 'bf16' and 'bf16'}}
  %o, %l = dsc.attention %q, %k, %k {scale = 0.25 : f64}
      : tensor<2x4x8x16xf32>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>
      -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_heads(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>) {
  // expected-error @+1 {{'dsc.attention' op needs one heads size (dimension 1) in query, key and value, got 4, 2 and 2}}
  %o, %l = dsc.attention %q, %k, %k {scale = 0.25 : f64}
      : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
      -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_batch(%q: tensor<2x4x8x16xf32>, %k: tensor<3x4x8x16xf32>) {
  // expected-error @+1 {{'dsc.attention' op needs one batch size (dimension 0) in query, key and value, got 2, 3 and 3}}
  %o, %l = dsc.attention %q, %k, %k {scale = 0.25 : f64}
      : tensor<2x4x8x16xf32>, tensor<3x4x8x16xf32>, tensor<3x4x8x16xf32>
      -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_head_dim(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x32xf32>) {
  // expected-error @+1 {{'dsc.attention' op needs the key's head size (dimension 3) 32 to equal the query's 16}}
  %o, %l = dsc.attention %q, %k, %k {scale = 0.25 : f64}
      : tensor<2x4x8x16xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x32xf32>
      -> tensor<2x4x8x32xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_values(%q: tensor<2x4x8x16xf32>, %v: tensor<2x4x9x16xf32>) {
  // expected-error @+1 {{'dsc.attention' op needs as many values as keys (dimension 2), got 9 values and 8 keys}}
  %o, %l = dsc.attention %q, %q, %v {scale = 0.25 : f64}
      : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x9x16xf32>
      -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_scale(%q: tensor<2x4x8x16xf32>) {
  // expected-error @+1 {{'dsc.attention' op needs a finite scale, got INF}}
  %o, %l = dsc.attention %q, %q, %q {scale = 0x7FF0000000000000 : f64}
      : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
      -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_mask_type(%q: tensor<2x4x8x16xf32>, %m: tensor<8x8xbf16>) {
  // expected-error @+1 {{'dsc.attention' op needs an i1 mask or one of the query's element type 'f32', got 'bf16'}}
  %o, %l = dsc.attention %q, %q, %q mask(%m : tensor<8x8xbf16>) {scale = 0.25 : f64}
      : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
      -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_mask_shape(%q: tensor<2x4x8x16xf32>, %m: tensor<3x8xi1>) {
  // expected-error @+1 {{'dsc.attention' op needs a mask that broadcasts to the scores [2x4x8x8]: its dimension 0 is 3, not 1 or 8}}
  %o, %l = dsc.attention %q, %q, %q mask(%m : tensor<3x8xi1>) {scale = 0.25 : f64}
      : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
      -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_mask_rank(%q: tensor<2x4x8x16xf32>, %m: tensor<1x2x4x8x8xi1>) {
  // expected-error @+1 {{'dsc.attention' op needs a mask of rank <= 4 that broadcasts to the scores [2x4x8x8], got 'tensor<1x2x4x8x8xi1>'}}
  %o, %l = dsc.attention %q, %q, %q mask(%m : tensor<1x2x4x8x8xi1>) {scale = 0.25 : f64}
      : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
      -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_result(%q: tensor<2x4x8x16xf32>) {
  // expected-error @+1 {{'dsc.attention' op needs a result of type 'tensor<2x4x8x16xf32>' ([batch, heads, queries, value_dim] of the query's element type), got 'tensor<2x4x8x16xbf16>'}}
  %o, %l = dsc.attention %q, %q, %q {scale = 0.25 : f64}
      : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
      -> tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_logsumexp(%q: tensor<2x4x8x16xbf16>) {
  // expected-error @+1 {{'dsc.attention' op needs a log-sum-exp of type 'tensor<2x4x8xf32>' ([batch, heads, queries] f32), got 'tensor<2x4x8xbf16>'}}
  %o, %l = dsc.attention %q, %q, %q {scale = 0.25 : f64}
      : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>
      -> tensor<2x4x8x16xbf16>, tensor<2x4x8xbf16>
  return
}

// -----

func.func @attention_grad_lse(%q: tensor<2x4x8x16xf32>, %l: tensor<2x4x16xf32>) {
  // expected-error @+1 {{'dsc.attention_grad' op needs a log-sum-exp of type 'tensor<2x4x8xf32>' ([batch, heads, queries] f32), got 'tensor<2x4x16xf32>'}}
  %dq, %dk, %dv = dsc.attention_grad %q, %q, %q, %q, %q, %l {scale = 0.25 : f64}
      : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>,
        tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x16xf32>
  return
}

// -----

func.func @attention_grad_cotangent(%q: tensor<2x4x8x16xf32>, %d: tensor<2x4x8x8xf32>, %l: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'dsc.attention_grad' op needs a result_grad of the forward result's type 'tensor<2x4x8x16xf32>', got 'tensor<2x4x8x8xf32>'}}
  %dq, %dk, %dv = dsc.attention_grad %q, %q, %q, %q, %d, %l {scale = 0.25 : f64}
      : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>,
        tensor<2x4x8x16xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_grad_result(%q: tensor<2x4x8x16xf32>, %o: tensor<2x4x8x8xf32>, %l: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'dsc.attention_grad' op needs a forward result of type 'tensor<2x4x8x16xf32>' ([batch, heads, queries, value_dim] of the query's element type), got 'tensor<2x4x8x8xf32>'}}
  %dq, %dk, %dv = dsc.attention_grad %q, %q, %q, %o, %o, %l {scale = 0.25 : f64}
      : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>,
        tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @moe_slots_rank(%e: tensor<16xi64>) {
  // expected-error @+1 {{'dsc.moe_slots' op expects experts of shape [S, k] with k >= 1, got 'tensor<16xi64>'}}
  %s, %c = dsc.moe_slots %e, capacity = 2 : tensor<16xi64> -> tensor<16xi64>, tensor<4xi64>
  return
}

// -----

func.func @moe_slots_shape(%e: tensor<16x2xi64>) {
  // expected-error @+1 {{'dsc.moe_slots' op slots must have the experts' shape 'tensor<16x2xi64>', got 'tensor<16x1xi64>'}}
  %s, %c = dsc.moe_slots %e, capacity = 2 : tensor<16x2xi64> -> tensor<16x1xi64>, tensor<4xi64>
  return
}

// -----

func.func @moe_slots_k_exceeds_experts(%e: tensor<16x3xi64>) {
  // expected-error @+1 {{'dsc.moe_slots' op routes each token to 3 experts of 2}}
  %s, %c = dsc.moe_slots %e, capacity = 2 : tensor<16x3xi64> -> tensor<16x3xi64>, tensor<2xi64>
  return
}

// -----

func.func @moe_slots_capacity(%e: tensor<16x2xi64>) {
  // expected-error @+1 {{'dsc.moe_slots' op capacity must be at least 1, got 0}}
  %s, %c = dsc.moe_slots %e, capacity = 0 : tensor<16x2xi64> -> tensor<16x2xi64>, tensor<4xi64>
  return
}

// -----

func.func @moe_slots_priority(%e: tensor<16x2xi64>, %p: tensor<16xf32>) {
  // expected-error @+1 {{'dsc.moe_slots' op priority must have the experts' shape 'tensor<16x2xi64>', got 'tensor<16xf32>'}}
  %s, %c = dsc.moe_slots %e priority %p, capacity = 2 : tensor<16x2xi64>, tensor<16xf32> -> tensor<16x2xi64>, tensor<4xi64>
  return
}

// -----

func.func @moe_dispatch_tokens(%x: tensor<16x32xf32>, %s: tensor<8x2xi64>) {
  // expected-error @+1 {{'dsc.moe_dispatch' op expects slots of shape [16, k] with k >= 1 for 16 tokens, got 'tensor<8x2xi64>'}}
  %d = dsc.moe_dispatch %x, %s : tensor<16x32xf32>, tensor<8x2xi64> -> tensor<4x5x32xf32>
  return
}

// -----

func.func @moe_dispatch_width(%x: tensor<16x32xf32>, %s: tensor<16x2xi64>) {
  // expected-error @+1 {{'dsc.moe_dispatch' op expects expert slots of shape [E, C, 32] and element type 'f32', got 'tensor<4x5x16xf32>'}}
  %d = dsc.moe_dispatch %x, %s : tensor<16x32xf32>, tensor<16x2xi64> -> tensor<4x5x16xf32>
  return
}

// -----

func.func @moe_combine_weights(%e: tensor<4x5x32xf32>, %s: tensor<16x2xi64>, %w: tensor<16x2xbf16>) {
  // expected-error @+1 {{'dsc.moe_combine' op expects weights of the slots' shape and the tokens' element type, got 'tensor<16x2xbf16>' for slots 'tensor<16x2xi64>' and tokens 'tensor<16x32xf32>'}}
  %y = dsc.moe_combine %e, %s, %w : tensor<4x5x32xf32>, tensor<16x2xi64>, tensor<16x2xbf16> -> tensor<16x32xf32>
  return
}

// -----

func.func @moe_combine_rank(%e: tensor<20x32xf32>, %s: tensor<16x2xi64>) {
  // expected-error @+1 {{'dsc.moe_combine' op expects expert slots of shape [E, C, 32] and element type 'f32', got 'tensor<20x32xf32>'}}
  %y = dsc.moe_combine %e, %s : tensor<20x32xf32>, tensor<16x2xi64> -> tensor<16x32xf32>
  return
}

// -----

func.func @moe_route_dot_result(%a: tensor<16x32xf32>, %b: tensor<4x5x32xf32>, %s: tensor<16x2xi64>) {
  // expected-error @+1 {{'dsc.moe_route_dot' op expects weights of the slots' shape and the tokens' element type, got 'tensor<16x1xf32>' for slots 'tensor<16x2xi64>' and tokens 'tensor<16x32xf32>'}}
  %g = dsc.moe_route_dot %a, %b, %s : tensor<16x32xf32>, tensor<4x5x32xf32>, tensor<16x2xi64> -> tensor<16x1xf32>
  return
}

//===----------------------------------------------------------------------===//
// Optimizer

// -----

func.func @adam_update_count(%w: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'dsc.adam_update' op has 1 params, 2 grads and 1 new params; they must be equal}}
  %a:3 = dsc.adam_update params(%w : tensor<4xf32>) grads(%w, %w : tensor<4xf32>, tensor<4xf32>)
      exp_avgs(%w : tensor<4xf32>) exp_avg_sqs(%w : tensor<4xf32>) copies()
      lr(%s : tensor<f32>) step(%s : tensor<f32>)
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0}
      -> (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>)
  return
}

// -----

func.func @adam_update_param_type(%w: tensor<4xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{'dsc.adam_update' op param #0 is 'tensor<4xbf16>'; the update is fp32 (a master weight in mixed precision)}}
  %a:3 = dsc.adam_update params(%w : tensor<4xbf16>) grads(%w : tensor<4xbf16>)
      exp_avgs(%w : tensor<4xbf16>) exp_avg_sqs(%w : tensor<4xbf16>) copies()
      lr(%s : tensor<f32>) step(%s : tensor<f32>)
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0}
      -> (tensor<4xbf16>), (tensor<4xbf16>), (tensor<4xbf16>)
  return
}

// -----

func.func @adam_update_grad_shape(%w: tensor<4xf32>, %g: tensor<5xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'dsc.adam_update' op grad #0 is 'tensor<5xf32>'; expected the shape of 'tensor<4xf32>' and the first grad's element type 'f32'}}
  %a:3 = dsc.adam_update params(%w : tensor<4xf32>) grads(%g : tensor<5xf32>)
      exp_avgs(%w : tensor<4xf32>) exp_avg_sqs(%w : tensor<4xf32>) copies()
      lr(%s : tensor<f32>) step(%s : tensor<f32>)
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0}
      -> (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>)
  return
}

// -----

func.func @adam_update_grad_types(%w: tensor<4xf32>, %g: tensor<4xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{'dsc.adam_update' op grad #1 is 'tensor<4xbf16>'; expected the shape of 'tensor<4xf32>' and the first grad's element type 'f32'}}
  %a:6 = dsc.adam_update params(%w, %w : tensor<4xf32>, tensor<4xf32>)
      grads(%w, %g : tensor<4xf32>, tensor<4xbf16>)
      exp_avgs(%w, %w : tensor<4xf32>, tensor<4xf32>)
      exp_avg_sqs(%w, %w : tensor<4xf32>, tensor<4xf32>) copies()
      lr(%s : tensor<f32>) step(%s : tensor<f32>)
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0}
      -> (tensor<4xf32>, tensor<4xf32>), (tensor<4xf32>, tensor<4xf32>),
         (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adam_update_state_type(%w: tensor<4xf32>, %m: tensor<2x2xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'dsc.adam_update' op exp_avgs #0 and its new value must have the type of param #0, 'tensor<4xf32>'}}
  %a:3 = dsc.adam_update params(%w : tensor<4xf32>) grads(%w : tensor<4xf32>)
      exp_avgs(%m : tensor<2x2xf32>) exp_avg_sqs(%w : tensor<4xf32>) copies()
      lr(%s : tensor<f32>) step(%s : tensor<f32>)
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0}
      -> (tensor<4xf32>), (tensor<2x2xf32>), (tensor<4xf32>)
  return
}

// -----

func.func @adam_update_copy_of_f32(%w: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'dsc.adam_update' op writes 16-bit copies, but its gradients are 'f32', not the copies' 16-bit type}}
  %a:4 = dsc.adam_update params(%w : tensor<4xf32>) grads(%w : tensor<4xf32>)
      exp_avgs(%w : tensor<4xf32>) exp_avg_sqs(%w : tensor<4xf32>) copies()
      lr(%s : tensor<f32>) step(%s : tensor<f32>)
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0}
      -> (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>) copies(tensor<4xbf16>)
  return
}

// -----

func.func @adam_update_copy_type(%w: tensor<4xf32>, %g: tensor<4xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{'dsc.adam_update' op new copy #0 must have type 'tensor<4xbf16>'}}
  %a:4 = dsc.adam_update params(%w : tensor<4xf32>) grads(%g : tensor<4xbf16>)
      exp_avgs(%w : tensor<4xf32>) exp_avg_sqs(%w : tensor<4xf32>) copies()
      lr(%s : tensor<f32>) step(%s : tensor<f32>)
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0}
      -> (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>) copies(tensor<4xf16>)
  return
}

// -----

func.func @adam_update_skip_without_copies(%w: tensor<4xf32>, %g: tensor<4xbf16>, %s: tensor<f32>, %skip: tensor<i1>) {
  // expected-error @+1 {{'dsc.adam_update' op has 0 copies; expected 1 (the old 16-bit values, given exactly when the op writes copies and may skip)}}
  %a:4 = dsc.adam_update params(%w : tensor<4xf32>) grads(%g : tensor<4xbf16>)
      exp_avgs(%w : tensor<4xf32>) exp_avg_sqs(%w : tensor<4xf32>) copies()
      lr(%s : tensor<f32>) step(%s : tensor<f32>) skip(%skip : tensor<i1>)
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0}
      -> (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>) copies(tensor<4xbf16>)
  return
}

// -----

func.func @adam_update_scalar(%w: tensor<4xf32>, %s: tensor<1xf32>) {
  // expected-error @+1 {{'dsc.adam_update' op lr must be a tensor<f32>, got 'tensor<1xf32>'}}
  %a:3 = dsc.adam_update params(%w : tensor<4xf32>) grads(%w : tensor<4xf32>)
      exp_avgs(%w : tensor<4xf32>) exp_avg_sqs(%w : tensor<4xf32>) copies()
      lr(%s : tensor<1xf32>) step(%s : tensor<1xf32>)
      {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.0}
      -> (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>)
  return
}

// -----

func.func @adam_update_beta(%w: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'dsc.adam_update' op beta2 1.000000e+00 is out of range}}
  %a:3 = dsc.adam_update params(%w : tensor<4xf32>) grads(%w : tensor<4xf32>)
      exp_avgs(%w : tensor<4xf32>) exp_avg_sqs(%w : tensor<4xf32>) copies()
      lr(%s : tensor<f32>) step(%s : tensor<f32>)
      {beta1 = 0.9, beta2 = 1.0, eps = 1.0e-8, weight_decay = 0.0}
      -> (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>)
  return
}

// -----

func.func @sgd_update_momentum(%w: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'dsc.sgd_update' op has 0 momentum_buffers and 0 new ones for 1 params}}
  %p = dsc.sgd_update params(%w : tensor<4xf32>) grads(%w : tensor<4xf32>)
      momentum_buffers() copies() lr(%s : tensor<f32>)
      {momentum = 0.9, weight_decay = 0.0} -> (tensor<4xf32>)
  return
}

// -----

func.func @sgd_update_no_momentum(%w: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'dsc.sgd_update' op has momentum buffers but momentum 0}}
  %p, %b = dsc.sgd_update params(%w : tensor<4xf32>) grads(%w : tensor<4xf32>)
      momentum_buffers(%w : tensor<4xf32>) copies() lr(%s : tensor<f32>)
      {momentum = 0.0, weight_decay = 0.0} -> (tensor<4xf32>) momentum_buffers(tensor<4xf32>)
  return
}

// -----

func.func @sgd_update_skip_type(%w: tensor<4xf32>, %s: tensor<f32>) {
  %k = dsc.constant dense<false> : tensor<2xi1>
  // expected-error @+1 {{'dsc.sgd_update' op skip must be a tensor<i1>, got 'tensor<2xi1>'}}
  %p = dsc.sgd_update params(%w : tensor<4xf32>) grads(%w : tensor<4xf32>)
      momentum_buffers() copies() lr(%s : tensor<f32>) skip(%k : tensor<2xi1>)
      {momentum = 0.0, weight_decay = 0.0} -> (tensor<4xf32>)
  return
}

// -----

func.func @sum_squares_types(%a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error @+1 {{'dsc.sum_squares' op input #1 is 'tensor<4xbf16>'; every input has the first one's element type 'f32'}}
  %s = dsc.sum_squares(%a, %b : tensor<4xf32>, tensor<4xbf16>) : tensor<f32>
  return
}

// -----

func.func @sum_squares_f64(%a: tensor<4xf64>) {
  // expected-error @+1 {{'dsc.sum_squares' op sums 'f64' tensors; expected f32, bf16 or f16}}
  %s = dsc.sum_squares(%a : tensor<4xf64>) : tensor<f32>
  return
}

// -----

func.func @sum_squares_result(%a: tensor<4xf32>) {
  // expected-error @+1 {{'dsc.sum_squares' op result must be a tensor<f32>, got 'tensor<1xf32>'}}
  %s = dsc.sum_squares(%a : tensor<4xf32>) : tensor<1xf32>
  return
}

// -----

module attributes {dsc.world_size = 4 : i64, dsc.expert_parallel_size = 2 : i64} {
  // expected-error @+1 {{'dsc.state' op @e partitions 'tensor<4x3xf32>' over the 2 ranks of an expert group, so it must be 'tensor<2x3xf32>', not 'tensor<4x3xf32>'}}
  dsc.state parameter @e {partition_of = array<i64: 4, 3>, partition_group = 1 : i32} : tensor<4x3xf32>
}

// -----

module attributes {dsc.world_size = 4 : i64, dsc.expert_parallel_size = 4 : i64} {
  // expected-error @+1 {{'dsc.state' op @e partitions 'tensor<6x3xf32>' over the 4 ranks of an expert group, which must divide its leading dimension}}
  dsc.state parameter @e {partition_of = array<i64: 6, 3>, partition_group = 1 : i32} : tensor<1x3xf32>
}

// -----

module attributes {dsc.world_size = 4 : i64} {
  // expected-error @+1 {{'dsc.state' op @e names a partition group but no partition_of}}
  dsc.state parameter @e {partition_group = 1 : i32} : tensor<4x3xf32>
}

// -----

module attributes {dsc.world_size = 8 : i64, dsc.expert_parallel_size = 2 : i64} {
  // expected-error @+1 {{'dsc.state' op @e partitions a rank's 6 elements of 'tensor<4x3xf32>' over the 4 ranks of an expert-data group, so it must be 'tensor<2xf32>', not 'tensor<2x3xf32>'}}
  dsc.state parameter @e {partition_of = array<i64: 4, 3>, partition_group = 2 : i32} : tensor<2x3xf32>
}

// -----

module attributes {dsc.world_size = 8 : i64, dsc.expert_parallel_size = 4 : i64} {
  // expected-error @+1 {{'dsc.state' op @e partitions 'tensor<6x3xf32>' over the 4 ranks of an expert group, which must divide its leading dimension}}
  dsc.state parameter @e {partition_of = array<i64: 6, 3>, partition_group = 2 : i32} : tensor<3xf32>
}

// -----

// Experts under tensor parallelism (DeepSpeed-TED) partitioned by ZeRO: the
// rank's experts of its tensor slice in shards over the expert-data group.
module attributes {dsc.world_size = 8 : i64, dsc.expert_parallel_size = 2 : i64, dsc.tensor_parallel_size = 2 : i64} {
  // expected-error @+1 {{'dsc.state' op @e has partition_blocks 6, which must be a multiple of its 4 experts and divide its 256 elements into 2 slices per block}}
  dsc.state optimizer @e {partition_of = array<i64: 4, 16, 4>, partition_group = 2 : i32, partition_blocks = 6 : i64} : tensor<32xf32>
}

// -----

module attributes {dsc.world_size = 8 : i64, dsc.expert_parallel_size = 2 : i64, dsc.tensor_parallel_size = 2 : i64} {
  // expected-error @+1 {{'dsc.state' op @e partitions a rank's 64 elements of 'tensor<4x16x4xf32>' over the 2 ranks of an expert-data group, so it must be 'tensor<32xf32>', not 'tensor<64xf32>'}}
  dsc.state optimizer @e {partition_of = array<i64: 4, 16, 4>, partition_group = 2 : i32, partition_blocks = 4 : i64} : tensor<64xf32>
}

// -----

module attributes {dsc.world_size = 8 : i64, dsc.expert_parallel_size = 2 : i64} {
  func.func @local_shard_expert_data(%x: tensor<8xf32>) {
    // expected-error @+1 {{'dsc.local_shard' op relates a whole of 8 elements to shards of 4, but its expert_data group has 4 ranks}}
    %0 = dsc.local_shard %x over expert_data : tensor<8xf32> -> tensor<4xf32>
    return
  }
}

// -----

func.func @two_boundaries(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = dsc.optimizer_boundary %a : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{appears twice in the graph: a step has one boundary}}
  %c = dsc.optimizer_boundary %b : (tensor<4xf32>) -> tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

func.func @boundary_types(%a: tensor<4xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{results must have the types of the operands, in order}}
  %b = dsc.optimizer_boundary %a : (tensor<4xf32>) -> tensor<3xf32>
  return %b : tensor<3xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Memory tiers
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'dsc.state' op @w is a gradient state: only optimizer state, master weights and parameters or partitioned teacher weights may live on the host}}
dsc.state gradient @w on host : tensor<8xf32>

// -----

// A teacher's weight on the host is a partition of it (offload_param).
// expected-error @+1 {{'dsc.state' op @teacher.w is a teacher state: only optimizer state, master weights and parameters or partitioned teacher weights may live on the host}}
dsc.state teacher @teacher.w on host : tensor<8xf32>

// -----

// So is one on NVMe (offload_param.device: nvme).
// expected-error @+1 {{'dsc.state' op @teacher.w is a teacher state: only optimizer state, master weights and parameters or partitioned teacher weights may live on the nvme}}
dsc.state teacher @teacher.w on nvme : tensor<8xf32>

// -----

// expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'tier' [device, host, nvme]}}
dsc.state optimizer @m on disk : tensor<8xf32>

// -----

// expected-error @+1 {{'dsc.state' op @b is a buffer state: only optimizer state, master weights and parameters or partitioned teacher weights may live on the nvme}}
dsc.state buffer @b on nvme : tensor<8xf32>

// -----

func.func @transfer_to_nvme(%g: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dsc.transfer' op moves a tensor to nvme, which holds states only; store it into a state on nvme}}
  %n = dsc.transfer %g to nvme : tensor<8xf32>
  return %n : tensor<8xf32>
}

// -----

dsc.state optimizer @m on nvme : tensor<8xf32>
func.func @store_device_into_nvme(%g: tensor<8xf32>) {
  %d = dsc.transfer %g to device : tensor<8xf32>
  // expected-error @+1 {{'dsc.store' op stores a tensor copied to the device into @m, which lives on the nvme}}
  dsc.store %d to @m : tensor<8xf32>
  return
}

// -----

func.func @transfer_twice(%g: tensor<8xf32>) -> tensor<8xf32> {
  %h = dsc.transfer %g to host : tensor<8xf32>
  // expected-error @+1 {{'dsc.transfer' op moves a tensor to the host, where the transfer before it put it}}
  %h2 = dsc.transfer %h to host : tensor<8xf32>
  %d = dsc.transfer %h2 to device : tensor<8xf32>
  return %d : tensor<8xf32>
}

// -----

func.func @transfer_type(%g: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dsc.transfer' op requires the same type for all operands and results}}
  %h = "dsc.transfer"(%g) {tier = 1 : i32} : (tensor<8xf32>) -> tensor<4xf32>
  %d = dsc.transfer %g to device : tensor<8xf32>
  return %d : tensor<8xf32>
}

// -----

dsc.state optimizer @m on host : tensor<8xf32>
func.func @store_wrong_tier(%g: tensor<8xf32>) {
  %d = dsc.transfer %g to device : tensor<8xf32>
  // expected-error @+1 {{'dsc.store' op stores a tensor copied to the device into @m, which lives on the host}}
  dsc.store %d to @m : tensor<8xf32>
  return
}

// -----

// ZeRO's partition over a data group (D = 4 / 2) of the whole: 12 / 2.
module attributes {dsc.world_size = 4 : i64, dsc.tensor_parallel_size = 2 : i64} {
  // expected-error @+1 {{'dsc.state' op @e partitions 12 elements of 'tensor<4x3xf32>' over the 2 ranks of a data group, so it must be 'tensor<6xf32>', not 'tensor<2x3xf32>'}}
  dsc.state parameter @e {partition_of = array<i64: 4, 3>, partition_group = 4 : i32} : tensor<2x3xf32>
}

// -----

// Of a tensor-parallel slice (partition_blocks): 24 / 2 / 3, padded to 4.
module attributes {dsc.world_size = 6 : i64, dsc.tensor_parallel_size = 2 : i64} {
  // expected-error @+1 {{'dsc.state' op @e partitions a rank's slice of 12 elements of 'tensor<4x6xf32>' over the 3 ranks of a data group, so it must be 'tensor<4xf32>', not 'tensor<8xf32>'}}
  dsc.state optimizer @e {partition_of = array<i64: 4, 6>, partition_group = 4 : i32, partition_blocks = 4 : i64} : tensor<8xf32>
}

// -----

module attributes {dsc.world_size = 6 : i64, dsc.tensor_parallel_size = 2 : i64} {
  // expected-error @+1 {{'dsc.state' op @e has partition_blocks 5, which must be positive and divide its 24 elements into 2 slices per block}}
  dsc.state optimizer @e {partition_of = array<i64: 4, 6>, partition_group = 4 : i32, partition_blocks = 5 : i64} : tensor<4xf32>
}

// -----

// Both forms, well formed.
module attributes {dsc.world_size = 6 : i64, dsc.tensor_parallel_size = 2 : i64} {
  dsc.state optimizer @whole {partition_of = array<i64: 4, 6>, partition_group = 4 : i32} : tensor<8xf32>
  dsc.state optimizer @slice {partition_of = array<i64: 4, 6>, partition_group = 4 : i32, partition_blocks = 4 : i64} : tensor<4xf32>
}

// -----

// A tensor-parallel slice divides one dimension by T.
module attributes {dsc.world_size = 4 : i64, dsc.tensor_parallel_size = 2 : i64} {
  // expected-error @+1 {{'dsc.state' op @e slices 'tensor<4x6xf32>' over the 2 ranks of a tensor group, so it must be its shape with one dimension divided by 2, not 'tensor<2x2xf32>'}}
  dsc.state parameter @e {partition_of = array<i64: 4, 6>, partition_group = 3 : i32} : tensor<2x2xf32>
}

// -----

module attributes {dsc.world_size = 4 : i64, dsc.tensor_parallel_size = 2 : i64} {
  // expected-error @+1 {{'dsc.state' op @e has partition_blocks 5, which must be positive and divide its 24 elements into 2 slices per block}}
  dsc.state parameter @e {partition_of = array<i64: 4, 6>, partition_group = 3 : i32, partition_blocks = 5 : i64} : tensor<4x3xf32>
}

// -----

module attributes {dsc.world_size = 4 : i64} {
  // expected-error @+1 {{'dsc.state' op @e has partition_blocks, which only a slice over a tensor group (or its partition over a data, an expert or an expert-data group) takes}}
  dsc.state parameter @e {partition_of = array<i64: 4, 6>, partition_blocks = 2 : i64} : tensor<12xf32>
}

// -----

// An expert's slice under tensor parallelism (TED): 4 experts over an
// expert group of 2 and a tensor group of 2, 3 blocks cannot hold whole
// experts.
module attributes {dsc.world_size = 4 : i64, dsc.tensor_parallel_size = 2 : i64, dsc.expert_parallel_size = 2 : i64} {
  // expected-error @+1 {{'dsc.state' op @e holds 'tensor<2x4x8xf32>' of 'tensor<4x8x8xf32>' in 3 blocks over an expert group of 2 and a tensor group of 2 ranks, which does not tile it (the blocks must be a multiple of its experts)}}
  dsc.state parameter @e {partition_of = array<i64: 4, 8, 8>, partition_group = 1 : i32, partition_blocks = 3 : i64} : tensor<2x4x8xf32>
}

// -----

module attributes {dsc.world_size = 4 : i64, dsc.tensor_parallel_size = 2 : i64, dsc.expert_parallel_size = 2 : i64} {
  // expected-error @+1 {{'dsc.state' op @e holds 'tensor<2x8x8xf32>' of 'tensor<4x8x8xf32>' in 4 blocks over an expert group of 2 and a tensor group of 2 ranks, which does not tile it (the blocks must be a multiple of its experts)}}
  dsc.state parameter @e {partition_of = array<i64: 4, 8, 8>, partition_group = 1 : i32, partition_blocks = 4 : i64} : tensor<2x8x8xf32>
}

// -----

module attributes {dsc.world_size = 4 : i64, dsc.tensor_parallel_size = 3 : i64} {
  func.func @tensor_size_indivisible(%x: tensor<4xf32>) {
    // expected-error @+1 {{'dsc.all_reduce' op dsc.tensor_parallel_size 3 does not divide dsc.world_size 4}}
    %0 = dsc.all_reduce %x over tensor : tensor<4xf32>
    return
  }
}

// -----

func.func @replicate_changes_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dsc.replicate' op requires the same type for all operands and results}}
  %0 = "dsc.replicate"(%x) : (tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

module attributes {dsc.world_size = 2 : i64} {
  func.func @pipeline_send_without_stages(%x: tensor<2x8xf32>) {
    // expected-error @+1 {{'dsc.pipeline_send' op needs a pipeline of at least 2 stages, but dsc.pipeline_parallel_size is 1}}
    %z = dsc.pipeline_send %x to next micro_batch 0 : tensor<2x8xf32>
    return
  }
}

// -----

module attributes {dsc.world_size = 4 : i64, dsc.pipeline_parallel_size = 3 : i64} {
  func.func @pipeline_stages_not_dividing() {
    // expected-error @+1 {{'dsc.pipeline_recv' op dsc.pipeline_parallel_size 3 times dsc.tensor_parallel_size 1 does not divide dsc.world_size 4}}
    %y = dsc.pipeline_recv from previous micro_batch 0 : tensor<2x8xf32>
    return
  }
}

// -----

module attributes {dsc.world_size = 2 : i64, dsc.pipeline_parallel_size = 2 : i64} {
  func.func @pipeline_recv_negative_micro_batch() {
    // expected-error @+1 {{'dsc.pipeline_recv' op names micro-batch -1, which must be non-negative}}
    %y = dsc.pipeline_recv from previous micro_batch -1 : tensor<2x8xf32>
    return
  }
}

// -----

module attributes {dsc.world_size = 4 : i64, dsc.pipeline_parallel_size = 4 : i64} {
  func.func @stages_over_data(%x: tensor<4xf32>) {
    // expected-error @+1 {{'dsc.all_reduce' op names stages, but sums over the data group: stages are those of the pipeline group}}
    %0 = dsc.all_reduce %x over data stages [0, 3] : tensor<4xf32>
    return
  }
}

// -----

module attributes {dsc.world_size = 4 : i64, dsc.pipeline_parallel_size = 4 : i64} {
  func.func @stages_unordered(%x: tensor<4xf32>) {
    // expected-error @+1 {{'dsc.all_reduce' op names stage 0 out of order or outside the 4 stages of the pipeline group}}
    %0 = dsc.all_reduce %x over pipeline stages [3, 0] : tensor<4xf32>
    return
  }
}

// -----

module attributes {dsc.world_size = 4 : i64, dsc.pipeline_parallel_size = 4 : i64} {
  func.func @stages_outside(%x: tensor<4xf32>) {
    // expected-error @+1 {{'dsc.all_reduce' op names stage 4 out of order or outside the 4 stages of the pipeline group}}
    %0 = dsc.all_reduce %x over pipeline stages [0, 4] : tensor<4xf32>
    return
  }
}

// -----

module attributes {dsc.world_size = 4 : i64, dsc.pipeline_parallel_size = 4 : i64} {
  func.func @stages_one(%x: tensor<4xf32>) {
    // expected-error @+1 {{'dsc.all_reduce' op names 1 stage; a sum needs at least 2}}
    %0 = dsc.all_reduce %x over pipeline stages [2] : tensor<4xf32>
    return
  }
}

// -----

module attributes {dsc.world_size = 4 : i64, dsc.pipeline_parallel_size = 4 : i64, dsc.pipeline_stage = 1 : i64} {
  func.func @stages_not_own(%x: tensor<4xf32>) {
    // expected-error @+1 {{'dsc.all_reduce' op sums over stages that leave out this module's stage 1}}
    %0 = dsc.all_reduce %x over pipeline stages [0, 3] : tensor<4xf32>
    return
  }
}

// -----

module attributes {dsc.world_size = 4 : i64, dsc.pipeline_parallel_size = 4 : i64} {
  func.func @stages_maximum(%x: tensor<4xf32>) {
    // expected-error @+1 {{'dsc.all_reduce' op takes the maximum over stages; only sums name them}}
    %0 = dsc.all_reduce %x over pipeline stages [0, 3] maximum : tensor<4xf32>
    return
  }
}
