// RUN: dsc-opt %s --split-input-file --dsc-mixed-precision -verify-diagnostics
// RUN: not dsc-opt %s --split-input-file --dsc-mixed-precision=precision=fp8 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: not dsc-opt %s --split-input-file --dsc-mixed-precision=precision=f16 2>&1 | FileCheck %s --check-prefix=SPELLING

// OPTION: error: precision must be fp32, bf16 or fp16, got 'fp8'
// SPELLING: error: precision must be fp32, bf16 or fp16, got 'f16'

// After --dsc-autodiff the gradients would mix fp32 and 16-bit values.
dsc.state parameter @w : tensor<4xf32>
// expected-error @+1 {{already returns gradients: --dsc-mixed-precision rewrites the forward graph and must run before --dsc-autodiff}}
func.func @differentiated() -> (tensor<f32> {dsc.output = "loss"},
                                tensor<4xf32> {dsc.output = "grad.w", dsc.gradient_of = @w}) {
  %w = dsc.load @w : tensor<4xf32>
  %loss = dsc.reduce_sum %w, dims = [0] : tensor<4xf32>
  return %loss, %w : tensor<f32>, tensor<4xf32>
}

// -----

// After --dsc-optimizer the updates are written back as fp32 states.
dsc.state parameter @w : tensor<4xf32>
func.func @updated() -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @w : tensor<4xf32>
  %loss = dsc.reduce_sum %w, dims = [0] : tensor<4xf32>
  %n = dsc.neg %w : tensor<4xf32>
  // expected-error @+1 {{--dsc-mixed-precision rewrites the forward graph and must run before --dsc-optimizer}}
  dsc.store %n to @w : tensor<4xf32>
  return %loss : tensor<f32>
}

// -----

// The pass runs once: master weights mean it has run.
dsc.state parameter @w : tensor<4xbf16>
// expected-error @+1 {{is a master weight already: --dsc-mixed-precision runs once}}
dsc.state master @w.master : tensor<4xf32>

// -----

// A parameter's master weight takes the name `<param>.master`.
// expected-error @+1 {{its master weight 'w.master' would shadow a symbol of that name}}
dsc.state parameter @w : tensor<4xf32>
dsc.state buffer @w.master : tensor<4xf32>
