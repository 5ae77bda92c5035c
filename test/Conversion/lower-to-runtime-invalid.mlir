// RUN: dsc-opt %s --dsc-lower-to-runtime --split-input-file -verify-diagnostics

// expected-error @+1 {{expected one graph function to lower, found 2}}
module {
  func.func @a() { return }
  func.func @b() { return }
}

// -----

func.func @forward(%x: tensor<4xf32> {dsc.input = "x"}) -> tensor<4xf32> {
  %c = arith.constant dense<1.0> : tensor<4xf32>
  // expected-error @-1 {{cannot lower 'arith.constant' to the runtime}}
  return %c : tensor<4xf32>
}
