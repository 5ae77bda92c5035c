// RUN: dsc-opt %s --dsc-print-summary 2>%t.summary | FileCheck %s --check-prefix=IR
// RUN: FileCheck %s --input-file=%t.summary

// The pass leaves the IR as it was.
// IR: dsc.state parameter @fc.weight : tensor<4x8xf32>
// IR: dsc.linear

// CHECK-LABEL: == dsc module summary ==
// CHECK-NEXT: state (3):
// CHECK-NEXT:   fc.weight  parameter  tensor<4x8xf32>{{ +}}32
// CHECK-NEXT:   fc.bias    parameter  tensor<4xbf16>{{ +}}4
// CHECK-NEXT:   mask       buffer     tensor<8x8xi1>{{ +}}64
// CHECK-NEXT: parameters: 36 (36, 136 B)
// CHECK-NEXT: buffers: 64 (64, 64 B)
// CHECK-NEXT: graph @forward:
// CHECK-NEXT:   input  x : tensor<2x8xf32>
// CHECK-NEXT:   input  y : tensor<2xi64>
// CHECK-NEXT:   output loss : tensor<f32>
// CHECK-NEXT: ops (10):
// CHECK-NEXT:   dsc.state                 3
// CHECK-NEXT:   dsc.load                  2
// CHECK-NEXT:   dsc.convert               1
// CHECK-NEXT:   dsc.cross_entropy         1
// CHECK-NEXT:   dsc.linear                1
// CHECK-NEXT:   func.func                 1
// CHECK-NEXT:   func.return               1

dsc.state parameter @"fc.weight" : tensor<4x8xf32>
dsc.state parameter @"fc.bias" : tensor<4xbf16>
dsc.state buffer @"mask" : tensor<8x8xi1>
func.func @forward(%x: tensor<2x8xf32> {dsc.input = "x"},
                   %y: tensor<2xi64> {dsc.input = "y"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %w = dsc.load @"fc.weight" : tensor<4x8xf32>
  %b = dsc.load @"fc.bias" : tensor<4xbf16>
  %bf = dsc.convert %b : tensor<4xbf16> to tensor<4xf32>
  %h = dsc.linear %x, %w, %bf : tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>
  %loss = dsc.cross_entropy %h, %y : tensor<2x4xf32>, tensor<2xi64>
  return %loss : tensor<f32>
}
