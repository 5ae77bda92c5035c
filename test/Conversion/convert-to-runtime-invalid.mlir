// RUN: dsc-opt %s --dsc-convert-to-runtime --split-input-file -verify-diagnostics

// The conversion follows the groups --dsc-form-kernels recorded, and
// rejects those one kernel cannot compute.
func.func @not_elementwise(%x: tensor<2x8xf32> {dsc.input = "x"}, %w: tensor<4x8xf32> {dsc.input = "w"})
    -> (tensor<2x4xf32> {dsc.output = "y"}) {
  // expected-error @+1 {{'dsc.linear' op is in a dsc.fusion_group but is not elementwise}}
  %h = dsc.linear %x, %w {dsc.fusion_group = 0 : i64} : tensor<2x8xf32>, tensor<4x8xf32>
  %t = dsc.tanh %h {dsc.fusion_group = 0 : i64} : tensor<2x4xf32>
  return %t : tensor<2x4xf32>
}

// -----

func.func @read_outside(%x: tensor<4xf32> {dsc.input = "x"}) -> (tensor<4xf32> {dsc.output = "y"}) {
  %n = dsc.neg %x {dsc.fusion_group = 0 : i64} : tensor<4xf32>
  // expected-error @+1 {{'dsc.exp' op reads a value of dsc.fusion_group 0, which is computed inside the group's kernel}}
  %e = dsc.exp %n : tensor<4xf32>
  %a = dsc.add %n, %e {dsc.fusion_group = 0 : i64} : tensor<4xf32>, tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

func.func @across_boundary(%g: tensor<4xf32> {dsc.input = "g"}) -> (tensor<4xf32> {dsc.output = "y"}) {
  // expected-error @+1 {{'dsc.neg' op is in dsc.fusion_group 0 with ops on the other side of the optimizer boundary}}
  %s = dsc.neg %g {dsc.fusion_group = 0 : i64} : tensor<4xf32>
  %b:1 = dsc.optimizer_boundary %g : (tensor<4xf32>) -> (tensor<4xf32>)
  %n = dsc.add %b#0, %s {dsc.fusion_group = 0 : i64} : tensor<4xf32>, tensor<4xf32>
  return %n : tensor<4xf32>
}

// -----

// An op after the boundary that does not read it would run once per
// optimizer step: --dsc-decompose-for-library orders the graph first.
func.func @unordered(%g: tensor<4xf32> {dsc.input = "g"}) -> (tensor<4xf32> {dsc.output = "y"}, tensor<4xf32> {dsc.output = "z"}) {
  %b:1 = dsc.optimizer_boundary %g : (tensor<4xf32>) -> (tensor<4xf32>)
  // expected-error @+1 {{'dsc.neg' op follows the dsc.optimizer_boundary but does not read it, so it would run once per optimizer step only; --dsc-decompose-for-library moves it before the boundary}}
  %s = dsc.neg %g : tensor<4xf32>
  return %b#0, %s : tensor<4xf32>, tensor<4xf32>
}
