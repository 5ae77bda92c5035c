// RUN: dsc-opt %s --dsc-data-parallel=world-size=2 --dsc-mixed-precision=precision=bf16 --dsc-autodiff | FileCheck %s

// The backward pass of the 16-bit graph: 16-bit cotangents, the tied
// parameter's two uses summed in bf16 (in PyTorch's order: the embedding's
// rows into zeros, then one addition), and each gradient of a bf16
// parameter all-reduced in bf16 (DeepSpeed's default
// communication_data_type) and returned in bf16: the optimizer widens it
// for the update of the fp32 master weight.
// CHECK-LABEL: func.func @tied
// CHECK-SAME: -> (tensor<f32> {dsc.output = "loss"},
// CHECK-SAME: tensor<8x4xbf16> {dsc.gradient_of = @emb, dsc.output = "grad.emb"},
// CHECK-SAME: tensor<8xbf16> {dsc.gradient_of = @b, dsc.output = "grad.b"})
// CHECK: %[[E:.*]] = dsc.load @emb : tensor<8x4xbf16>
// CHECK: %[[DB:.*]] = dsc.reduce_sum %{{.*}}, dims = [0] : tensor<3x8xbf16>
// CHECK: %[[DE:.*]] = dsc.add %{{.*}}, %{{.*}} : tensor<8x4xbf16>, tensor<8x4xbf16>
// CHECK: %[[RE:.*]] = dsc.all_reduce %[[DE]] : tensor<8x4xbf16>
// CHECK-NEXT: %[[RB:.*]] = dsc.all_reduce %[[DB]] : tensor<8xbf16>
// CHECK-NEXT: return %{{.*}}, %[[RE]], %[[RB]] : tensor<f32>, tensor<8x4xbf16>, tensor<8xbf16>
dsc.state parameter @emb : tensor<8x4xf32>
dsc.state parameter @b : tensor<8xf32>
func.func @tied(%ids: tensor<3xi64> {dsc.input = "ids"}) -> (tensor<f32> {dsc.output = "loss"}) {
  %e = dsc.load @emb : tensor<8x4xf32>
  %h = dsc.embedding %e, %ids : tensor<8x4xf32>, tensor<3xi64>
  %e2 = dsc.load @emb : tensor<8x4xf32>
  %b = dsc.load @b : tensor<8xf32>
  %logits = dsc.linear %h, %e2, %b : tensor<3x4xf32>, tensor<8x4xf32>, tensor<8xf32>
  %loss = dsc.cross_entropy %logits, %ids : tensor<3x8xf32>, tensor<3xi64>
  return %loss : tensor<f32>
}
